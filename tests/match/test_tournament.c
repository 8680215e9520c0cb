/* Tournaments as a library call: a round-robin and a gauntlet of tiny
 * models, the standings, resumption, and a match that cannot be played. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/store.h"
#include "match/tournament.h"
#include "nn/net.h"

static char dir[64], db_path[128];
static match_player pl[3];

/* A tiny 9x9 Go network with random weights and a learner step, as a player. */
static void make_player(int i, uint64_t step)
{
	char err[256], path[160];
	snprintf(path, sizeof(path), "%s/%c.sente", dir, 'a' + i);
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, (uint64_t)i + 1);
	net->meta.train_step = step;
	cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
	cr_assert_eq(match_player_parse(path, NULL, &pl[i], err, sizeof(err)), 0, "%s", err);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sente-tourn-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/t.db", dir);
	for (int i = 0; i < 3; i++)
		make_player(i, 100 * ((uint64_t)i + 1));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(tournament, .init = setup, .fini = teardown, .timeout = 120);

/* Counts the callbacks: before (no summary) and after each match. */
typedef struct calls {
	int before, after;
} calls;

static void count_match(void *ctx, const match_player *a, const match_player *b,
			const match_summary *s)
{
	calls *c = ctx;
	cr_assert(a != b);
	if (s)
		c->after++;
	else
		c->before++;
}

static tournament_options small_options(calls *c)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	tournament_options o = { .match = match_options_default(&gp), .on_match = count_match,
				 .match_ctx = c };
	o.match.games = 2;
	o.match.parallel = 2;
	o.match.visits = 4;
	o.match.max_moves = 60;
	o.match.nn_threads = 1;
	o.match.resign_pct = 0;
	return o;
}

static int count_games(void *ctx, const store_match *m)
{
	*(int *)ctx += m->games;
	return 0;
}

Test(tournament, round_robin_rates_everyone)
{
	char err[1024];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	calls c = { 0 };
	tournament_options o = small_options(&c);
	static tournament_result r;
	cr_assert_eq(tournament_run(db, pl, 3, &o, &r, err, sizeof(err)), TOURNAMENT_DONE, "%s", err);
	cr_assert_eq(r.matches, 3);
	cr_assert_eq(c.before, 3);
	cr_assert_eq(c.after, 3);
	cr_assert_eq(r.players, 3);
	int seen = 0;
	for (int k = 0; k < 3; k++) {
		const tournament_standing *t = &r.standings[k];
		seen |= 1 << t->player;
		cr_assert_float_eq(t->games, 4, 1e-9, "each plays two matches of two games");
		cr_assert(t->player == 0 || t->se > 0, "an interval but for the anchor's");
		if (k > 0)
			cr_assert(t->elo <= r.standings[k - 1].elo, "best first");
		if (t->player == 0)
			cr_assert_float_eq(t->elo, 0, 1e-6, "player 0 is the anchor");
	}
	cr_assert_eq(seen, 7);
	double points = r.standings[0].points + r.standings[1].points + r.standings[2].points;
	cr_assert_float_eq(points, 6, 1e-9, "six games, a point each");
	int games = 0;
	store_list_matches(db, count_games, &games);
	cr_assert_eq(games, 6);
	store_close(db);
}

Test(tournament, gauntlet_plays_the_base_only_and_resumes)
{
	char err[1024];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	calls c = { 0 };
	tournament_options o = small_options(&c);
	o.gauntlet = true;
	static tournament_result r, again;
	cr_assert_eq(tournament_run(db, pl, 3, &o, &r, err, sizeof(err)), TOURNAMENT_DONE, "%s", err);
	cr_assert_eq(r.matches, 2);
	for (int k = 0; k < 3; k++)
		cr_assert_float_eq(r.standings[k].games, r.standings[k].player == 0 ? 4 : 2, 1e-9);
	/* The same tournament again finds every game stored and plays none. */
	cr_assert_eq(tournament_run(db, pl, 3, &o, &again, err, sizeof(err)), TOURNAMENT_DONE, "%s",
		     err);
	int games = 0;
	store_list_matches(db, count_games, &games);
	cr_assert_eq(games, 4);
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(again.standings[k].player, r.standings[k].player);
		cr_assert_float_eq(again.standings[k].elo, r.standings[k].elo, 1e-9);
	}
	store_close(db);
}

Test(tournament, a_match_that_cannot_be_played_fails_with_its_players)
{
	char err[1024];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	calls c = { 0 };
	tournament_options o = small_options(&c);
	o.match.game.size = 7; /* the models are 9x9 */
	static tournament_result r;
	cr_assert_eq(tournament_run(db, pl, 3, &o, &r, err, sizeof(err)), TOURNAMENT_FAILED);
	cr_assert(strstr(err, pl[0].spec) && strstr(err, " against "), "%s", err);
	cr_assert_eq(r.matches, 0);
	store_close(db);
}
