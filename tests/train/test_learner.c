/* The learner table (train/learner.h): lookup by name, complete tables, the
 * CPU learner driven through it (window, steps, checkpoint round trip), the
 * CUDA learner's refusal without a device, and the window's refill from the
 * store: oldest first, only games not seen, the same on thread-ranks as in
 * one process. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "nn/cuda/cuda.h"
#include "tests/train/train_util.h"
#include "train/learner.h"

Test(learner, lookup_by_name)
{
	cr_assert_eq(learner_by_name("cpu"), &learner_cpu);
	cr_assert_eq(learner_by_name("cuda"), &learner_cuda);
	cr_assert_null(learner_by_name("tpu"));
	cr_assert_str_eq(learner_cpu.name, "cpu");
	cr_assert_str_eq(learner_cuda.name, "cuda");
}

/* Every entry of a table that can make a learner is there. */
static void assert_complete(const learner_ops *o)
{
	cr_assert(o->create && o->destroy && o->add_game && o->positions && o->step &&
		  o->set_window && o->recompute_bn && o->net &&
		  o->steps && o->set_comm && o->broadcast && o->checkpoint_save &&
		  o->checkpoint_load && o->checkpoint_world && o->error,
		  "%s: an entry is missing", o->name);
}

Test(learner, tables_are_complete)
{
	assert_complete(&learner_cpu);
#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
	assert_complete(&learner_cuda);
#else
	cr_assert(learner_cuda.create, "a build without CUDA refuses at create");
#endif
}

Test(learner, cuda_without_a_device_refuses_with_a_reason)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present");
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 1);
	learner_options lo = learner_options_default();
	lo.train.batch = 8;
	char err[256] = "";
	cr_assert_null(learner_new(&learner_cuda, net, &lo, err, sizeof(err)));
	cr_assert(err[0], "the refusal says why");
	nn_net_free(net);
}

/* A finished random Connect Four game with every move recorded. */
static void random_game(game_record *r, uint64_t *rng)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game g;
	game_init(&g, &p);
	record_init(r, &p);
	int legal[GAME_MAX_ACTIONS];
	while (!game_is_over(&g)) {
		int n = game_legal_moves(&g, legal);
		int mv = legal[tu_rng(rng) % (uint64_t)n];
		record_visit v = { (int16_t)mv, 10 };
		cr_assert_eq(record_add_move(r, mv, true, 0, &v, 1), 0);
		game_play(&g, mv);
	}
	record_set_outcome(r, &g);
}

/* Adds n random Connect Four games (random_game from a generator seeded
 * with seed) to L; returns their positions. */
static int64_t add_random_games(learner *L, int n, uint64_t seed)
{
	uint64_t rng = seed;
	int64_t positions = 0;
	for (int i = 0; i < n; i++) {
		game_record r;
		random_game(&r, &rng);
		positions += r.n_moves;
		cr_assert_eq(learner_add_game(L, &r), 0);
		record_free(&r);
	}
	return positions;
}

