/* cpu_learner.c: the CPU learner (learner_cpu in learner.h): the window in
 * RAM as game records (replay.h) and the oneDNN trainer (trainer.h). A step
 * draws the global batch from the trainer's RNG (in the checkpoint, so a
 * resume samples as it would have), rebuilds and encodes this rank's share
 * on the host, and trains on it. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/clock.h"
#include "train/learner.h"
#include "train/replay.h"

typedef struct cpu_learner {
	trainer *t;         /* the oneDNN trainer */
	replay_buffer *rb;  /* the window */
	train_batch *batch; /* this rank's share, encoded */
	int share;          /* positions per step on this rank */
	char err[512];      /* the last failure */
} cpu_learner;

static void cpu_destroy(void *ctx)
{
	cpu_learner *l = ctx;
	if (!l)
		return;
	train_batch_free(l->batch);
	replay_free(l->rb);
	trainer_free(l->t);
	free(l);
}

static void *cpu_create(const nn_net *net, const learner_options *o, char *what, size_t whatlen,
			char *err, size_t errlen)
{
	cpu_learner *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->share = o->train.batch;
	/* learner_options.precision is the CUDA learner's too, fp16 by
	 * default: the CPU takes bf16 from it, else trains fp32. */
	train_options to = o->train;
	to.precision = o->precision == NN_DTYPE_BF16 ? NN_DTYPE_BF16 : NN_DTYPE_FP32;
	l->t = trainer_new(net, &to, err, errlen);
	if (!l->t)
		goto fail;
	l->rb = replay_new(o->window);
	l->batch = train_batch_new(&net->arch, o->train.batch, net->arch.value_outputs == 3);
	if (!l->rb || !l->batch) {
		snprintf(err, errlen, "out of memory for the window or the batch");
		goto fail;
	}
	replay_set_value_target(l->rb, o->value_q_weight, o->value_lambda, o->value_cut);
	replay_set_reuse_cap(l->rb, o->reuse_cap);
	snprintf(what, whatlen, "cpu %s", nn_dtype_name(to.precision));
	return l;
fail:
	cpu_destroy(l);
	return NULL;
}

static int cpu_add_game(void *ctx, const game_record *r)
{
	cpu_learner *l = ctx;
	return replay_add_game(l->rb, r);
}

static int64_t cpu_positions(const void *ctx)
{
	const cpu_learner *l = ctx;
	return replay_positions(l->rb);
}

static int cpu_step(void *ctx, int global, int first, train_stats *st)
{
	cpu_learner *l = ctx;
	double t0 = clock_now();
	uint64_t rng = trainer_random(l->t);
	int rc = replay_sample_share(l->rb, &rng, trainer_net(l->t)->arch.encoding, global, first,
				     l->share, l->batch);
	if (rc == REPLAY_USED_UP) {
		snprintf(l->err, sizeof(l->err), "the reuse cap has retired every position");
		return LEARNER_USED_UP;
	}
	if (rc != 0) {
		snprintf(l->err, sizeof(l->err), "sampling the window failed (%lld positions)",
			 (long long)replay_positions(l->rb));
		return -1;
	}
	double t1 = clock_now();
	if (trainer_step(l->t, l->batch, st) != 0) {
		snprintf(l->err, sizeof(l->err), "%s", trainer_error(l->t));
		return -1;
	}
	st->data_seconds = t1 - t0;
	st->compute_seconds = clock_now() - t1 - st->comm_seconds;
	return 0;
}

static int cpu_set_window(void *ctx, int64_t window)
{
	cpu_learner *l = ctx;
	replay_set_window(l->rb, window);
	return 0;
}

static int cpu_recompute_bn(void *ctx, int batches)
{
	cpu_learner *l = ctx;
	/* Its own numbers, so training's draws stay as they would be. */
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(trainer_steps(l->t) + 1);
	if (trainer_bn_begin(l->t) != 0)
		goto fail;
	for (int k = 0; k < batches; k++) {
		if (replay_sample_uncounted(l->rb, &rng, trainer_net(l->t)->arch.encoding, l->share,
					    l->batch) != 0) {
			snprintf(l->err, sizeof(l->err), "sampling the window failed (%lld positions)",
				 (long long)replay_positions(l->rb));
			return -1;
		}
		if (trainer_bn_add(l->t, l->batch) != 0)
			goto fail;
	}
	if (trainer_bn_commit(l->t) != 0)
		goto fail;
	return 0;
fail:
	snprintf(l->err, sizeof(l->err), "%s", trainer_error(l->t));
	return -1;
}

static nn_net *cpu_net(void *ctx)
{
	cpu_learner *l = ctx;
	return trainer_net(l->t);
}

static int64_t cpu_steps(const void *ctx)
{
	const cpu_learner *l = ctx;
	return trainer_steps(l->t);
}

static void cpu_set_comm(void *ctx, comm *c)
{
	cpu_learner *l = ctx;
	trainer_set_comm(l->t, c);
}

static int cpu_broadcast(void *ctx, int root)
{
	cpu_learner *l = ctx;
	if (trainer_broadcast(l->t, root) != 0) {
		snprintf(l->err, sizeof(l->err), "%s", trainer_error(l->t));
		return -1;
	}
	return 0;
}

static int cpu_checkpoint_save(void *ctx, const char *path, char *err, size_t errlen)
{
	cpu_learner *l = ctx;
	return trainer_checkpoint_save(l->t, path, NULL, 0, err, errlen);
}

static int cpu_checkpoint_load(void *ctx, const char *path, char *err, size_t errlen)
{
	cpu_learner *l = ctx;
	return trainer_checkpoint_load(l->t, path, NULL, NULL, err, errlen);
}

static int cpu_checkpoint_world(const void *ctx)
{
	const cpu_learner *l = ctx;
	return trainer_checkpoint_world(l->t);
}

static const char *cpu_error(const void *ctx)
{
	const cpu_learner *l = ctx;
	return l->err;
}

const learner_ops learner_cpu = {
	.name = "cpu",
	.create = cpu_create,
	.destroy = cpu_destroy,
	.add_game = cpu_add_game,
	.positions = cpu_positions,
	.step = cpu_step,
	.set_window = cpu_set_window,
	.recompute_bn = cpu_recompute_bn,
	.net = cpu_net,
	.steps = cpu_steps,
	.set_comm = cpu_set_comm,
	.broadcast = cpu_broadcast,
	.checkpoint_save = cpu_checkpoint_save,
	.checkpoint_load = cpu_checkpoint_load,
	.checkpoint_world = cpu_checkpoint_world,
	.error = cpu_error,
};
