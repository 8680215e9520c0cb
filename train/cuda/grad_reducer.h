/* grad_reducer.h: the data-parallel learner's gradient all-reduce, cut into
 * buckets that are averaged over ranks as soon as backward has finished
 * them, so that communication overlaps the rest of backward (as PyTorch's
 * DDP does). The trainer drives it through grad_hooks.h.
 *
 * Buckets. The flat gradient grad[0, n) is cut at multiples of the bucket
 * size from the start (so every bucket but the last begins at an aligned
 * address), and the buckets are numbered in the order backward finishes
 * them: bucket 0 is the one holding grad[n - 1] (the remainder, the only
 * one that may be shorter), bucket k - 1 holds [0, size).
 *
 * Order. Every rank must launch the same all-reduces in the same order
 * (NCCL's rule, and every comm's). Bucket k is launched only once it is
 * complete and bucket k - 1 has been launched, so the launch order is the
 * bucket order on every rank, whatever granularity and order the ready()
 * ranges come in: ranges out of backward order only launch later.
 *
 * Transports. NCCL: grad is device memory; a bucket's all-reduce goes on the
 * reducer's own stream after waiting for an event recorded on the compute
 * stream given to ready(), and finish() makes the compute stream wait for
 * the last one. The calling thread's current device must be the comm's.
 * Threads and MPI: grad is host memory and each bucket is reduced inside
 * the ready() call that completes it (streams are ignored). Single: the
 * all-reduce is the identity, so grad may be either.
 *
 * Other collectives the trainer makes on the same comm (loss terms, say)
 * must also come in the same order on every rank relative to the buckets;
 * simplest is to make them after finish(). The hooks are meant to be
 * called eagerly, not while the compute stream is captured into a CUDA
 * graph (the timing events would be captured too).
 *
 * Every element must be handed over exactly once per step: a range handed
 * twice (or outside [0, n)) fails in ready(), a missing one in finish().
 * The reducer is reused step after step. */
#ifndef SENTE_TRAIN_CUDA_GRAD_REDUCER_H
#define SENTE_TRAIN_CUDA_GRAD_REDUCER_H

#include <stdbool.h>
#include <stddef.h>

#include "train/comm.h"
#include "train/cuda/grad_hooks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bucket size when grad_reducer_new is given 0: large enough that NCCL
 * runs near its bandwidth, small enough that the first bucket starts early. */
#define GRAD_REDUCER_BUCKET_BYTES ((size_t)4 << 20)

typedef struct grad_reducer grad_reducer;

/* One step's figures (grad_reducer_step_stats). */
typedef struct grad_reducer_stats {
	int buckets;            /* all-reduces launched */
	size_t bytes;           /* bytes they carried, per rank */
	double comm_seconds;    /* time inside them: host transports the wall time
				 * of the calls; NCCL the sum of each bucket's time
				 * on the comm stream (events) */
	double exposed_seconds; /* communication not hidden by backward: NCCL
				 * from the compute stream's last ready() to the end
				 * of the last all-reduce; host transports all of
				 * comm_seconds (they reduce synchronously) */
	bool timed;             /* the seconds were measured (false before a step) */
} grad_reducer_stats;

/* A reducer over grad[0, n) for comm c (both the caller's, and outliving
 * the reducer). bucket_bytes 0 takes GRAD_REDUCER_BUCKET_BYTES; it is
 * rounded up to a multiple of 256 bytes. NULL with a message when memory is
 * short, or for NCCL when a stream or event cannot be made. */
grad_reducer *grad_reducer_new(comm *c, float *grad, size_t n, size_t bucket_bytes, char *err,
			       size_t errlen);
/* Accepts NULL. For NCCL, waits for the last step's communication first. */
void grad_reducer_free(grad_reducer *r);

/* The hooks the trainer calls (ctx is r). */
gpu_grad_hooks grad_reducer_hooks(grad_reducer *r);
/* Hands grad[offset, offset + count) over: its work has been enqueued on
 * `stream` (NCCL) or is done (host transports). Launches every bucket this
 * completes, in bucket order. 0, or -1 (grad_reducer_error). */
int grad_reducer_ready(grad_reducer *r, size_t offset, size_t count, void *stream);
/* Ends the step: -1 unless every element was handed over exactly once and
 * every bucket launched; for NCCL, work enqueued on `stream` afterwards
 * sees the reduced gradient. The reducer is ready for the next step either
 * way (but after a failure the ranks' collectives no longer match: abort). */
int grad_reducer_finish(grad_reducer *r, void *stream);

/* Buckets, and bucket k's range (k in launch order). */
int grad_reducer_bucket_count(const grad_reducer *r);
void grad_reducer_bucket_range(const grad_reducer *r, int k, size_t *offset, size_t *count);
/* Buckets launched so far in the step under way. */
int grad_reducer_launched(const grad_reducer *r);
/* The last finished step's figures. For NCCL this waits for that step's
 * communication to end (read it after the step's own synchronisation).
 * 0, or -1 when the events cannot be read (grad_reducer_error). */
int grad_reducer_step_stats(grad_reducer *r, grad_reducer_stats *out);
/* Message of the last failure. */
const char *grad_reducer_error(const grad_reducer *r);

#ifdef __cplusplus
}
#endif

#endif
