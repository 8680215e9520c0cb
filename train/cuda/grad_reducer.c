/* grad_reducer.c: bucketed gradient all-reduce (grad_reducer.h). The host
 * transports are always built; the NCCL path (streams, events) only with
 * SENTE_HAVE_NCCL, since an NCCL comm cannot exist without it. */
#include "train/cuda/grad_reducer.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"

#ifndef SENTE_HAVE_NCCL
#define SENTE_HAVE_NCCL 0
#endif

#if SENTE_HAVE_NCCL
#include <cuda_runtime.h>

#include "nn/cuda/cuda_common.h"
#endif

/* A range of elements handed over in this step. */
typedef struct span {
	size_t lo, hi; /* [lo, hi) */
} span;

struct grad_reducer {
	comm *c;            /* the caller's comm */
	float *grad;        /* the flat gradient (device memory for NCCL) */
	size_t n;           /* its elements */
	size_t bsize;       /* elements per bucket (the remainder bucket may be short) */
	int nb;             /* buckets */
	bool nccl;          /* the comm is NCCL: launches go on our stream */

	/* This step. */
	size_t *filled;     /* [nb] elements of bucket k handed over, k in launch order */
	int next;           /* the next bucket to launch */
	span *spans;        /* what was handed over: sorted, disjoint, adjacent ones merged */
	size_t nspans, cap; /* spans used, allocated */
	bool failed;        /* a ready() failed: finish fails too */
	double host_seconds; /* host transports: wall time inside the all-reduces */

	grad_reducer_stats last; /* the last finished step */
#if SENTE_HAVE_NCCL
	cudaStream_t stream;    /* where the all-reduces are enqueued */
	cudaEvent_t *ready_ev;  /* [nb] recorded on the compute stream by the ready()
				 * that launched bucket k first in its call */
	cudaEvent_t *start_ev;  /* [nb] bucket k's all-reduce begins on our stream */
	cudaEvent_t *end_ev;    /* [nb] and ends */
	int last_ready;         /* the bucket whose ready_ev was recorded last */
	bool pending;           /* last's seconds are still in the events */
#endif
	char err[256];          /* last failure */
};

/* Bucket k in launch order covers [j * bsize, min((j + 1) * bsize, n)) with
 * j = nb - 1 - k: cut from the start, launched from the end. */
void grad_reducer_bucket_range(const grad_reducer *r, int k, size_t *offset, size_t *count)
{
	assert(k >= 0 && k < r->nb);
	size_t j = (size_t)(r->nb - 1 - k);
	size_t lo = j * r->bsize, hi = lo + r->bsize < r->n ? lo + r->bsize : r->n;
	*offset = lo;
	*count = hi - lo;
}

int grad_reducer_bucket_count(const grad_reducer *r)
{
	return r->nb;
}

int grad_reducer_launched(const grad_reducer *r)
{
	return r->next;
}

const char *grad_reducer_error(const grad_reducer *r)
{
	return r->err;
}

static void reset_step(grad_reducer *r)
{
	if (r->nb > 0)
		memset(r->filled, 0, (size_t)r->nb * sizeof(*r->filled));
	r->next = 0;
	r->nspans = 0;
	r->failed = false;
	r->host_seconds = 0;
}

void grad_reducer_free(grad_reducer *r)
{
	if (!r)
		return;
#if SENTE_HAVE_NCCL
	if (r->nccl) {
		if (r->stream)
			cudaStreamSynchronize(r->stream);
		for (int k = 0; k < r->nb; k++) {
			if (r->ready_ev && r->ready_ev[k])
				cudaEventDestroy(r->ready_ev[k]);
			if (r->start_ev && r->start_ev[k])
				cudaEventDestroy(r->start_ev[k]);
			if (r->end_ev && r->end_ev[k])
				cudaEventDestroy(r->end_ev[k]);
		}
		free(r->ready_ev);
		free(r->start_ev);
		free(r->end_ev);
		if (r->stream)
			cudaStreamDestroy(r->stream);
	}
#endif
	free(r->filled);
	free(r->spans);
	free(r);
}

