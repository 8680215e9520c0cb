/* The self-play worker on a temporary store: games stored with the
 * worker's name and model, a model registered mid-run taken up, and the
 * set-ups it refuses. Tiny 1x8 Connect Four networks, few visits. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "selfplay/worker.h"

/* A temporary folder with a store and two model files. */
typedef struct fixture {
	char dir[64];
	char db_path[128];
	char model_a[128], model_b[128];
} fixture;

static void save_net(const char *path, uint64_t seed)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&gp, 1, 8);
	char err[256];
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
}

static void fixture_make(fixture *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/sente-worker-XXXXXX");
	cr_assert(mkdtemp(f->dir));
	snprintf(f->db_path, sizeof(f->db_path), "%s/sente.db", f->dir);
	snprintf(f->model_a, sizeof(f->model_a), "%s/a.sente", f->dir);
	snprintf(f->model_b, sizeof(f->model_b), "%s/b.sente", f->dir);
	save_net(f->model_a, 1);
	save_net(f->model_b, 2);
}

static void fixture_remove(fixture *f)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	cr_assert_eq(system(cmd), 0);
}

/* Small and quick: two games at once, 8 full visits a move, one thread. */
static selfplay_worker_options tiny_options(void)
{
	selfplay_worker_options o = selfplay_worker_options_default();
	o.play.parallel_games = 2;
	o.play.batch = 2;
	o.play.visits = 8;
	o.play.cheap_visits = 0;
	o.play.progress_seconds = 0;
	o.play.quiet = true;
	o.play.nn.threads = 1;
	o.play.nn.kind = NN_BACKEND_CPU;
	o.play.seed = 5;
	return o;
}

/* Stored games by model, and whether every one carries `name`. */
typedef struct tally {
	int64_t model[3];   /* the models counted */
	int games[3];       /* games with model[i] */
	int other;          /* games with another model */
	const char *name;   /* the worker name expected, or NULL */
	int misnamed;       /* games with another worker name */
} tally;

static int tally_game(void *ctx, const store_game_info *g)
{
	tally *t = ctx;
	int i = 0;
	while (i < 3 && t->model[i] != g->model_id)
		i++;
	if (i < 3)
		t->games[i]++;
	else
		t->other++;
	t->misnamed += t->name && strcmp(t->name, g->worker) != 0;
	return 0;
}

static void tally_store(store *db, tally *t)
{
	cr_assert(store_list_games(db, 0, 0, tally_game, t) >= 0, "%s", store_errmsg(db));
}

Test(selfplay_worker, model_file_games_are_stored)
{
	fixture f;
	fixture_make(&f);
	char err[256];
	store *db = store_open(f.db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	selfplay_worker_options o = tiny_options();
	o.weights = f.model_a;
	o.name = "tester-1";
	o.games = 6;
	selfplay_worker_result r;
	cr_assert_eq(selfplay_worker_run(db, &o, &r), SELFPLAY_WORKER_OK);
	cr_assert(r.started);
	cr_assert_eq(r.stats.games, 6);
	cr_assert(r.stats.evals > 0, "the model evaluated positions");
	cr_assert_eq(r.game.kind, GAME_KIND_CONNECT4);
	cr_assert_eq(r.model_id, 0, "a file is no model of the store");
	cr_assert_eq(r.store_failures, 0);
	tally t = { .model = { 0, -1, -1 }, .name = "tester-1" };
	tally_store(db, &t);
	cr_assert_eq(t.games[0], 6);
	cr_assert_eq(t.other, 0);
	cr_assert_eq(t.misnamed, 0);
	store_close(db);
	fixture_remove(&f);
}

/* Registers model B once two games are stored, and stops the worker once
 * a game of B's is stored (or after a minute). */
typedef struct registrar {
	const fixture *f;
	int64_t id_b;                 /* out: B's id, 0 until registered */
	volatile sig_atomic_t stop;   /* the worker's stop flag */
} registrar;

static void *registrar_main(void *p)
{
	registrar *g = p;
	char err[256];
	store *db = store_open(g->f->db_path, err, sizeof(err));
	for (int i = 0; db && i < 3000 && !g->stop; i++) {
		usleep(20000);
		int64_t games = 0, positions;
		if (store_count(db, &games, &positions) != 0)
			continue;
		if (!g->id_b && games >= 2)
			store_add_model(db, g->f->model_b, 0, 200, "mid-run", &g->id_b);
		tally t = { .model = { g->id_b, -1, -1 } };
		if (g->id_b && store_list_games(db, 0, 0, tally_game, &t) >= 0 && t.games[0] > 0)
			break;
	}
	g->stop = 1;
	store_close(db);
	return NULL;
}

Test(selfplay_worker, newer_model_is_taken_up)
{
	fixture f;
	fixture_make(&f);
	char err[256];
	store *db = store_open(f.db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t id_a;
	cr_assert_eq(store_add_model(db, f.model_a, 0, 100, "first", &id_a), 0);
	registrar g = { .f = &f };
	selfplay_worker_options o = tiny_options();
	o.poll_seconds = 0; /* look after every game */
	o.stop = &g.stop;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, registrar_main, &g), 0);
	selfplay_worker_result r;
	int rc = selfplay_worker_run(db, &o, &r);
	g.stop = 1;
	pthread_join(th, NULL);
	cr_assert_eq(rc, SELFPLAY_WORKER_OK);
	cr_assert(g.id_b > id_a, "B was registered");
	cr_assert_eq(r.model_id, g.id_b, "the worker ends on B");
	cr_assert_eq(r.models_taken, 1);
	tally t = { .model = { id_a, g.id_b, -1 } };
	tally_store(db, &t);
	cr_assert(t.games[0] >= 2, "%d games with A", t.games[0]);
	cr_assert(t.games[1] >= 1, "%d games with B", t.games[1]);
	cr_assert_eq(t.other, 0);
	store_close(db);
	fixture_remove(&f);
}

Test(selfplay_worker, refuses_a_model_of_another_game)
{
	fixture f;
	fixture_make(&f);
	char err[256], *text = NULL;
	size_t len = 0;
	store *db = store_open(f.db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	selfplay_worker_options o = tiny_options();
	o.log = open_memstream(&text, &len);
	cr_assert(o.log);
	o.weights = f.model_a;
	o.play.game = game_params_default(GAME_KIND_GO);
	o.game_fixed = true;
	selfplay_worker_result r;
	cr_assert_eq(selfplay_worker_run(db, &o, &r), SELFPLAY_WORKER_FAILED);
	cr_assert_not(r.started);
	o.weights = "/nonexistent/model.sente";
	o.game_fixed = false;
	cr_assert_eq(selfplay_worker_run(db, &o, &r), SELFPLAY_WORKER_FAILED);
	fclose(o.log);
	cr_assert(strstr(text, "sente selfplay: the model plays connect4, not go"), "%s", text);
	cr_assert(strstr(text, "/nonexistent/model.sente"), "%s", text);
	free(text);
	int64_t games, positions;
	cr_assert_eq(store_count(db, &games, &positions), 0);
	cr_assert_eq(games, 0);
	store_close(db);
	fixture_remove(&f);
}
