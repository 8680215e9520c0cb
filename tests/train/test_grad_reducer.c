/* The bucketed gradient all-reduce (train/cuda/grad_reducer.h): K ranks as
 * threads hand their gradients over in backward order, in ranges of random
 * sizes (each rank its own), and must get exactly what one all-reduce of
 * the whole array gives; missing and doubled elements fail at finish. The
 * NCCL path runs on a device when there is one. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "nn/cuda/cuda.h"
#include "tests/gpu_skip.h"
#include "train/comm.h"
#include "train/cuda/grad_reducer.h"

#define N 1000      /* gradient elements */
#define BUCKET 256  /* bytes: 64 floats, so 16 buckets, the first launched 40 long */
#define STEPS 3

Test(grad_reducer, buckets_are_cut_from_the_start_and_launched_from_the_end)
{
	char err[256] = "";
	comm *c = comm_new_single();
	float g[N] = { 0 };
	grad_reducer *r = grad_reducer_new(c, g, N, 100, err, sizeof(err)); /* rounds to 256 */
	cr_assert(r, "%s", err);
	cr_assert_eq(grad_reducer_bucket_count(r), 16);
	size_t off, cnt;
	grad_reducer_bucket_range(r, 0, &off, &cnt);
	cr_assert(off == 960 && cnt == 40, "bucket 0 is [%zu, +%zu)", off, cnt);
	for (int k = 1; k < 16; k++) {
		grad_reducer_bucket_range(r, k, &off, &cnt);
		cr_assert(off == (size_t)(15 - k) * 64 && cnt == 64, "bucket %d is [%zu, +%zu)", k, off,
			  cnt);
	}
	grad_reducer_free(r);

	r = grad_reducer_new(c, g, N, 0, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(grad_reducer_bucket_count(r), 1, "4 MB default holds 1000 floats in one");
	grad_reducer_free(r);
	grad_reducer_free(NULL);
	comm_free(c);
}

/* Buckets launch in bucket order only: a range that completes bucket 2
 * before bucket 1 waits for it, and then both go. */
Test(grad_reducer, launches_wait_for_earlier_buckets)
{
	char err[256] = "";
	comm *c = comm_new_single();
	float g[N] = { 0 };
	grad_reducer *r = grad_reducer_new(c, g, N, BUCKET, err, sizeof(err));
	cr_assert(r, "%s", err);
	gpu_grad_hooks h = grad_reducer_hooks(r);
	cr_assert_eq(h.ready(h.ctx, 950, 50, NULL), 0); /* bucket 0 and 10 of bucket 1 */
	cr_assert_eq(grad_reducer_launched(r), 1);
	cr_assert_eq(h.ready(h.ctx, 832, 64, NULL), 0); /* all of bucket 2 */
	cr_assert_eq(grad_reducer_launched(r), 1);
	cr_assert_eq(h.ready(h.ctx, 896, 54, NULL), 0); /* the rest of bucket 1 */
	cr_assert_eq(grad_reducer_launched(r), 3);
	cr_assert_eq(h.ready(h.ctx, 0, 832, NULL), 0);
	cr_assert_eq(grad_reducer_launched(r), 16);
	cr_assert_eq(h.finish(h.ctx, NULL), 0, "%s", grad_reducer_error(r));
	grad_reducer_stats s;
	cr_assert_eq(grad_reducer_step_stats(r, &s), 0);
	cr_assert(s.timed && s.buckets == 16 && s.bytes == N * sizeof(float));
	cr_assert(s.comm_seconds >= 0 && s.exposed_seconds == s.comm_seconds);
	grad_reducer_free(r);
	comm_free(c);
}

Test(grad_reducer, an_element_handed_twice_fails_and_the_next_step_works)
{
	char err[256] = "";
	comm *c = comm_new_single();
	float g[N] = { 0 };
	grad_reducer *r = grad_reducer_new(c, g, N, BUCKET, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(grad_reducer_ready(r, 500, 500, NULL), 0);
	cr_assert_eq(grad_reducer_ready(r, 400, 101, NULL), -1, "element 500 is handed twice");
	cr_assert(strstr(grad_reducer_error(r), "[500, 501) handed over twice"), "%s",
		  grad_reducer_error(r));
	cr_assert_eq(grad_reducer_finish(r, NULL), -1);
	cr_assert(strstr(grad_reducer_error(r), "twice"), "%s", grad_reducer_error(r));

	/* A fresh step: everything once, in one range. */
	cr_assert_eq(grad_reducer_ready(r, 0, N, NULL), 0, "%s", grad_reducer_error(r));
	cr_assert_eq(grad_reducer_finish(r, NULL), 0, "%s", grad_reducer_error(r));

	/* A range inside one handed before, and one past the end. */
	cr_assert_eq(grad_reducer_ready(r, 0, N, NULL), 0);
	cr_assert_eq(grad_reducer_ready(r, 10, 1, NULL), -1);
	cr_assert_eq(grad_reducer_finish(r, NULL), -1);
	cr_assert_eq(grad_reducer_ready(r, 990, 11, NULL), -1);
	cr_assert(strstr(grad_reducer_error(r), "outside"), "%s", grad_reducer_error(r));
	cr_assert_eq(grad_reducer_finish(r, NULL), -1);
	grad_reducer_free(r);
	comm_free(c);
}

Test(grad_reducer, a_missing_element_fails_at_finish)
{
	char err[256] = "";
	comm *c = comm_new_single();
	float g[N] = { 0 };
	grad_reducer *r = grad_reducer_new(c, g, N, BUCKET, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(grad_reducer_ready(r, 501, N - 501, NULL), 0);
	cr_assert_eq(grad_reducer_ready(r, 0, 500, NULL), 0);
	cr_assert_eq(grad_reducer_finish(r, NULL), -1);
	cr_assert(strstr(grad_reducer_error(r), "1 of 1000") &&
			  strstr(grad_reducer_error(r), "first is 500"),
		  "%s", grad_reducer_error(r));
	/* Nothing at all. */
	cr_assert_eq(grad_reducer_finish(r, NULL), -1);
	cr_assert(strstr(grad_reducer_error(r), "1000 of 1000"), "%s", grad_reducer_error(r));
	grad_reducer_free(r);
	comm_free(c);
}

/* ---- K ranks as threads ---------------------------------------------------- */

typedef struct rank_job {
	comm *c;
	int rank;
	size_t n;
	int mode;      /* 0 backward in random ranges, 1 one range, 2 single elements,
			* 3 forward (all out of order) */
	char err[512]; /* empty when the rank's checks passed */
} rank_job;

/* Hands [0, n) over from the end in ranges of 1 .. 150 elements (a bucket is
 * 64), each rank its own sizes. */
static int hand_over(grad_reducer *r, size_t n, int mode, uint64_t *rng)
{
	if (mode == 1)
		return grad_reducer_ready(r, 0, n, NULL);
	if (mode == 3) {
		for (size_t lo = 0; lo < n;) {
			size_t len = 1 + rng_next(rng) % 150;
			len = len < n - lo ? len : n - lo;
			if (grad_reducer_ready(r, lo, len, NULL) != 0)
				return -1;
			lo += len;
		}
		return 0;
	}
	for (size_t hi = n; hi > 0;) {
		size_t len = mode == 2 ? 1 : 1 + rng_next(rng) % 150;
		len = len < hi ? len : hi;
		if (grad_reducer_ready(r, hi - len, len, NULL) != 0)
			return -1;
		hi -= len;
	}
	return 0;
}

static void *rank_main(void *arg)
{
	rank_job *j = arg;
	char err[256] = "";
	uint64_t rng = 0x5eed0000u + (uint64_t)j->rank * 7919u + (uint64_t)j->mode;
	float *g = malloc(j->n * sizeof(float)), *want = malloc(j->n * sizeof(float));
	grad_reducer *r = grad_reducer_new(j->c, g, j->n, BUCKET, err, sizeof(err));
	if (!g || !want || !r) {
		snprintf(j->err, sizeof(j->err), "setup: %s", err);
		goto out;
	}
	for (int step = 0; step < STEPS; step++) {
		for (size_t i = 0; i < j->n; i++)
			g[i] = (float)((double)(rng_next(&rng) % 2000001) * 1e-3 - 1000.0) / 3.0f;
		memcpy(want, g, j->n * sizeof(float));
		/* The reference first: every rank makes the same calls in order. */
		if (comm_allreduce(j->c, want, j->n, COMM_OP_AVG) != 0) {
			snprintf(j->err, sizeof(j->err), "reference: %s", comm_error(j->c));
			goto out;
		}
		if (hand_over(r, j->n, j->mode, &rng) != 0 || grad_reducer_finish(r, NULL) != 0) {
			snprintf(j->err, sizeof(j->err), "step %d: %s", step, grad_reducer_error(r));
			goto out;
		}
		if (memcmp(g, want, j->n * sizeof(float)) != 0) {
			size_t i = 0;
			while (g[i] == want[i])
				i++;
			snprintf(j->err, sizeof(j->err), "step %d: element %zu is %.9g, not %.9g",
				 step, i, g[i], want[i]);
			goto out;
		}
		grad_reducer_stats s;
		if (grad_reducer_step_stats(r, &s) != 0 || !s.timed ||
		    s.buckets != grad_reducer_bucket_count(r) || s.bytes != j->n * sizeof(float)) {
			snprintf(j->err, sizeof(j->err), "step %d: stats %d buckets, %zu bytes", step,
				 s.buckets, s.bytes);
			goto out;
		}
	}
out:
	grad_reducer_free(r);
	free(g);
	free(want);
	return NULL;
}

static void run_ranks(int k, size_t n, int mode)
{
	comm_group *grp = comm_group_new(k);
	cr_assert(grp);
	rank_job jobs[3];
	pthread_t th[3];
	for (int i = 0; i < k; i++) {
		jobs[i] = (rank_job){ .c = comm_group_rank(grp, i), .rank = i, .n = n, .mode = mode };
		cr_assert_eq(pthread_create(&th[i], NULL, rank_main, &jobs[i]), 0);
	}
	for (int i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < k; i++)
		cr_expect_str_empty(jobs[i].err, "K=%d n=%zu mode %d rank %d: %s", k, n, mode, i,
				    jobs[i].err);
	comm_group_free(grp);
}

Test(grad_reducer, k_ranks_get_the_mean_in_random_ranges)
{
	for (int k = 1; k <= 3; k++)
		run_ranks(k, N, 0);
}

Test(grad_reducer, k_ranks_one_range_or_single_elements)
{
	for (int k = 1; k <= 3; k++) {
		run_ranks(k, N, 1);
		run_ranks(k, 200, 2);
	}
}

/* Ranges in forward order launch everything at the last one; sizes that
 * are not a multiple of the bucket, and one element. */
Test(grad_reducer, k_ranks_out_of_order_and_odd_sizes)
{
	for (int k = 1; k <= 3; k++) {
		run_ranks(k, N, 3);
		run_ranks(k, 64, 0);
		run_ranks(k, 65, 0);
		run_ranks(k, 1, 0);
	}
}

/* ---- NCCL on a device ------------------------------------------------------ */

#ifndef SENTE_HAVE_NCCL
#define SENTE_HAVE_NCCL 0
#endif

#if SENTE_HAVE_NCCL
#include <cuda_runtime.h>

/* One rank of NCCL on device 0: the average over one rank keeps every
 * value, buckets are uploaded on the compute stream just before their
 * ready(), so the comm stream must wait for them. */
Test(grad_reducer, nccl_single_gpu)
{
	SKIP_WITHOUT_GPU();
	enum { NN = 3 * 1000 * 1000 + 17 };
	char err[256] = "";
	comm *b = comm_new_single();
	comm *c = comm_new_nccl(b, 0, err, sizeof(err));
	cr_assert(c, "%s", err);
	float *h = NULL, *back = malloc(NN * sizeof(float)), *d = NULL;
	cudaStream_t s;
	cr_assert_eq(cudaMallocHost((void **)&h, NN * sizeof(float)), cudaSuccess);
	cr_assert_eq(cudaMalloc((void **)&d, NN * sizeof(float)), cudaSuccess);
	cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
	grad_reducer *r = grad_reducer_new(c, d, NN, 1 << 20, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_assert_eq(grad_reducer_bucket_count(r), 12);
	uint64_t rng = 42;
	for (int step = 0; step < STEPS; step++) {
		for (size_t i = 0; i < NN; i++)
			h[i] = (float)(rng_next(&rng) % 100000) * 0.01f - 500.0f;
		cr_assert_eq(cudaMemsetAsync(d, 0xff, NN * sizeof(float), s), cudaSuccess);
		for (size_t hi = NN; hi > 0;) {
			size_t len = 1 + rng_next(&rng) % 400000;
			len = len < hi ? len : hi;
			cr_assert_eq(cudaMemcpyAsync(d + hi - len, h + hi - len, len * sizeof(float),
						     cudaMemcpyHostToDevice, s),
				     cudaSuccess);
			cr_assert_eq(grad_reducer_ready(r, hi - len, len, s), 0, "%s",
				     grad_reducer_error(r));
			hi -= len;
		}
		cr_assert_eq(grad_reducer_finish(r, s), 0, "%s", grad_reducer_error(r));
		cr_assert_eq(cudaMemcpyAsync(back, d, NN * sizeof(float), cudaMemcpyDeviceToHost, s),
			     cudaSuccess);
		cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
		cr_assert(memcmp(back, h, NN * sizeof(float)) == 0, "step %d", step);
		grad_reducer_stats st;
		cr_assert_eq(grad_reducer_step_stats(r, &st), 0, "%s", grad_reducer_error(r));
		cr_assert(st.timed && st.buckets == 12 && st.bytes == NN * sizeof(float));
		cr_assert(st.comm_seconds > 0 && st.exposed_seconds >= 0, "%g %g", st.comm_seconds,
			  st.exposed_seconds);
	}
	/* The comm's own stream is left as it was. */
	cr_assert_null(comm_get_stream(c));
	grad_reducer_free(r);
	cudaStreamDestroy(s);
	cudaFree(d);
	cudaFreeHost(h);
	free(back);
	comm_free(c);
	comm_free(b);
}
#endif