#if SENTE_HAVE_NCCL
static int nccl_setup(grad_reducer *r, char *err, size_t errlen)
{
	int rc = 0;
	size_t nb = (size_t)r->nb;
	r->ready_ev = calloc(nb ? nb : 1, sizeof(cudaEvent_t));
	r->start_ev = calloc(nb ? nb : 1, sizeof(cudaEvent_t));
	r->end_ev = calloc(nb ? nb : 1, sizeof(cudaEvent_t));
	if (!r->ready_ev || !r->start_ev || !r->end_ev) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* Non-blocking: the comm stream orders itself by events alone, also
	 * against a compute stream that is the legacy one. */
	CUDA_CHECK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
	for (int k = 0; k < r->nb; k++) {
		CUDA_CHECK(cudaEventCreate(&r->ready_ev[k]));
		CUDA_CHECK(cudaEventCreate(&r->start_ev[k]));
		CUDA_CHECK(cudaEventCreate(&r->end_ev[k]));
	}
out:
	return rc;
}
#endif

grad_reducer *grad_reducer_new(comm *c, float *grad, size_t n, size_t bucket_bytes, char *err,
			       size_t errlen)
{
	if (bucket_bytes == 0)
		bucket_bytes = GRAD_REDUCER_BUCKET_BYTES;
	/* 256-byte multiples keep every bucket but the remainder aligned as
	 * cudaMalloc aligns grad itself. */
	bucket_bytes = (bucket_bytes + 255) / 256 * 256;
	size_t bsize = bucket_bytes / sizeof(float);
	size_t nb = (n + bsize - 1) / bsize;
	if (nb > INT32_MAX) {
		snprintf(err, errlen, "%zu buckets of %zu bytes: use larger buckets", nb, bucket_bytes);
		return NULL;
	}
	grad_reducer *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->c = c;
	r->grad = grad;
	r->n = n;
	r->bsize = bsize;
	r->nb = (int)nb;
	r->nccl = comm_get_kind(c) == COMM_KIND_NCCL;
	r->filled = calloc(nb ? nb : 1, sizeof(*r->filled));
	r->cap = 16;
	r->spans = malloc(r->cap * sizeof(*r->spans));
	if (!r->filled || !r->spans) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (r->nccl) {
#if SENTE_HAVE_NCCL
		if (nccl_setup(r, err, errlen) != 0)
			goto fail;
#else
		snprintf(err, errlen, "an NCCL comm in a build without NCCL");
		goto fail;
#endif
	}
	reset_step(r);
	return r;
fail:
	grad_reducer_free(r);
	return NULL;
}

/* Records [lo, hi) as handed over: -1 when it meets a range already there. */
static int add_span(grad_reducer *r, size_t lo, size_t hi)
{
	/* First span starting at or past lo. */
	size_t a = 0, b = r->nspans;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (r->spans[mid].lo < lo)
			a = mid + 1;
		else
			b = mid;
	}
	size_t i = a;
	span *prev = i > 0 ? &r->spans[i - 1] : NULL, *nxt = i < r->nspans ? &r->spans[i] : NULL;
	if ((prev && prev->hi > lo) || (nxt && nxt->lo < hi)) {
		size_t olo = prev && prev->hi > lo ? lo : nxt->lo;
		size_t ohi = prev && prev->hi > lo ? (prev->hi < hi ? prev->hi : hi)
						  : (nxt->hi < hi ? nxt->hi : hi);
		snprintf(r->err, sizeof(r->err),
			 "gradient elements [%zu, %zu) handed over twice in one step", olo, ohi);
		return -1;
	}
	bool join_prev = prev && prev->hi == lo, join_next = nxt && nxt->lo == hi;
	if (join_prev && join_next) {
		prev->hi = nxt->hi;
		memmove(&r->spans[i], &r->spans[i + 1], (r->nspans - i - 1) * sizeof(span));
		r->nspans--;
	} else if (join_prev) {
		prev->hi = hi;
	} else if (join_next) {
		nxt->lo = lo;
	} else {
		if (r->nspans == r->cap) {
			/* Grows only while ranges come out of order; the capacity
			 * stays for later steps. */
			span *s = realloc(r->spans, 2 * r->cap * sizeof(span));
			if (!s) {
				snprintf(r->err, sizeof(r->err), "out of memory");
				return -1;
			}
			r->spans = s;
			r->cap *= 2;
		}
		memmove(&r->spans[i + 1], &r->spans[i], (r->nspans - i) * sizeof(span));
		r->spans[i] = (span){ lo, hi };
		r->nspans++;
	}
	return 0;
}

