/* gpu_learner.c: the CUDA learner behind train/learner.h: the window in
 * device memory (gpu_replay.h) feeding the GPU trainer (gpu_train.h) on
 * one device, with, over several ranks, the gradient all-reduced in
 * buckets while backward runs (grad_reducer.h).
 *
 * A step: the trainer's RNG gives the draw's seed (every rank the same
 * one, as the CPU learner's sampling does), the replay buffer draws the
 * global batch and expands this rank's share on the trainer's stream, and
 * the trainer steps on it. The data time is the expansion's on the device
 * (events around it), not the enqueue's on the host. */
#include "train/learner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <cuda_runtime_api.h>
#include "engine/clock.h"

#include "nn/cuda/cuda.h"
#include "train/cuda/gpu_replay.h"
#include "train/cuda/gpu_train.h"
#include "train/cuda/grad_reducer.h"

typedef struct gpu_learner {
	gpu_trainer *t;
	gpu_replay *gr;
	gpu_batch b;
	comm *c;              /* NCCL comm of several ranks, or NULL */
	grad_reducer *red;    /* its bucketed all-reduce */
	int device;
	int ck_world;         /* world size of the checkpoint loaded */
	cudaEvent_t ev[2];    /* around the batch expansion */
	char err[512];
} gpu_learner;

static void gpu_destroy(void *ctx);

static void *gpu_create(const nn_net *net, const learner_options *o, char *what, size_t whatlen,
			char *err, size_t errlen)
{
	if (nn_cuda_device_count() <= 0) {
		snprintf(err, errlen, "no CUDA device");
		return NULL;
	}
	gpu_learner *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->device = o->device;
	gpu_train_options g = gpu_train_options_default();
	g.device = o->device;
	g.precision = o->precision;
	g.micro_batch = o->micro_batch;
	nn_dtype dt = o->precision;
	l->t = gpu_trainer_new(net, &o->train, &g, err, errlen);
	if (!l->t)
		goto fail;
	l->gr = gpu_replay_new(&net->arch, o->window, o->device, err, errlen);
	if (!l->gr)
		goto fail;
	gpu_replay_set_value_target(l->gr, o->value_q_weight, o->value_lambda, o->value_cut);
	if (cudaSetDevice(o->device) != cudaSuccess ||
	    gpu_batch_alloc(&l->b, o->train.batch, &net->arch, dt, net->arch.value_outputs == 3, err,
			    errlen) != 0)
		goto fail;
	if (cudaEventCreate(&l->ev[0]) != cudaSuccess || cudaEventCreate(&l->ev[1]) != cudaSuccess) {
		snprintf(err, errlen, "cudaEventCreate failed");
		goto fail;
	}
	char name[128];
	nn_cuda_device_name(o->device, name, sizeof(name));
	snprintf(what, whatlen, "cuda %s on GPU %d (%s), micro-batch %d, window %.0f MB on the device",
		 nn_dtype_name(o->precision), o->device, name,
		 gpu_trainer_micro_batch(l->t), gpu_replay_device_bytes(l->gr) / 1e6);
	return l;
fail:
	gpu_destroy(l);
	return NULL;
}

static void gpu_destroy(void *ctx)
{
	gpu_learner *l = ctx;
	if (!l)
		return;
	if (l->t)
		cudaStreamSynchronize((cudaStream_t)gpu_trainer_stream(l->t));
	grad_reducer_free(l->red);
	gpu_batch_free(&l->b);
	gpu_replay_free(l->gr);
	gpu_trainer_free(l->t);
	for (int i = 0; i < 2; i++)
		if (l->ev[i])
			cudaEventDestroy(l->ev[i]);
	free(l);
}

static int gpu_add_game(void *ctx, const game_record *r)
{
	gpu_learner *l = ctx;
	return gpu_replay_add_game(l->gr, r, l->err, sizeof(l->err));
}

static int64_t gpu_positions(const void *ctx)
{
	const gpu_learner *l = ctx;
	return gpu_replay_positions(l->gr);
}

static int gpu_step(void *ctx, int global, int first, train_stats *st)
{
	gpu_learner *l = ctx;
	double t0 = clock_now();
	cudaStream_t s = (cudaStream_t)gpu_trainer_stream(l->t);
	uint64_t seed = gpu_trainer_random(l->t);
	if (cudaSetDevice(l->device) != cudaSuccess || cudaEventRecord(l->ev[0], s) != cudaSuccess) {
		snprintf(l->err, sizeof(l->err), "cudaEventRecord failed");
		return -1;
	}
	if (gpu_replay_sample(l->gr, seed, (uint64_t)gpu_trainer_steps(l->t), global, first, l->b.cap,
			      &l->b, s, l->err, sizeof(l->err)) != 0)
		return -1;
	cudaEventRecord(l->ev[1], s);
	if (gpu_trainer_step(l->t, &l->b, st) != 0) {
		snprintf(l->err, sizeof(l->err), "%s%s%s", gpu_trainer_error(l->t),
			 l->red ? "; reducer: " : "", l->red ? grad_reducer_error(l->red) : "");
		return -1;
	}
	float ms = 0;
	if (cudaEventElapsedTime(&ms, l->ev[0], l->ev[1]) == cudaSuccess)
		st->data_seconds = ms / 1e3;
	st->comm_seconds = 0;
	if (l->red) {
		grad_reducer_stats rs;
		if (grad_reducer_step_stats(l->red, &rs) == 0 && rs.timed)
			st->comm_seconds = rs.exposed_seconds;
	}
	st->compute_seconds = clock_now() - t0 - st->data_seconds - st->comm_seconds;
	return 0;
}

