/* The learner's session (train/session.h) called directly: one rank trains
 * and exports on a run's folder and resumes from its checkpoint; two ranks
 * that are threads of this process take the same steps as one; options
 * that do not fit the ranks, and a window too small for a batch, are
 * refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/store.h"
#include "tests/loop/loop_util.h"
#include "tests/train/train_util.h"
#include "train/checkpoint.h"
#include "train/session.h"
#include "train/trainer.h"

/* A run's folder holding the games of one tiny self-play phase. */
static void make_run(char *dir)
{
	char err[1024];
	cr_assert(mkdtemp(dir));
	loop_options o = loop_test_options(dir);
	o.positions_per_iter = 200;
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	cr_assert_geq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	loop_close(r);
}

static train_session_options small(const char *dir)
{
	train_session_options o = train_session_options_default();
	o.dir = dir;
	o.steps = 6;
	o.export_steps = 3;
	o.batch = 32;
	o.threads = 1;
	return o;
}

static int64_t latest_model(const char *dir, int64_t *step)
{
	char path[512], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t id = 0;
	cr_assert_eq(store_latest_model(db, &id, NULL, 0, step), 1);
	store_close(db);
	return id;
}

Test(session, one_rank_trains_exports_and_resumes, .timeout = 240)
{
	char dir[] = "/tmp/sente-session-XXXXXX";
	make_run(dir);
	int64_t step0;
	int64_t id0 = latest_model(dir, &step0);
	train_session_options o = small(dir);
	comm *c = comm_new_single();
	cr_assert_eq(train_session_run(&o, c, NULL), TRAIN_SESSION_OK);
	int64_t step1;
	int64_t id1 = latest_model(dir, &step1);
	cr_assert_eq(id1, id0 + 2, "a model every 3 steps");
	/* The run's checkpoint was at step 0 (no iteration trained): the
	 * session resumed from it. */
	cr_assert_eq(step1, step0 + 6);
	cr_assert_eq(train_session_run(&o, c, NULL), TRAIN_SESSION_OK);
	int64_t step2;
	latest_model(dir, &step2);
	cr_assert_eq(step2, step1 + 6, "resumed from the checkpoint");
	comm_free(c);
	loop_test_rmdir(dir);
}

typedef struct rank_arg {
	train_session_options o; /* the session */
	comm *c;                 /* this rank */
	int rc;                  /* its outcome */
} rank_arg;

static void *rank_main(void *p)
{
	rank_arg *a = p;
	a->rc = train_session_run(&a->o, a->c, NULL);
	return NULL;
}

/* The weights of the checkpoint at `path`, copied. */
static float *checkpoint_weights(const char *path, size_t *n)
{
	char err[512];
	nn_net *net = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(net, "%s", err);
	*n = net->n_floats;
	float *w = malloc(*n * sizeof(float));
	memcpy(w, net->data, *n * sizeof(float));
	nn_net_free(net);
	return w;
}

/* The checkpoint's weights after a session of `ranks` thread-ranks on a
 * copy of `src`. */
static float *train_copy(const char *src, int ranks, size_t *n)
{
	char dir[] = "/tmp/sente-session-XXXXXX", cmd[600];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'/", src, dir);
	cr_assert_eq(system(cmd), 0);
	comm_group *g = comm_group_new(ranks);
	rank_arg a[2];
	pthread_t th[2];
	for (int i = 0; i < ranks; i++) {
		a[i].o = small(dir);
		a[i].c = comm_group_rank(g, i);
		cr_assert_eq(pthread_create(&th[i], NULL, rank_main, &a[i]), 0);
	}
	for (int i = 0; i < ranks; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(a[i].rc, TRAIN_SESSION_OK, "rank %d of %d", i, ranks);
	}
	comm_group_free(g);
	char ckpt[600];
	snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/learner.ckpt", dir);
	float *w = checkpoint_weights(ckpt, n);
	loop_test_rmdir(dir);
	return w;
}

Test(session, two_thread_ranks_take_one_ranks_steps, .timeout = 240)
{
	char dir[] = "/tmp/sente-session-XXXXXX", ckpt[600];
	make_run(dir);
	snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/learner.ckpt", dir);
	size_t n0, n1, n2;
	float *start = checkpoint_weights(ckpt, &n0);
	float *one = train_copy(dir, 1, &n1);
	float *two = train_copy(dir, 2, &n2);
	cr_assert_eq(n1, n2);
	cr_assert_eq(n0, n1);
	/* The two ranks' update (weights after the 6 steps less those
	 * before) must be one rank's (train_util.h says how close). */
	double d = tu_update_difference(start, one, two, n1);
	free(start);
	free(one);
	free(two);
	cr_assert_lt(d, TU_SAME_UPDATE, "two ranks' update differs from one rank's by %.3g of its size",
		     d);
	loop_test_rmdir(dir);
}

Test(session, refusals)
{
	char dir[] = "/tmp/sente-session-XXXXXX";
	cr_assert(mkdtemp(dir));
	train_session_options o = small(dir);
	o.log = fopen("/dev/null", "w");
	comm *c = comm_new_single();
	/* An empty run: no positions to train on. */
	cr_assert_eq(train_session_run(&o, c, NULL), TRAIN_SESSION_FAILED);
	/* A batch of 1 leaves batch norm nothing to normalise over. */
	o.batch = 1;
	cr_assert_eq(train_session_run(&o, c, NULL), TRAIN_SESSION_USAGE);
	comm_free(c);
	/* Two ranks, an odd batch: both say it is a usage error. */
	comm_group *g = comm_group_new(2);
	rank_arg a[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		a[i].o = small(dir);
		a[i].o.batch = 33;
		a[i].c = comm_group_rank(g, i);
		pthread_create(&th[i], NULL, rank_main, &a[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(a[i].rc, TRAIN_SESSION_USAGE);
	}
	comm_group_free(g);
	fclose(o.log);
	loop_test_rmdir(dir);
}