#if SENTE_HAVE_NCCL
/* The figures of the step whose events are pending. */
static int collect_events(grad_reducer *r)
{
	char *err = r->err;
	size_t errlen = sizeof(r->err);
	int rc = 0;
	float ms = 0;
	double total = 0;
	r->pending = false;
	if (r->nb == 0)
		return 0;
	CUDA_CHECK(cudaEventSynchronize(r->end_ev[r->nb - 1]));
	for (int k = 0; k < r->nb; k++) {
		CUDA_CHECK(cudaEventElapsedTime(&ms, r->start_ev[k], r->end_ev[k]));
		total += ms * 1e-3;
	}
	CUDA_CHECK(cudaEventElapsedTime(&ms, r->ready_ev[r->last_ready], r->end_ev[r->nb - 1]));
	r->last.comm_seconds = total;
	r->last.exposed_seconds = ms > 0 ? ms * 1e-3 : 0;
	r->last.timed = true;
out:
	return rc;
}

/* Launches buckets next .. upto - 1 after the compute stream's work so far. */
static int launch_nccl(grad_reducer *r, int upto, void *compute)
{
	char *err = r->err;
	size_t errlen = sizeof(r->err);
	int rc = 0, first = r->next;
	void *prev = comm_get_stream(r->c);
	CUDA_CHECK(cudaEventRecord(r->ready_ev[first], (cudaStream_t)compute));
	CUDA_CHECK(cudaStreamWaitEvent(r->stream, r->ready_ev[first], 0));
	r->last_ready = first;
	comm_set_stream(r->c, r->stream);
	for (; r->next < upto; r->next++) {
		size_t off, cnt;
		grad_reducer_bucket_range(r, r->next, &off, &cnt);
		CUDA_CHECK(cudaEventRecord(r->start_ev[r->next], r->stream));
		if (comm_allreduce(r->c, r->grad + off, cnt, COMM_OP_AVG) != 0) {
			snprintf(err, errlen, "all-reduce of gradient bucket %d: %s", r->next,
				 comm_error(r->c));
			rc = -1;
			goto out;
		}
		CUDA_CHECK(cudaEventRecord(r->end_ev[r->next], r->stream));
	}
out:
	/* Other users of the comm keep the stream they set. */
	comm_set_stream(r->c, prev);
	return rc;
}
#endif

static int launch_host(grad_reducer *r, int upto)
{
	for (; r->next < upto; r->next++) {
		size_t off, cnt;
		grad_reducer_bucket_range(r, r->next, &off, &cnt);
		double t0 = clock_now();
		int rc = comm_allreduce(r->c, r->grad + off, cnt, COMM_OP_AVG);
		r->host_seconds += clock_now() - t0;
		if (rc != 0) {
			snprintf(r->err, sizeof(r->err), "all-reduce of gradient bucket %d: %s",
				 r->next, comm_error(r->c));
			return -1;
		}
	}
	return 0;
}