Test(learner, cpu_through_the_table)
{
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 2);
	learner_options lo = learner_options_default();
	lo.train.batch = 16;
	lo.window = 500;
	char err[512], ckpt[] = "/tmp/sente-learner-XXXXXX";
	learner *L = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(L, "%s", err);
	cr_assert_eq(learner_kind(L), &learner_cpu);
	cr_assert_str_eq(learner_describe(L), "cpu fp32");
	int64_t positions = add_random_games(L, 20, 5);
	cr_assert_eq(learner_positions(L), positions);
	train_stats st;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(learner_step(L, 16, 0, &st), 0, "%s", learner_error(L));
	cr_assert_eq(learner_steps(L), 3);
	int fd = mkstemp(ckpt);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(learner_checkpoint_save(L, ckpt, err, sizeof(err)), 0, "%s", err);
	learner *M = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(M, "%s", err);
	cr_assert_eq(learner_checkpoint_load(M, ckpt, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(learner_steps(M), 3);
	cr_assert_eq(learner_checkpoint_world(M), 1);
	nn_net *a = learner_net(L), *b = learner_net(M);
	cr_assert_eq(memcmp(a->data, b->data, a->n_floats * sizeof(float)), 0,
		     "the checkpoint holds the weights");
	unlink(ckpt);
	learner_free(M);
	learner_free(L);
	learner_free(NULL);
	nn_net_free(net);
}

/* learner_options.precision bf16 makes the CPU learner train in bf16 (the
 * CUDA learner's fp16 default leaves it fp32, above), and its checkpoint
 * resumes in fp32. */
Test(learner, cpu_bf16)
{
	if (!__builtin_cpu_supports("avx512bf16"))
		cr_skip_test("this CPU lacks AVX-512 BF16");
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 16, 3);
	learner_options lo = learner_options_default();
	lo.train.batch = 16;
	lo.precision = NN_DTYPE_BF16;
	char err[512], ckpt[] = "/tmp/sente-learner-XXXXXX";
	learner *L = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(L, "%s", err);
	cr_assert_str_eq(learner_describe(L), "cpu bf16");
	add_random_games(L, 8, 7);
	train_stats st;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(learner_step(L, 16, 0, &st), 0, "%s", learner_error(L));
		cr_assert(isfinite(st.loss) && st.loss > 0, "loss %g", st.loss);
	}
	int fd = mkstemp(ckpt);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(learner_checkpoint_save(L, ckpt, err, sizeof(err)), 0, "%s", err);
	lo.precision = NN_DTYPE_FP32;
	learner *M = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(M, "%s", err);
	cr_assert_str_eq(learner_describe(M), "cpu fp32");
	cr_assert_eq(learner_checkpoint_load(M, ckpt, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(learner_steps(M), 3);
	unlink(ckpt);
	learner_free(M);
	learner_free(L);
	nn_net_free(net);
}

/* A store in a new folder `dir` (a mkdtemp template; the file's path into
 * path) holding `games` random games; their positions into *positions. */
static store *game_store(char *dir, char *path, int games, int64_t *positions)
{
	char err[512];
	cr_assert(mkdtemp(dir));
	snprintf(path, 600, "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t model;
	cr_assert_eq(store_add_model(db, "none.sente", 0, 0, "test", &model), 0);
	uint64_t rng = 9;
	*positions = 0;
	for (int i = 0; i < games; i++) {
		game_record r;
		random_game(&r, &rng);
		int64_t id;
		*positions += r.n_moves;
		cr_assert_eq(store_add_game(db, model, "test", &r, &id), 0);
		record_free(&r);
	}
	return db;
}

static void remove_dir(const char *dir)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(learner, refill_takes_new_games_only)
{
	char dir[] = "/tmp/sente-learner-XXXXXX", path[600], err[512];
	int64_t positions;
	store *db = game_store(dir, path, 12, &positions);
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 2);
	learner_options lo = learner_options_default();
	lo.train.batch = 16;
	learner *L = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(L, "%s", err);
	int64_t last = 0;
	int added = 0;
	cr_assert_eq(learner_refill(L, db, NULL, 100000, &last, &added, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(added, 12);
	cr_assert_eq(last, 12, "the newest game id");
	cr_assert_eq(learner_positions(L), positions);
	cr_assert_eq(learner_refill(L, db, NULL, 100000, &last, &added, err, sizeof(err)), 0);
	cr_assert_eq(added, 0, "nothing new");
	cr_assert_eq(learner_positions(L), positions);
	learner_free(L);
	nn_net_free(net);
	store_close(db);
	remove_dir(dir);
}

typedef struct refill_rank {
	learner *L;   /* this rank's learner */
	store *db;    /* rank 0's store, NULL elsewhere */
	comm *c;      /* this rank */
	int added;    /* games added */
	int64_t last; /* newest id */
	int rc;       /* learner_refill's */
} refill_rank;

static void *refill_main(void *p)
{
	refill_rank *r = p;
	char err[256];
	r->last = 0;
	r->rc = learner_refill(r->L, r->db, r->c, 100000, &r->last, &r->added, err, sizeof(err));
	return NULL;
}

Test(learner, refill_over_thread_ranks_equals_one_process)
{
	char dir[] = "/tmp/sente-learner-XXXXXX", path[600], err[512];
	int64_t positions;
	store *db = game_store(dir, path, 9, &positions);
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 2);
	learner_options lo = learner_options_default();
	lo.train.batch = 8;
	comm_group *g = comm_group_new(2);
	refill_rank rk[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		rk[i] = (refill_rank){ .db = i == 0 ? db : NULL, .c = comm_group_rank(g, i) };
		rk[i].L = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
		cr_assert(rk[i].L, "%s", err);
		pthread_create(&th[i], NULL, refill_main, &rk[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* The same window on both ranks, so the same draws give the same
	 * batch: one step each from the same RNG must see the same loss. */
	train_stats s[2];
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rk[i].rc, 0);
		cr_assert_eq(rk[i].added, 9);
		cr_assert_eq(rk[i].last, 9);
		cr_assert_eq(learner_positions(rk[i].L), positions);
		cr_assert_eq(learner_step(rk[i].L, 8, 0, &s[i]), 0);
	}
	cr_assert_eq(s[0].loss, s[1].loss, "the same batch on both ranks");
	for (int i = 0; i < 2; i++)
		learner_free(rk[i].L);
	comm_group_free(g);
	nn_net_free(net);
	store_close(db);
	remove_dir(dir);
}

/* ---- several ranks led by one ------------------------------------------------ */

typedef struct follow_arg {
	comm *c;        /* the follower's rank */
	int rc;         /* learner_follow's outcome */
	char err[512];  /* its message */
} follow_arg;

static void *follow_rank(void *p)
{
	follow_arg *a = p;
	a->rc = learner_follow(a->c, &learner_cpu, a->err, sizeof(a->err));
	return NULL;
}

/* What one learner is told, from the same start: 20 games, a narrowed
 * window, 3 steps of a global batch of 16. */
static void lead_script(learner *L, int global)
{
	add_random_games(L, 20, 5);
	cr_assert_eq(learner_set_window(L, 400), 0);
	train_stats st;
	for (int i = 0; i < 3; i++)
		cr_assert_eq(learner_step(L, global, 0, &st), 0, "%s", learner_error(L));
}

/* Rank 0 leading a follower thread trains as one learner of the whole
 * batch does: the follower receives the games and trains the other half
 * of every global batch, their gradients meet in the all-reduce (a
 * follower that trained rank 0's half instead moves the weights 0.64 of
 * the update away; the right one 1e-6). The batch-norm recomputation runs
 * on both ranks (a follower that skipped it would leave rank 0 waiting in
 * its all-reduce). */
Test(learner, a_follower_trains_the_other_half_of_each_batch, .timeout = 120)
{
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 2);
	learner_options lo = learner_options_default();
	lo.window = 500;
	char err[512];
	/* One learner, the whole batch. */
	lo.train.batch = 16;
	learner *one = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(one, "%s", err);
	lead_script(one, 16);
	/* Two ranks, half each. */
	comm_group *g = comm_group_new(2);
	cr_assert(g);
	follow_arg fa = { .c = comm_group_rank(g, 1) };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, follow_rank, &fa), 0);
	lo.train.batch = 8;
	learner *lead = learner_new(&learner_cpu, net, &lo, err, sizeof(err));
	cr_assert(lead, "%s", err);
	cr_assert_eq(learner_lead(lead, comm_group_rank(g, 0), &lo, err, sizeof(err)), 0, "%s", err);
	lead_script(lead, 16);
	cr_assert_eq(learner_steps(lead), 3);
	nn_net *a = learner_net(one), *b = learner_net(lead);
	double d = tu_update_difference(net->data, a->data, b->data, net->n_floats);
	cr_assert_lt(d, TU_SAME_UPDATE, "two ranks' update differs from one learner's by %g", d);
	cr_assert_eq(learner_recompute_bn(lead, 2), 0, "%s", learner_error(lead));
	learner_free(lead); /* ends the follower */
	pthread_join(th, NULL);
	cr_assert_eq(fa.rc, 0, "%s", fa.err);
	comm_group_free(g);
	learner_free(one);
	nn_net_free(net);
}

/* A follower refuses what no leader sends: a command before the set-up,
 * or a command too short to read, with a message (its caller then ends
 * the job). */
Test(learner, a_follower_refuses_bad_commands)
{
	static const struct {
		int32_t kind, pad;
		int64_t arg;
	} step = { 3, 0, 16 }; /* LEAD_STEP, before any LEAD_INIT */
	for (int k = 0; k < 2; k++) {
		comm_group *g = comm_group_new(2);
		cr_assert(g);
		comm *lead = comm_group_rank(g, 0);
		/* learner.c's LEAD_TAG */
		cr_assert_eq(comm_send(lead, &step, k ? 5 : sizeof(step), 1, 77), 0);
		char err[256] = "";
		cr_assert_eq(learner_follow(comm_group_rank(g, 1), &learner_cpu, err, sizeof(err)), -1);
		cr_assert(strstr(err, k ? "5-byte command" : "before the set-up"), "%s", err);
		comm_group_free(g);
	}
}
