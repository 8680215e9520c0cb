/* learner.c: the two learners behind train/learner.h. The CPU one is the
 * replay buffer plus the oneDNN trainer; the CUDA one lives in
 * train/cuda/gpu_learner.c and is reached through learner_cuda_*. */
#include "train/learner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/replay.h"
#include "train/learner_internal.h"

struct learner {
	learner_options opt;
	/* cpu */
	trainer *t;
	replay_buffer *rb;
	train_batch *batch;
	/* cuda */
	learner_cuda *cuda;
	char what[256];
	char err[512];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

learner_options learner_options_default(void)
{
	learner_options o;
	memset(&o, 0, sizeof(o));
	o.train = train_options_default();
	o.window = 100000;
	o.backend = LEARNER_CPU;
	o.precision = LEARNER_FP16;
	return o;
}

const char *learner_precision_name(learner_precision p)
{
	return p == LEARNER_FP16 ? "fp16" : p == LEARNER_BF16 ? "bf16" : "fp32";
}

bool learner_precision_from_name(const char *s, learner_precision *out)
{
	static const char *const names[] = { "fp32", "fp16", "bf16" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(s, names[i])) {
			*out = (learner_precision)i;
			return true;
		}
	return false;
}

learner *learner_new(const nn_net *net, const learner_options *o, char *err, size_t errlen)
{
	learner *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->opt = *o;
	if (o->backend == LEARNER_CUDA) {
		l->cuda = learner_cuda_new(net, o, l->what, sizeof(l->what), err, errlen);
		if (!l->cuda)
			goto fail;
		return l;
	}
	l->t = trainer_new(net, &o->train, err, errlen);
	if (!l->t)
		goto fail;
	l->rb = replay_new(o->window);
	l->batch = train_batch_new(&net->arch, o->train.batch, net->arch.value_outputs == 3);
	if (!l->rb || !l->batch) {
		snprintf(err, errlen, "out of memory for the window or the batch");
		goto fail;
	}
	snprintf(l->what, sizeof(l->what), "cpu fp32");
	return l;
fail:
	learner_free(l);
	return NULL;
}

void learner_free(learner *l)
{
	if (!l)
		return;
	learner_cuda_free(l->cuda);
	train_batch_free(l->batch);
	replay_free(l->rb);
	trainer_free(l->t);
	free(l);
}

int learner_add_game(learner *l, const game_record *r)
{
	if (l->cuda)
		return learner_cuda_add_game(l->cuda, r);
	return replay_add_game(l->rb, r);
}

int64_t learner_positions(const learner *l)
{
	return l->cuda ? learner_cuda_positions(l->cuda) : replay_positions(l->rb);
}

int learner_step(learner *l, int global, int first, train_stats *st)
{
	if (l->cuda)
		return learner_cuda_step(l->cuda, global, first, st);
	double t0 = now_s();
	/* The same draw on every rank, from the trainer's RNG (in the
	 * checkpoint, so a resume samples as it would have). */
	uint64_t rng = trainer_random(l->t);
	if (replay_sample_share(l->rb, &rng, trainer_net(l->t)->arch.encoding, global, first,
				l->opt.train.batch, l->batch) != 0) {
		snprintf(l->err, sizeof(l->err), "sampling the window failed (%lld positions)",
			 (long long)replay_positions(l->rb));
		return -1;
	}
	double t1 = now_s();
	if (trainer_step(l->t, l->batch, st) != 0) {
		snprintf(l->err, sizeof(l->err), "%s", trainer_error(l->t));
		return -1;
	}
	st->data_seconds = t1 - t0;
	st->compute_seconds = now_s() - t1 - st->comm_seconds;
	return 0;
}

nn_net *learner_net(learner *l)
{
	return l->cuda ? learner_cuda_net(l->cuda) : trainer_net(l->t);
}

int64_t learner_steps(const learner *l)
{
	return l->cuda ? learner_cuda_steps(l->cuda) : trainer_steps(l->t);
}

void learner_set_comm(learner *l, comm *c)
{
	if (l->cuda)
		learner_cuda_set_comm(l->cuda, c);
	else
		trainer_set_comm(l->t, c);
}

int learner_broadcast(learner *l, int root)
{
	if (l->cuda)
		return learner_cuda_broadcast(l->cuda, root);
	if (trainer_broadcast(l->t, root) != 0) {
		snprintf(l->err, sizeof(l->err), "%s", trainer_error(l->t));
		return -1;
	}
	return 0;
}

int learner_checkpoint_save(learner *l, const char *path, char *err, size_t errlen)
{
	if (l->cuda)
		return learner_cuda_checkpoint_save(l->cuda, path, err, errlen);
	return trainer_checkpoint_save(l->t, path, NULL, 0, err, errlen);
}

int learner_checkpoint_load(learner *l, const char *path, char *err, size_t errlen)
{
	if (l->cuda)
		return learner_cuda_checkpoint_load(l->cuda, path, err, errlen);
	return trainer_checkpoint_load(l->t, path, NULL, NULL, err, errlen);
}

int learner_checkpoint_world(const learner *l)
{
	return l->cuda ? learner_cuda_checkpoint_world(l->cuda) : trainer_checkpoint_world(l->t);
}

const char *learner_describe(const learner *l)
{
	return l->what;
}

const char *learner_error(const learner *l)
{
	return l->cuda ? learner_cuda_error(l->cuda) : l->err;
}