int grad_reducer_ready(grad_reducer *r, size_t offset, size_t count, void *stream)
{
	if (r->failed)
		return -1;
#if SENTE_HAVE_NCCL
	/* The last step's events are about to be recorded again. */
	if (r->pending && r->nspans == 0 && collect_events(r) != 0)
		goto fail;
#endif
	if (offset > r->n || count > r->n - offset) {
		snprintf(r->err, sizeof(r->err),
			 "gradient range [%zu, %zu) is outside the gradient's %zu elements", offset,
			 offset + count, r->n);
		goto fail;
	}
	if (count == 0)
		return 0;
	if (add_span(r, offset, offset + count) != 0)
		goto fail;
	/* Count the range into every bucket it meets (j from the start). */
	size_t end = offset + count;
	for (size_t j = offset / r->bsize; j * r->bsize < end; j++) {
		size_t lo = j * r->bsize, hi = lo + r->bsize;
		lo = lo > offset ? lo : offset;
		hi = hi < end ? hi : end;
		r->filled[r->nb - 1 - (int)j] += hi - lo;
	}
	int upto = r->next;
	while (upto < r->nb) {
		size_t off, cnt;
		grad_reducer_bucket_range(r, upto, &off, &cnt);
		if (r->filled[upto] != cnt)
			break;
		upto++;
	}
	if (upto == r->next)
		return 0;
	int rc;
#if SENTE_HAVE_NCCL
	if (r->nccl)
		rc = launch_nccl(r, upto, stream);
	else
#endif
		rc = launch_host(r, upto);
	if (rc != 0)
		goto fail;
	return 0;
fail:
	r->failed = true;
	return -1;
}

/* The first element not handed over, and how many are missing. */
static void find_missing(const grad_reducer *r, size_t *first, size_t *missing)
{
	size_t covered = 0;
	*first = r->nspans > 0 && r->spans[0].lo == 0 ? r->spans[0].hi : 0;
	for (size_t i = 0; i < r->nspans; i++)
		covered += r->spans[i].hi - r->spans[i].lo;
	*missing = r->n - covered;
}

int grad_reducer_finish(grad_reducer *r, void *stream)
{
	int rc = 0;
	if (r->failed) {
		rc = -1; /* the message of the failed ready() stays */
		goto out;
	}
	if (r->next < r->nb) {
		size_t first, missing;
		find_missing(r, &first, &missing);
		snprintf(r->err, sizeof(r->err),
			 "%zu of %zu gradient elements were not handed over in this step (the "
			 "first is %zu): buckets %d to %d were never all-reduced",
			 missing, r->n, first, r->next, r->nb - 1);
		rc = -1;
		goto out;
	}
	r->last.buckets = r->nb;
	r->last.bytes = r->n * sizeof(float);
#if SENTE_HAVE_NCCL
	if (r->nccl) {
		r->last.timed = false;
		if (r->nb > 0) {
			char *err = r->err;
			size_t errlen = sizeof(r->err);
			CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, r->end_ev[r->nb - 1], 0));
			r->pending = true;
		}
		goto out;
	}
#endif
	r->last.comm_seconds = r->host_seconds;
	r->last.exposed_seconds = r->host_seconds;
	r->last.timed = true;
out:
	if (rc != 0) {
		r->last = (grad_reducer_stats){ 0 };
#if SENTE_HAVE_NCCL
		r->pending = false;
#endif
	}
	reset_step(r);
	return rc;
}

int grad_reducer_step_stats(grad_reducer *r, grad_reducer_stats *out)
{
#if SENTE_HAVE_NCCL
	if (r->pending && collect_events(r) != 0)
		return -1;
#endif
	*out = r->last;
	return 0;
}

static int hook_ready(void *ctx, size_t offset, size_t count, void *stream)
{
	return grad_reducer_ready(ctx, offset, count, stream);
}

static int hook_finish(void *ctx, void *stream)
{
	return grad_reducer_finish(ctx, stream);
}

gpu_grad_hooks grad_reducer_hooks(grad_reducer *r)
{
	return (gpu_grad_hooks){ .ctx = r, .ready = hook_ready, .finish = hook_finish };
}
