/* grad_hooks.h: how the GPU trainer hands its gradient to a reducer while
 * the backward pass is still running (bucketed all-reduce overlapped with
 * backward, train/cuda/grad_reducer.h), without either knowing the other.
 *
 * The trainer's gradient is one flat fp32 array parallel to nn_net.data
 * (plus a tail of loss terms, see gpu_train.h). Backward produces it from
 * the end of the array towards the start (heads first, input conv last).
 * After enqueuing the work that completes grad[offset, offset + count) on
 * its compute stream, the trainer calls ready(); every element is handed
 * over exactly once per step. Then finish() returns once work enqueued on
 * the stream afterwards sees the reduced (averaged over ranks) gradient.
 * With gradient accumulation the hooks are called on the last micro-batch
 * only. Streams are cudaStream_t passed as void * so that C files without
 * CUDA headers can hold them. Both return 0, or -1 (the hook's owner keeps
 * the message). */
#ifndef SENTE_TRAIN_CUDA_GRAD_HOOKS_H
#define SENTE_TRAIN_CUDA_GRAD_HOOKS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_grad_hooks {
	void *ctx;
	int (*ready)(void *ctx, size_t offset, size_t count, void *stream);
	int (*finish)(void *ctx, void *stream);
} gpu_grad_hooks;

#ifdef __cplusplus
}
#endif

#endif
