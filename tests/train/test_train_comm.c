/* The collective layer (train/comm.h) and data-parallel training in one
 * process: K thread-ranks with 1/K of the batch each take the same step as
 * one trainer on the whole batch. The same through mpirun is in
 * tests/cli/test_train_mpi.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu_skip.h"
#include "tests/train/train_util.h"
#include "train/comm.h"

Test(comm, single_is_the_identity)
{
	comm *c = comm_new_single();
	cr_assert(c);
	cr_assert_eq(comm_rank(c), 0);
	cr_assert_eq(comm_size(c), 1);
	cr_assert_str_eq(comm_name(c), "single");
	float x[3] = { 1, -2, 3.5f };
	cr_assert_eq(comm_allreduce(c, x, 3, COMM_OP_SUM), 0);
	cr_assert_eq(comm_allreduce(c, x, 3, COMM_OP_AVG), 0);
	cr_assert(x[0] == 1 && x[1] == -2 && x[2] == 3.5f);
	cr_assert_eq(comm_broadcast(c, x, sizeof(x), 0), 0);
	cr_assert_eq(comm_barrier(c), 0);
	comm_free(c);
	comm_free(NULL);
}

Test(comm, world_without_launcher_is_single)
{
	if (comm_launched_by_mpi())
		cr_skip_test("the tests themselves run under an MPI launcher");
	char err[256];
	comm *c = comm_new_world(err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_eq(comm_size(c), 1);
	cr_assert_eq(comm_get_kind(c), COMM_KIND_SINGLE);
	comm_free(c);
}

#ifndef SENTE_HAVE_NCCL
#define SENTE_HAVE_NCCL 0
#endif

#if SENTE_HAVE_NCCL
#include <cuda_runtime.h>

#include "nn/cuda/cuda.h"

/* A one-GPU communicator: the collectives run (and keep the values). */
Test(comm, nccl_single_gpu)
{
	SKIP_WITHOUT_GPU();
	char err[256] = "";
	comm *b = comm_new_single();
	comm *c = comm_new_nccl(b, 0, err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_str_eq(comm_name(c), "nccl");
	cr_assert_eq(comm_size(c), 1);
	float h[4] = { 1, 2, 3, 4 }, *d = NULL;
	cr_assert_eq(cudaMalloc((void **)&d, sizeof(h)), cudaSuccess);
	cr_assert_eq(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice), cudaSuccess);
	cr_assert_eq(comm_allreduce(c, d, 4, COMM_OP_AVG), 0, "%s", comm_error(c));
	cr_assert_eq(comm_broadcast(c, d, sizeof(h), 0), 0, "%s", comm_error(c));
	cr_assert_eq(comm_barrier(c), 0, "%s", comm_error(c));
	cr_assert_eq(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert(h[0] == 1 && h[3] == 4);
	cudaFree(d);
	comm_free(c);
	comm_free(b);
}
#else
Test(comm, nccl_refused_when_not_built)
{
	char err[256] = "";
	comm *b = comm_new_single();
	cr_assert_null(comm_new_nccl(b, 0, err, sizeof(err)));
	cr_assert(strstr(err, "without NCCL"), "%s", err);
	comm_free(b);
}
#endif

/* ---- thread ranks -------------------------------------------------------- */

enum { MAX_RANKS = 4 };

typedef struct collect_arg {
	comm *c;           /* this rank */
	float sum[5];      /* all-reduce SUM result */
	float avg[5];      /* all-reduce AVG result */
	char bytes[7];     /* broadcast result */
	int rc;            /* first failure */
} collect_arg;

static void *collect_main(void *p)
{
	collect_arg *a = p;
	int r = comm_rank(a->c);
	for (int i = 0; i < 5; i++)
		a->sum[i] = a->avg[i] = (float)(r * 10 + i);
	snprintf(a->bytes, sizeof(a->bytes), "rank %d", r);
	a->rc |= comm_allreduce(a->c, a->sum, 5, COMM_OP_SUM);
	a->rc |= comm_barrier(a->c);
	a->rc |= comm_allreduce(a->c, a->avg, 5, COMM_OP_AVG);
	a->rc |= comm_broadcast(a->c, a->bytes, sizeof(a->bytes), 1);
	return NULL;
}

Test(comm, thread_ranks_reduce_and_broadcast)
{
	enum { K = 3 };
	comm_group *g = comm_group_new(K);
	cr_assert(g);
	pthread_t th[K];
	collect_arg a[K];
	memset(a, 0, sizeof(a));
	for (int r = 0; r < K; r++) {
		a[r].c = comm_group_rank(g, r);
		cr_assert_eq(comm_size(a[r].c), K);
		cr_assert_str_eq(comm_name(a[r].c), "threads");
		pthread_create(&th[r], NULL, collect_main, &a[r]);
	}
	for (int r = 0; r < K; r++)
		pthread_join(th[r], NULL);
	for (int r = 0; r < K; r++) {
		cr_assert_eq(a[r].rc, 0);
		for (int i = 0; i < 5; i++) {
			/* ranks 0, 10, 20 plus i */
			cr_assert_float_eq(a[r].sum[i], 30.0f + 3 * i, 1e-6);
			cr_assert_float_eq(a[r].avg[i], 10.0f + i, 1e-6);
		}
		cr_assert_str_eq(a[r].bytes, "rank 1");
		cr_assert(comm_seconds(a[r].c) >= 0);
	}
	comm_group_free(g);
}

/* ---- data parallel == whole batch ---------------------------------------- */

/* Positions [first, first + n) of b as a batch of their own. */
static train_batch *slice(const nn_net *net, const train_batch *b, int first, int n)
{
	train_batch *s = train_batch_new(&net->arch, n, b->wdl != NULL);
	cr_assert(s);
	memcpy(s->planes, b->planes + (size_t)first * b->in_size, sizeof(float) * n * b->in_size);
	memcpy(s->policy, b->policy + (size_t)first * b->n_actions,
	       sizeof(float) * n * b->n_actions);
	memcpy(s->value, b->value + first, sizeof(float) * n);
	if (b->wdl)
		memcpy(s->wdl, b->wdl + 3 * (size_t)first, sizeof(float) * 3 * n);
	return s;
}

static train_options dp_options(int batch)
{
	train_options o = train_options_default();
	o.batch = batch;
	o.threads = 1;
	o.lr = 0.05;
	o.weight_decay = 1e-3;
	o.bn_momentum = 0.1; /* so that running statistics move visibly */
	return o;
}

enum { STEPS = 3 };

typedef struct rank_arg {
	const nn_net *net;           /* starting weights */
	train_options opt;           /* per-rank options (batch = share) */
	comm *c;                     /* this rank */
	train_batch *share[STEPS];   /* its share of each step's batch */
	int by_hand;                 /* 1: trainer_gradient + all-reduce + trainer_apply */
	double loss[STEPS];          /* global losses seen */
	nn_net *out;                 /* final weights (clone) */
	char err[256];               /* failure, "" when none */
} rank_arg;

static void *rank_main(void *p)
{
	rank_arg *a = p;
	trainer *t = trainer_new(a->net, &a->opt, a->err, sizeof(a->err));
	float *g = NULL;
	if (!t)
		return NULL;
	trainer_set_comm(t, a->c);
	size_t nf = trainer_net(t)->n_floats;
	g = malloc(nf * sizeof(float));
	for (int s = 0; s < STEPS; s++) {
		train_stats st;
		if (!a->by_hand) {
			if (trainer_step(t, a->share[s], &st) != 0) {
				snprintf(a->err, sizeof(a->err), "%s", trainer_error(t));
				goto out;
			}
			a->loss[s] = st.loss;
			continue;
		}
		if (trainer_gradient(t, a->share[s], &st) != 0) {
			snprintf(a->err, sizeof(a->err), "%s", trainer_error(t));
			goto out;
		}
		float loss = (float)st.loss;
		memcpy(g, trainer_grad(t), nf * sizeof(float));
		if (comm_allreduce(a->c, g, nf, COMM_OP_AVG) != 0 ||
		    comm_allreduce(a->c, &loss, 1, COMM_OP_AVG) != 0) {
			snprintf(a->err, sizeof(a->err), "%s", comm_error(a->c));
			goto out;
		}
		trainer_apply(t, g, &st);
		a->loss[s] = loss;
	}
	a->out = nn_net_clone(trainer_net(t));
out:
	free(g);
	trainer_free(t);
	return NULL;
}

/* K thread-ranks on 1/K of each batch against one trainer on the whole:
 * weights (and running statistics) within float rounding after STEPS
 * steps, ranks bit-identical to one another. The nets and seeds are ones
 * where no ReLU input sits within rounding of 0: there a rounding
 * difference flips one element's gradient, which is no fault of either
 * path (seen with a 12-channel Connect Four net, where a finite difference
 * gave the mean of the two gradients). SGD only: AdamW's first steps move
 * every weight by about lr whatever the size of its gradient, so weights
 * whose gradient is rounding noise (conv biases before a batch norm) move
 * by +-lr at random; the optimizer code is the same for one rank or many. */
static void check_dp_heads(game_kind kind, int size, int channels, int K, int by_hand, int heads)
{
	enum { N = 16 };
	char err[256];
	nn_net *net = tu_net_heads(kind, size, 2, channels, heads, 11);
	train_batch *whole[STEPS];
	for (int s = 0; s < STEPS; s++)
		whole[s] = tu_batch(net, N, 70 + s, 0, net->arch.value_outputs == 3);
	train_options o1 = dp_options(N);
	trainer *ref = trainer_new(net, &o1, err, sizeof(err));
	cr_assert(ref, "%s", err);
	double ref_loss[STEPS];
	for (int s = 0; s < STEPS; s++) {
		train_stats st;
		cr_assert_eq(trainer_step(ref, whole[s], &st), 0, "%s", trainer_error(ref));
		ref_loss[s] = st.loss;
	}

	comm_group *g = comm_group_new(K);
	pthread_t th[MAX_RANKS];
	rank_arg a[MAX_RANKS];
	memset(a, 0, sizeof(a));
	for (int r = 0; r < K; r++) {
		a[r].net = net;
		a[r].opt = dp_options(N / K);
		a[r].c = comm_group_rank(g, r);
		a[r].by_hand = by_hand;
		for (int s = 0; s < STEPS; s++)
			a[r].share[s] = slice(net, whole[s], r * (N / K), N / K);
		pthread_create(&th[r], NULL, rank_main, &a[r]);
	}
	for (int r = 0; r < K; r++)
		pthread_join(th[r], NULL);
	const nn_net *w1 = trainer_net(ref);
	for (int r = 0; r < K; r++) {
		cr_assert(a[r].out, "rank %d: %s", r, a[r].err);
		for (int s = 0; s < STEPS; s++)
			cr_assert(fabs(a[r].loss[s] - ref_loss[s]) < 1e-4 * (1 + fabs(ref_loss[s])),
				  "step %d loss: %d ranks %.7f, one %.7f", s, K, a[r].loss[s], ref_loss[s]);
		double worst = 0;
		size_t at = 0;
		for (size_t i = 0; i < w1->n_floats; i++) {
			double d = fabs((double)a[r].out->data[i] - w1->data[i]) /
				   (1e-3 + fabs(w1->data[i]));
			if (d > worst) {
				worst = d;
				at = i;
			}
		}
		cr_assert(worst < 2e-3, "rank %d: weight %zu is %.8g, one trainer %.8g", r, at,
			  a[r].out->data[at], w1->data[at]);
		cr_assert_eq(memcmp(a[r].out->data, a[0].out->data, w1->n_floats * sizeof(float)), 0,
			     "ranks 0 and %d differ", r);
	}
	for (int r = 0; r < K; r++) {
		nn_net_free(a[r].out);
		for (int s = 0; s < STEPS; s++)
			train_batch_free(a[r].share[s]);
	}
	comm_group_free(g);
	for (int s = 0; s < STEPS; s++)
		train_batch_free(whole[s]);
	trainer_free(ref);
	nn_net_free(net);
}

static void check_dp(game_kind kind, int size, int channels, int K, int by_hand)
{
	check_dp_heads(kind, size, channels, K, by_hand, 0);
}

/* Squeeze-excitation blocks: their FCs' gradients are per position,
 * summed over the share, and all-reduced with the rest. */
Test(train_dp, two_ranks_equal_one_se_blocks)
{
	check_dp_heads(GAME_KIND_CONNECT4, 0, 16, 2, 0, TU_SE);
}

/* 16 channels: the blocked layout, 2-channel heads padded to 16. */
Test(train_dp, two_ranks_equal_one_blocked_sgd)
{
	check_dp(GAME_KIND_CONNECT4, 0, 16, 2, 0);
}

/* 12 channels: NHWC; Go's tanh value head. */
Test(train_dp, two_ranks_equal_one_nhwc_sgd)
{
	check_dp(GAME_KIND_GO, 5, 12, 2, 0);
}

/* Gradients reduced by hand (trainer_gradient, comm_allreduce, trainer_apply). */
Test(train_dp, by_hand_four_ranks)
{
	check_dp(GAME_KIND_CONNECT4, 0, 16, 4, 1);
}
