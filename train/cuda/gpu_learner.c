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
#include "train/learner_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <cuda_runtime_api.h>
#include <time.h>

#include "nn/cuda/cuda.h"
#include "train/cuda/gpu_replay.h"
#include "train/cuda/gpu_train.h"
#include "train/cuda/grad_reducer.h"

struct learner_cuda {
	gpu_trainer *t;
	gpu_replay *gr;
	gpu_batch b;
	comm *c;              /* NCCL comm of several ranks, or NULL */
	grad_reducer *red;    /* its bucketed all-reduce */
	int device;
	int ck_world;         /* world size of the checkpoint loaded */
	cudaEvent_t ev[2];    /* around the batch expansion */
	char err[512];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

learner_cuda *learner_cuda_new(const nn_net *net, const learner_options *o, char *what,
			       size_t whatlen, char *err, size_t errlen)
{
	if (nn_cuda_device_count() <= 0) {
		snprintf(err, errlen, "no CUDA device");
		return NULL;
	}
	learner_cuda *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->device = o->device;
	gpu_train_options g = gpu_train_options_default();
	g.device = o->device;
	g.precision = o->precision == LEARNER_FP16   ? NN_DTYPE_FP16
		      : o->precision == LEARNER_BF16 ? NN_DTYPE_BF16
						     : NN_DTYPE_FP32;
	g.micro_batch = o->micro_batch;
	nn_dtype dt = o->precision == LEARNER_FP16   ? NN_DTYPE_FP16
		       : o->precision == LEARNER_BF16 ? NN_DTYPE_BF16
						      : NN_DTYPE_FP32;
	l->t = gpu_trainer_new(net, &o->train, &g, err, errlen);
	if (!l->t)
		goto fail;
	l->gr = gpu_replay_new(&net->arch, o->window, o->device, err, errlen);
	if (!l->gr)
		goto fail;
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
		 learner_precision_name(o->precision), o->device, name,
		 gpu_trainer_micro_batch(l->t), gpu_replay_device_bytes(l->gr) / 1e6);
	return l;
fail:
	learner_cuda_free(l);
	return NULL;
}

void learner_cuda_free(learner_cuda *l)
{
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

int learner_cuda_add_game(learner_cuda *l, const game_record *r)
{
	return gpu_replay_add_game(l->gr, r, l->err, sizeof(l->err));
}

int64_t learner_cuda_positions(const learner_cuda *l)
{
	return gpu_replay_positions(l->gr);
}

int learner_cuda_step(learner_cuda *l, int global, int first, train_stats *st)
{
	double t0 = now_s();
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
	st->compute_seconds = now_s() - t0 - st->data_seconds - st->comm_seconds;
	return 0;
}

nn_net *learner_cuda_net(learner_cuda *l)
{
	nn_net *n = gpu_trainer_net(l->t);
	if (!n)
		snprintf(l->err, sizeof(l->err), "%s", gpu_trainer_error(l->t));
	return n;
}

int64_t learner_cuda_steps(const learner_cuda *l)
{
	return gpu_trainer_steps(l->t);
}

void learner_cuda_set_comm(learner_cuda *l, comm *c)
{
	grad_reducer_free(l->red);
	l->red = NULL;
	l->c = c && comm_size(c) > 1 ? c : NULL;
	gpu_trainer_set_hooks(l->t, NULL);
	if (!l->c)
		return;
	nn_net *n = gpu_trainer_net(l->t);
	if (!n)
		return;
	l->red = grad_reducer_new(l->c, gpu_trainer_grad_device(l->t), n->n_floats + 4, 0, l->err,
				  sizeof(l->err));
	if (l->red) {
		gpu_grad_hooks h = grad_reducer_hooks(l->red);
		gpu_trainer_set_hooks(l->t, &h);
	}
}

int learner_cuda_broadcast(learner_cuda *l, int root)
{
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

int learner_cuda_checkpoint_save(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	return gpu_trainer_checkpoint_save(l->t, path, l->c ? comm_size(l->c) : 1, NULL, 0, err,
					   errlen);
}

int learner_cuda_checkpoint_load(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	int world = 1;
	if (gpu_trainer_checkpoint_load(l->t, path, NULL, NULL, &world, err, errlen) != 0)
		return -1;
	l->ck_world = world;
	return 0;
}

int learner_cuda_checkpoint_world(const learner_cuda *l)
{
	return l->ck_world;
}

const char *learner_cuda_error(const learner_cuda *l)
{
	return l->err;
}

#else

#define NOT_BUILT "this sente was built without the CUDA learner (needs nvcc and cuDNN)"

learner_cuda *learner_cuda_new(const nn_net *net, const learner_options *o, char *what,
			       size_t whatlen, char *err, size_t errlen)
{
	snprintf(err, errlen, NOT_BUILT);
	return NULL;
}

void learner_cuda_free(learner_cuda *l) { (void)l; }
int learner_cuda_add_game(learner_cuda *l, const game_record *r) { return -1; }
int64_t learner_cuda_positions(const learner_cuda *l) { return 0; }
int learner_cuda_step(learner_cuda *l, int global, int first, train_stats *st) { return -1; }
nn_net *learner_cuda_net(learner_cuda *l) { return NULL; }
int64_t learner_cuda_steps(const learner_cuda *l) { return 0; }
void learner_cuda_set_comm(learner_cuda *l, comm *c) { (void)l; }
int learner_cuda_broadcast(learner_cuda *l, int root) { return -1; }
int learner_cuda_checkpoint_save(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, NOT_BUILT);
	return -1;
}
int learner_cuda_checkpoint_load(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, NOT_BUILT);
	return -1;
}
int learner_cuda_checkpoint_world(const learner_cuda *l) { return 0; }
const char *learner_cuda_error(const learner_cuda *l) { return NOT_BUILT; }

#endif