static nn_net *gpu_net(void *ctx)
{
	gpu_learner *l = ctx;
	nn_net *n = gpu_trainer_net(l->t);
	if (!n)
		snprintf(l->err, sizeof(l->err), "%s", gpu_trainer_error(l->t));
	return n;
}

static int64_t gpu_steps(const void *ctx)
{
	const gpu_learner *l = ctx;
	return gpu_trainer_steps(l->t);
}

static void gpu_set_comm(void *ctx, comm *c)
{
	gpu_learner *l = ctx;
	grad_reducer_free(l->red);
	l->red = NULL;
	l->c = c && comm_size(c) > 1 ? c : NULL;
	gpu_trainer_set_hooks(l->t, NULL);
	if (!l->c)
		return;
	nn_net *n = gpu_trainer_net(l->t);
	if (!n)
		return;
	l->red = grad_reducer_new(l->c, gpu_trainer_grad_device(l->t),
				  n->n_floats + GPU_TRAIN_TAIL, 0, l->err, sizeof(l->err));
	if (l->red) {
		gpu_grad_hooks h = grad_reducer_hooks(l->red);
		gpu_trainer_set_hooks(l->t, &h);
	}
}

static int gpu_broadcast(void *ctx, int root)
{
	gpu_learner *l = ctx;
	if (!l->c)
		return 0;
	if (!l->red)
		return -1; /* set_comm failed: l->err says why */
	if (gpu_trainer_broadcast(l->t, l->c, root) != 0) {
		snprintf(l->err, sizeof(l->err), "%s", gpu_trainer_error(l->t));
		return -1;
	}
	return 0;
}

static int gpu_checkpoint_save(void *ctx, const char *path, char *err, size_t errlen)
{
	gpu_learner *l = ctx;
	return gpu_trainer_checkpoint_save(l->t, path, l->c ? comm_size(l->c) : 1, NULL, 0, err,
					   errlen);
}

static int gpu_checkpoint_load(void *ctx, const char *path, char *err, size_t errlen)
{
	gpu_learner *l = ctx;
	int world = 1;
	if (gpu_trainer_checkpoint_load(l->t, path, NULL, NULL, &world, err, errlen) != 0)
		return -1;
	l->ck_world = world;
	return 0;
}

static int gpu_checkpoint_world(const void *ctx)
{
	const gpu_learner *l = ctx;
	return l->ck_world;
}

/* The window on the device is a ring of options.window positions, drawn
 * from uniformly: it does not narrow. */
static int gpu_set_window(void *ctx, int64_t window)
{
	gpu_learner *l = ctx;
	snprintf(l->err, sizeof(l->err), "the CUDA learner's window is fixed (--window)");
	return -1;
}

/* The CUDA trainer keeps its running statistics by momentum alone. */
static int gpu_recompute_bn(void *ctx, int batches)
{
	gpu_learner *l = ctx;
	snprintf(l->err, sizeof(l->err),
		 "the CUDA learner does not recompute batch-norm statistics (momentum only)");
	return -1;
}

static const char *gpu_error(const void *ctx)
{
	const gpu_learner *l = ctx;
	return l->err;
}

const learner_ops learner_cuda = {
	.name = "cuda",
	.create = gpu_create,
	.destroy = gpu_destroy,
	.add_game = gpu_add_game,
	.positions = gpu_positions,
	.step = gpu_step,
	.set_window = gpu_set_window,
	.recompute_bn = gpu_recompute_bn,
	.net = gpu_net,
	.steps = gpu_steps,
	.set_comm = gpu_set_comm,
	.broadcast = gpu_broadcast,
	.checkpoint_save = gpu_checkpoint_save,
	.checkpoint_load = gpu_checkpoint_load,
	.checkpoint_world = gpu_checkpoint_world,
	.error = gpu_error,
};

#else

/* Without CUDA and cuDNN the table refuses at create, so no other entry
 * is ever reached. */
static void *gpu_refuse(const nn_net *net, const learner_options *o, char *what, size_t whatlen,
			char *err, size_t errlen)
{
	snprintf(err, errlen, "this sente was built without the CUDA learner (needs nvcc and cuDNN)");
	return NULL;
}

const learner_ops learner_cuda = {
	.name = "cuda",
	.create = gpu_refuse,
};

#endif
