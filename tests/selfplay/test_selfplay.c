/* Self-play: games finish with valid records, many games share batches,
 * a model swap between games, stop flags. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "engine/game_desc.h"
#include "nn/cpu/peak.h"
#include "search/mcts.h"
#include "selfplay/selfplay.h"
#include "selfplay/worker.h"

typedef struct collected {
	int games;
	int positions;
	int bad;             /* records that did not round-trip or replay */
	int64_t model_ids[64]; /* model of each game */
	selfplay *sp;        /* for the model swap test */
	nn_net *swap_to;     /* swap after the first game when set */
} collected;

static int on_game(void *ctx, const game_record *r, int64_t model_id)
{
	collected *c = ctx;
	uint8_t *blob = NULL;
	size_t len = 0;
	game_record back;
	char err[128];
	static game g;
	if (record_encode(r, &blob, &len) != 0 || record_decode(blob, len, &back, err, sizeof(err)) != 0) {
		c->bad++;
	} else {
		if (back.n_moves != r->n_moves || back.result != r->result ||
		    record_replay(&back, -1, &g) != 0 || (!game_is_over(&g) && r->resigned < 0) ||
		    (r->resigned < 0 && game_result(&g) != r->result))
			c->bad++;
		record_free(&back);
	}
	free(blob);
	if (c->games < 64)
		c->model_ids[c->games] = model_id;
	c->games++;
	c->positions += record_full_count(r);
	if (c->swap_to && c->games == 1)
		selfplay_set_model(c->sp, c->swap_to, 7, err, sizeof(err));
	return 0;
}

/* Quiet self-play options of game gp without a network: 4 games at
 * once, `visits` full visits, no cheap searches (every move searched
 * fully), no progress lines. */
static selfplay_options quiet_options(const game_params *gp, int visits)
{
	selfplay_options o = selfplay_options_default(gp);
	o.parallel_games = 4;
	o.visits = visits;
	o.cheap_visits = 0;
	o.progress_seconds = 0;
	o.quiet = true;
	return o;
}

/* Self-play with options o; the test fails if it cannot start. */
static selfplay *started(const selfplay_options *o)
{
	char err[256];
	selfplay *sp = selfplay_new(o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	return sp;
}

/* Quiet self-play of Connect Four without a network: 4 games at once,
 * 30 full and 8 cheap visits, with Gumbel root search when asked, every
 * move searched from the first (no random opening). */
static selfplay *uniform_c4(bool gumbel)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = quiet_options(&gp, 30);
	o.cheap_visits = 8;
	o.explore.gumbel = gumbel;
	o.explore.random_opening = 0;
	return started(&o);
}

Test(selfplay, connect4_uniform_games_are_recorded)
{
	selfplay *sp = uniform_c4(false);
	collected c = { 0 };
	int64_t n = selfplay_run(sp, 10, 0, on_game, &c, NULL);
	cr_assert_eq(n, 10);
	cr_assert_eq(c.games, 10);
	cr_assert_eq(c.bad, 0, "%d records did not round-trip or replay", c.bad);
	selfplay_stats st;
	selfplay_get_stats(sp, &st);
	cr_assert_eq(st.games, 10);
	cr_assert_eq(st.positions, c.positions);
	/* About a quarter of the moves get the full search. */
	double frac = (double)st.positions / (double)st.moves;
	cr_assert(frac > 0.08 && frac < 0.5, "full-search fraction %.2f", frac);
	cr_assert_eq(st.wins[0] + st.wins[1] + st.wins[2], 10);
	selfplay_free(sp);
}

/* A small random Connect Four network, and options for 8 games at once
 * of 24 visits with every move recorded (no random opening), on one
 * network thread. */
static nn_net *small_c4_net(selfplay_options *o)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	char err[256];
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 3);
	*o = selfplay_options_default(&gp);
	o->parallel_games = 8;
	o->batch = 8;
	o->visits = 24;
	o->cheap_visits = 0; /* every move recorded */
	o->explore.random_opening = 0;
	o->progress_seconds = 0;
	o->quiet = true;
	o->nn.threads = 1;
	return net;
}

Test(selfplay, parallel_games_share_batches_and_swap_models)
{
	char err[256];
	selfplay_options o;
	nn_net *net = small_c4_net(&o);
	/* No time limit on the fill wait (a minute stands for none): a short
	 * batch then runs only when every game in a search is blocked on its
	 * answer, so the batch sizes depend on how the games interleave, not
	 * on how fast a loaded machine runs them. With the default 3 ms a
	 * preempted game thread let batches of one through (mean 1.32 seen
	 * under load 10). */
	o.fill_wait_us = 60 * 1000 * 1000;
	selfplay *sp = selfplay_new(&o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	cr_assert_eq(selfplay_set_model(sp, net, 3, err, sizeof(err)), 0, "%s", err);
	collected c = { .sp = sp, .swap_to = net };
	int64_t n = selfplay_run(sp, 24, 0, on_game, &c, NULL);
	cr_assert_eq(n, 24);
	cr_assert_eq(c.bad, 0);
	selfplay_stats st;
	selfplay_get_stats(sp, &st);
	cr_assert_eq(st.positions, st.moves, "cheap searches off: every move is a position");
	cr_assert(st.batches > 0 && (double)st.evals / (double)st.batches > 2.0,
		  "8 games at once must share batches: mean %.2f",
		  st.batches ? (double)st.evals / (double)st.batches : 0.0);
	int later = 0;
	for (int i = 0; i < 24; i++)
		later += c.model_ids[i] == 7;
	cr_assert(later > 0, "games started after the swap use the new model");
	cr_assert_eq(c.model_ids[0], 3);
	selfplay_free(sp);
	nn_net_free(net);
}

/* carry_games: a run ends once it has its games, the games under way go
 * on in the next run with the newest model, and their records hold the
 * whole game. */
Test(selfplay, games_under_way_carry_into_the_next_run)
{
	char err[256];
	selfplay_options o;
	nn_net *net = small_c4_net(&o);
	o.carry_games = true;
	selfplay *sp = selfplay_new(&o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	cr_assert_eq(selfplay_set_model(sp, net, 3, err, sizeof(err)), 0, "%s", err);
	collected c = { 0 };
	int64_t n = selfplay_run(sp, 3, 0, on_game, &c, NULL);
	cr_assert(n >= 3 && n < 8, "%lld games finished", (long long)n);
	int carried = selfplay_carried(sp);
	/* The places of finished games took new ones while the run went on. */
	cr_assert(carried >= 8 - (int)n && carried <= 8, "%d games carried, %lld finished", carried, (long long)n);
	selfplay_stats st1, st2;
	selfplay_get_stats(sp, &st1);
	cr_assert_eq(selfplay_set_model(sp, net, 7, err, sizeof(err)), 0, "%s", err);
	/* The carried games' model still counts its evaluations, once. */
	selfplay_get_stats(sp, &st2);
	cr_assert_eq(st2.evals, st1.evals);
	cr_assert_eq(st2.requests, st1.requests);
	collected c2 = { 0 };
	n = selfplay_run(sp, 12, 0, on_game, &c2, NULL);
	cr_assert(n >= 12, "%lld games finished", (long long)n);
	cr_assert_eq(c.bad + c2.bad, 0, "records that did not round-trip or replay");
	for (int i = 0; i < c2.games && i < 64; i++)
		cr_assert_eq(c2.model_ids[i], 7, "game %d of the second run: model %lld", i,
			     (long long)c2.model_ids[i]);
	selfplay_stats st;
	selfplay_get_stats(sp, &st);
	cr_assert(st.evals > st1.evals);
	cr_assert_eq(st.games, c.games + c2.games);
	cr_assert_eq(st.positions, (int64_t)(c.positions + c2.positions));
	selfplay_free(sp); /* drops the games still under way */
	nn_net_free(net);
}

/* What resignation looks at, per the rule in selfplay.h: past the opening
 * (8 plies of Connect Four), the highest winrate (percent) of a player's
 * last three searches; its lowest value over the game for the winner (for
 * a draw, the lower of both players'). */
typedef struct winner_mins {
	int n;
	float v[128];
	int resigned, early; /* games resigned; of those, before the rule allows */
	int long_unresigned; /* games that went past ply 12 without resigning */
} winner_mins;

static int on_game_mins(void *ctx, const game_record *r, int64_t model_id)
{
	winner_mins *w = ctx;
	float m[2] = { 100, 100 }, last[2][3];
	int n[2] = { 0, 0 };
	for (int i = 8; i < r->n_moves; i++) {
		int p = i % 2;
		last[p][n[p]++ % 3] = (r->root_value[i] + 1) * 50;
		if (n[p] >= 3)
			m[p] = fminf(m[p], fmaxf(last[p][0], fmaxf(last[p][1], last[p][2])));
	}
	if (r->resigned < 0 && r->n_moves > 12)
		w->long_unresigned++;
	if (r->resigned >= 0) {
		w->resigned++;
		/* Own searches at plies 8, 10 and 12 at the earliest. */
		w->early += r->n_moves < 12;
	}
	if (w->n < 128)
		w->v[w->n++] = r->result > 0 ? m[0] : r->result < 0 ? m[1] : fminf(m[0], m[1]);
	(void)model_id;
	return 0;
}

static selfplay *resign_selfplay(nn_net *net, double no_resign_fraction)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = selfplay_options_default(&gp);
	o.parallel_games = 8;
	o.batch = 8;
	o.visits = 24;
	o.cheap_visits = 0;
	o.resign_pct = 100; /* every position qualifies: only the rule holds games back */
	o.no_resign_fraction = no_resign_fraction;
	o.progress_seconds = 0;
	o.quiet = true;
	o.nn.threads = 1;
	char err[256];
	selfplay *sp = selfplay_new(&o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	cr_assert_eq(selfplay_set_model(sp, net, 1, err, sizeof(err)), 0, "%s", err);
	return sp;
}

Test(selfplay, resignation_waits_for_calibration)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	char err[256];
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 5);

	/* Fewer than 50 no-resign games: nobody resigns, although the cap
	 * (100%) is crossed in every game. */
	selfplay *sp = resign_selfplay(net, 0.5);
	winner_mins w = { 0 };
	cr_assert_eq(selfplay_run(sp, 40, 0, on_game_mins, &w, NULL), 40);
	selfplay_stats st;
	selfplay_get_stats(sp, &st);
	cr_assert_eq(st.resigned, 0, "%lld games resigned before calibration", (long long)st.resigned);
	cr_assert_float_eq(selfplay_resign_threshold(sp), 0.0f, 0);
	selfplay_free(sp);

	/* 60 no-resign games: the threshold would have resigned at most 5% of
	 * them in a position their side went on to win or draw. */
	sp = resign_selfplay(net, 1.0);
	w.n = 0;
	cr_assert_eq(selfplay_run(sp, 60, 0, on_game_mins, &w, NULL), 60);
	float t = selfplay_resign_threshold(sp);
	cr_assert(t > 0 && t < 100, "threshold %.2f", t);
	int false_resigns = 0;
	for (int i = 0; i < w.n; i++)
		false_resigns += w.v[i] < t;
	cr_assert(false_resigns <= 3, "%d of 60 games would have resigned falsely at %.2f%%",
		  false_resigns, t);
	selfplay_get_stats(sp, &st);
	cr_assert_eq(st.resigned, 0);
	selfplay_free(sp);

	/* Without no-resign games the cap is the threshold: at 100% every game
	 * that is not over by ply 12 resigns there (the first player's third
	 * search past the opening), never earlier. */
	sp = resign_selfplay(net, 0);
	memset(&w, 0, sizeof(w));
	cr_assert_eq(selfplay_run(sp, 30, 0, on_game_mins, &w, NULL), 30);
	cr_assert(w.resigned > 0);
	cr_assert_eq(w.long_unresigned, 0, "%d games went on past the first chance to resign",
		     w.long_unresigned);
	cr_assert_eq(w.early, 0, "%d games resigned in the opening", w.early);
	selfplay_free(sp);
	nn_net_free(net);
}

/* Counts, over a record, the passes made by a player that was behind on
 * the area count with another legal move at hand that fills none of its
 * own eyes. */
typedef struct pass_check {
	int games, passes, losing_passes;
} pass_check;

static int on_game_passes(void *ctx, const game_record *r, int64_t model_id)
{
	pass_check *c = ctx;
	static game g;
	game_init(&g, &r->params);
	for (int i = 0; i < r->n_moves; i++) {
		int mv = r->moves[i];
		if (mv == game_pass_move(&g)) {
			c->passes++;
			int moves[GAME_MAX_ACTIONS];
			double sc = game_score(&g);
			bool behind = game_to_move(&g) == GAME_BLACK ? sc < 0 : sc > 0;
			int n = game_legal_moves(&g, moves), others = 0;
			for (int k = 0; k < n; k++)
				others += moves[k] != mv && !game_fills_own_eye(&g, moves[k]);
			if (behind && others > 0)
				c->losing_passes++;
		}
		game_play(&g, mv);
	}
	c->games++;
	(void)model_id;
	return 0;
}

Test(selfplay, no_pass_while_behind)
{
	/* The uniform evaluator gives pass as many visits as any move, so
	 * without the rule a player passes about once in 26 moves on 5x5,
	 * behind or not. */
	game_params gp = { .kind = GAME_KIND_GO, .size = 5, .komi = 7 };
	selfplay_options o = quiet_options(&gp, 30);
	o.explore.temperature_moves = 100; /* sample from the visits all game long */
	o.resign_pct = 0;
	selfplay *sp = started(&o);
	pass_check c = { 0 };
	cr_assert_eq(selfplay_run(sp, 12, 0, on_game_passes, &c, NULL), 12);
	selfplay_free(sp);
	cr_assert(c.passes > 0, "games end with passes");
	cr_assert_eq(c.losing_passes, 0, "%d of %d passes by a player behind on the count",
		     c.losing_passes, c.passes);
}

/* Self-play of 9x9 Go without a network, 50 visits, silent, whose first
 * run, with the stop flag already raised, plays no game. */
static selfplay *stopped_go9(int parallel_games, int games_per_thread, collected *c)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	selfplay_options o = selfplay_options_default(&gp);
	o.parallel_games = parallel_games;
	o.games_per_thread = games_per_thread;
	o.visits = 50;
	o.progress_seconds = 0;
	o.quiet = true;
	char err[256];
	selfplay *sp = selfplay_new(&o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	volatile sig_atomic_t stop = 1;
	cr_assert_eq(selfplay_run(sp, 0, 0, on_game, c, &stop), 0, "stopped before any game");
	return sp;
}

Test(selfplay, stop_flag_ends_the_run)
{
	collected c = { 0 };
	selfplay *sp = stopped_go9(2, 1, &c);
	volatile sig_atomic_t stop;
	stop = 0;
	cr_assert_eq(selfplay_run(sp, 0, 0.3, on_game, &c, &stop) >= 0, 1);
	cr_assert_eq(c.bad, 0);
	selfplay_free(sp);
}

Test(selfplay, temperature_schedule)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = selfplay_options_default(&p);
	/* Connect Four's default, AlphaZero.jl's: 1 to ply 20, falling to 0.3
	 * at ply 30, then 0.3 to the end. */
	for (int ply = 0; ply < 42; ply++) {
		double want = ply < 20 ? 1 : ply >= 30 ? 0.3 : 1 - 0.7 * (ply - 20) / 10.0;
		cr_assert_float_eq(selfplay_temperature(&o.explore, ply), want, 1e-9, "ply %d", ply);
	}
	/* Go's: 1 for as many plies as the board's size, then the most visited
	 * move. */
	game_params go = game_params_default(GAME_KIND_GO);
	selfplay_options g = selfplay_options_default(&go);
	cr_assert_eq(selfplay_temperature(&g.explore, go.size - 1), 1.0);
	cr_assert_eq(selfplay_temperature(&g.explore, go.size), 0.0);
	cr_assert_eq(selfplay_temperature(&g.explore, 80), 0.0);
	/* Connect Four's earlier schedule: 1 for 8 plies, falling to 0.2 at
	 * ply 20. */
	o.explore.temperature = 1;
	o.explore.temperature_moves = 8;
	o.explore.temperature_end = 20;
	o.explore.temperature_floor = 0.2;
	cr_assert_eq(selfplay_temperature(&o.explore, 7), 1.0);
	cr_assert_float_eq(selfplay_temperature(&o.explore, 14), 0.6, 1e-9);
	cr_assert_float_eq(selfplay_temperature(&o.explore, 20), 0.2, 1e-9);
	cr_assert_float_eq(selfplay_temperature(&o.explore, 41), 0.2, 1e-9);
	/* An end before the opening's last ply is a step. */
	o.explore.temperature_end = 5;
	cr_assert_eq(selfplay_temperature(&o.explore, 7), 1.0);
	cr_assert_eq(selfplay_temperature(&o.explore, 8), 0.2);
}

/* Exploring moves are marked in the record: within the temperature's
 * plies, exactly the moves that were not the search's most visited; none
 * after them, where the most visited is played. */
typedef struct explored_tally {
	int games, marked, checked, bad;
} explored_tally;

static int tally_explored(void *ctx, const game_record *r, int64_t model_id)
{
	(void)model_id;
	explored_tally *t = ctx;
	t->games++;
	for (int i = 0; i < r->n_moves; i++) {
		t->marked += r->explored[i];
		int best = -1, top = -1, ties = 0;
		for (int32_t v = r->visit_start[i]; v < r->visit_start[i + 1]; v++) {
			if (r->visits[v].count > top) {
				top = r->visits[v].count;
				best = r->visits[v].move;
				ties = 0;
			} else if (r->visits[v].count == top) {
				ties++;
			}
		}
		if (i >= 6 && r->explored[i])
			t->bad++;
		if (best < 0 || ties)
			continue; /* no visits kept, or no single most visited */
		t->checked++;
		if (r->explored[i] != (r->moves[i] != best))
			t->bad++;
	}
	return 0;
}

Test(selfplay, exploring_moves_are_marked)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = quiet_options(&gp, 30); /* every move keeps its visits */
	o.explore.temperature = 1;
	o.explore.temperature_moves = 6;
	o.explore.temperature_end = 6;
	o.explore.temperature_floor = 0;
	selfplay *sp = started(&o);
	explored_tally t = { 0 };
	cr_assert_eq(selfplay_run(sp, 12, 0, tally_explored, &t, NULL), 12);
	selfplay_free(sp);
	cr_assert_eq(t.bad, 0, "%d moves marked wrongly", t.bad);
	cr_assert_gt(t.marked, 0, "temperature 1 explores");
	cr_assert_lt(t.marked, 12 * 6, "not every opening move explores");
	cr_assert_gt(t.checked, 12 * 6, "most moves have a single most visited");
}

/* A worker learns its game from the first model: the schedule and cpuct it
 * was not given become that game's, what it was given stays. */
Test(selfplay, worker_takes_the_games_schedule)
{
	selfplay_explore x = selfplay_worker_options_default().play.explore;
	game_params go = game_params_default(GAME_KIND_GO);
	selfplay_explore_settle(&x, &go);
	cr_assert(x.temperature_moves == go.size && x.temperature_end == go.size);
	cr_assert_eq(x.temperature_floor, 0.0);
	cr_assert_eq(selfplay_temperature(&x, go.size), 0.0);
	cr_assert_float_eq(x.cpuct, mcts_options_default().cpuct, 1e-12);
	cr_assert_eq(x.random_opening, 0);

	x = selfplay_worker_options_default().play.explore;
	x.temperature_moves = 4;
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	selfplay_explore_settle(&x, &c4);
	cr_assert(x.temperature_moves == 4 && x.temperature_end == 30);
	cr_assert_float_eq(x.temperature_floor, 0.3, 1e-12);
	cr_assert_float_eq(x.cpuct, 2.0, 1e-12);
	cr_assert_eq(x.random_opening, 8);

	x = selfplay_worker_options_default().play.explore;
	x.cpuct = 1.5;
	selfplay_explore_settle(&x, &c4);
	cr_assert_float_eq(x.cpuct, 1.5, 1e-12);
}

/* Self-play's precision on the CPU: int8 where the CPU has VNNI unless a
 * precision is given (docs/LEARNING.md measured it), fp32 when asked. */
Test(selfplay, int8_by_default_where_the_cpu_has_vnni)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	char err[256], what[256];
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 3);
	for (int given = 0; given < 2; given++) {
		selfplay_options o = selfplay_options_default(&gp);
		o.quiet = true;
		o.nn.threads = 1;
		o.nn.kind = NN_BACKEND_CPU;
		if (given) {
			o.nn.precision = NN_DTYPE_FP32;
			o.nn.precision_given = 1;
		}
		selfplay *sp = selfplay_new(&o, err, sizeof(err));
		cr_assert(sp, "%s", err);
		cr_assert_eq(selfplay_set_model(sp, net, 1, err, sizeof(err)), 0, "%s", err);
		selfplay_backend(sp, what, sizeof(what));
		const char *want = !given && nn_cpu_fast_int8() ? "cpu int8" : "cpu fp32";
		cr_assert(!strncmp(what, want, strlen(want)), "precision %s: '%s', not '%s'",
			  given ? "fp32 given" : "default", what, want);
		selfplay_free(sp);
	}
	nn_net_free(net);
}

/* Games of one worker thread: what on_game sees, plus the visit counts of
 * every recorded move. */
typedef struct visit_sums {
	collected c;
	int want;     /* the visits each recorded move's counts must sum to */
	int bad_sums; /* recorded moves whose counts did not */
	int full_moves;
} visit_sums;

/* The counts of move i's target, summed. */
static int target_sum(const game_record *r, int i)
{
	int sum = 0;
	for (int k = r->visit_start[i]; k < r->visit_start[i + 1]; k++)
		sum += r->visits[k].count;
	return sum;
}

static int on_game_sums(void *ctx, const game_record *r, int64_t model_id)
{
	visit_sums *v = ctx;
	for (int i = 0; i < r->n_moves; i++) {
		if (!r->full[i])
			continue;
		int sum = target_sum(r, i);
		v->full_moves++;
		v->bad_sums += sum != v->want;
	}
	return on_game(&v->c, r, model_id);
}

Test(selfplay, one_thread_drives_several_games)
{
	char err[256];
	selfplay_options o;
	nn_net *net = small_c4_net(&o);
	o.games_per_thread = 8; /* one worker thread plays them all */
	o.cache_bytes = 0; /* every leaf reaches the network: batches are whole rounds */
	selfplay *sp = selfplay_new(&o, err, sizeof(err));
	cr_assert(sp, "%s", err);
	cr_assert_eq(selfplay_set_model(sp, net, 3, err, sizeof(err)), 0, "%s", err);
	visit_sums v = { .c = { .sp = sp, .swap_to = net }, .want = o.visits - 1 };
	int64_t n = selfplay_run(sp, 24, 0, on_game_sums, &v, NULL);
	cr_assert_eq(n, 24);
	cr_assert_eq(v.c.games, 24);
	cr_assert_eq(v.c.bad, 0, "%d records did not round-trip or replay", v.c.bad);
	/* The root's own evaluation aside, the root's children hold every
	 * visit of the search. */
	cr_assert(v.full_moves > 0);
	cr_assert_eq(v.bad_sums, 0, "%d of %d recorded moves' visits do not sum to %d", v.bad_sums,
		     v.full_moves, v.want);
	selfplay_stats st;
	selfplay_get_stats(sp, &st);
	cr_assert_eq(st.games, 24);
	cr_assert_eq(st.positions, st.moves, "cheap searches off: every move is a position");
	cr_assert_eq(st.wins[0] + st.wins[1] + st.wins[2], 24);
	/* One thread, one client of the evaluator: batches above 1 come only
	 * from the thread's own games evaluated together. */
	double mean = st.batches ? (double)st.evals / (double)st.batches : 0.0;
	cr_assert(mean > 4.0, "8 games on one thread must share batches: mean %.2f", mean);
	int later = 0;
	for (int i = 0; i < 24; i++)
		later += v.c.model_ids[i] == 7;
	cr_assert(later > 0, "games started after the swap use the new model");
	cr_assert_eq(v.c.model_ids[0], 3);
	selfplay_free(sp);
	nn_net_free(net);
}

/* Two compute threads and lanes left to self-play: two lanes of one
 * thread, the 8 games split over them (two worker threads of 4), so that
 * no batch holds more than a lane's 4 leaves and most hold all 4; with
 * one lane asked for, a thread per game and batches of up to 8. */
Test(selfplay, cpu_lanes_split_the_games)
{
	char err[256];
	selfplay_options o;
	nn_net *net = small_c4_net(&o);
	o.nn.threads = 2;
	/* The search's own cpuct: with Connect Four's self-play 2 this random
	 * network's one-lane batches averaged 3.8 to 6.2 leaves over four
	 * runs, against 5.2 to 6.4 (the loop's mean batch did not change:
	 * 15.1 and 15.2 at 90 CPU minutes). */
	o.explore.cpuct = mcts_options_default().cpuct;
	o.cache_bytes = 0; /* every leaf reaches the network */
	o.fill_wait_us = 60 * 1000 * 1000; /* as parallel_games_share_batches: no time limit */
	double mean[2];
	for (int k = 0; k < 2; k++) {
		o.nn.lanes = k ? 1 : 0;
		selfplay *sp = selfplay_new(&o, err, sizeof(err));
		cr_assert(sp, "%s", err);
		cr_assert_eq(selfplay_set_model(sp, net, 3, err, sizeof(err)), 0, "%s", err);
		char what[256];
		selfplay_backend(sp, what, sizeof(what));
		cr_assert_eq(strstr(what, "2 lanes of 1 thread") != NULL, k == 0, "%s", what);
		collected c = { .sp = sp };
		cr_assert_eq(selfplay_run(sp, 16, 0, on_game, &c, NULL), 16);
		cr_assert_eq(c.bad, 0, "%d records did not round-trip or replay", c.bad);
		selfplay_stats st;
		selfplay_get_stats(sp, &st);
		cr_assert_eq(st.games, 16);
		mean[k] = st.batches ? (double)st.evals / (double)st.batches : 0.0;
		selfplay_free(sp);
	}
	cr_assert(mean[0] > 3.0 && mean[0] <= 4.0, "two lanes of 4 games: mean batch %.2f", mean[0]);
	cr_assert(mean[1] > 4.0, "one lane, 8 games: mean batch %.2f", mean[1]);
	nn_net_free(net);
}

static void *raise_later(void *arg)
{
	volatile sig_atomic_t *stop = arg;
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	*stop = 1;
	return NULL;
}

Test(selfplay, several_games_per_thread_stop_promptly)
{
	collected c = { 0 };
	/* two workers: one of 4 games, one of 2 */
	selfplay *sp = stopped_go9(6, 4, &c);
	volatile sig_atomic_t stop;
	stop = 0;
	/* No game or time limit: only the flag, raised from another thread
	 * (as a signal would) after 0.3 s, ends the run. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, raise_later, (void *)&stop), 0);
	cr_assert_eq(selfplay_run(sp, 0, 0, on_game, &c, &stop) >= 0, 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(th, NULL);
	double dt = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	/* A game stops at the end of its search: 50 uniform visits take
	 * milliseconds, so the run ends well under 5 s even under load. */
	cr_assert(dt < 5.0, "a run stopped after 0.3 s took %.2f s", dt);
	cr_assert_eq(c.bad, 0);
	selfplay_free(sp);
}

typedef struct gumbel_seen {
	int games, targets, bad_sums;
	bool first_moves[7];
} gumbel_seen;

static int on_game_gumbel(void *ctx, const game_record *r, int64_t model_id)
{
	(void)model_id;
	gumbel_seen *s = ctx;
	s->games++;
	s->first_moves[r->moves[0]] = true;
	s->bad_sums += r->target != RECORD_TARGET_IMPROVED;
	for (int i = 0; i < r->n_moves; i++) {
		if (!r->full[i])
			continue;
		int sum = target_sum(r, i);
		s->targets++;
		s->bad_sums += sum < 990 || sum > 1010;
	}
	return 0;
}

/* Self-play with Gumbel root search: every full search records the
 * improved policy (thousandths that sum to 1,000, not 30 visits), and the
 * Gumbel noise alone, without Dirichlet noise or a temperature, varies
 * the games' openings. */
Test(selfplay, gumbel_games_record_the_improved_policy)
{
	selfplay *sp = uniform_c4(true);
	gumbel_seen s = { 0 };
	cr_assert_eq(selfplay_run(sp, 12, 0, on_game_gumbel, &s, NULL), 12);
	cr_assert_gt(s.targets, 0);
	cr_assert_eq(s.bad_sums, 0, "%d of %d targets do not sum to 1000", s.bad_sums, s.targets);
	int openings = 0;
	for (int c = 0; c < 7; c++)
		openings += s.first_moves[c];
	cr_assert_geq(openings, 3, "12 games opened in %d columns", openings);
	selfplay_free(sp);
}

/* What the games of a random-opening test did: how many opened with
 * k = 0..15 unsearched moves, their first moves, and the moves that broke
 * the rules (an unsearched move after a searched one, a searched one
 * without a root value, a pass among the random moves). */
typedef struct opening_tally {
	int games, bad, passes;
	int with_k[16];
	bool first_moves[GAME_MAX_ACTIONS];
	int pass;                    /* the game's pass action, or -1 */
	collected replay;            /* on_game's round trip and replay */
} opening_tally;

static int on_game_opening(void *ctx, const game_record *r, int64_t model_id)
{
	opening_tally *t = ctx;
	on_game(&t->replay, r, model_id);
	int k = 0;
	while (k < r->n_moves && !r->full[k])
		k++;
	t->games++;
	t->with_k[k < 15 ? k : 15]++;
	if (r->n_moves > 0)
		t->first_moves[r->moves[0]] = true;
	for (int i = 0; i < r->n_moves; i++) {
		bool random = i < k;
		if (random != isnan(r->root_value[i]) || (!random && !r->full[i]))
			t->bad++;
		if (random && r->moves[i] == t->pass)
			t->passes++;
		if (random && r->visit_start[i + 1] != r->visit_start[i])
			t->bad++;
	}
	return 0;
}

/* Self-play that would play one game over and over (a uniform evaluator,
 * no noise, the most visited move from the first ply, every move
 * searched fully), with --random-opening `n`. */
static opening_tally random_openings(game_kind kind, int size, int n, int games)
{
	game_params gp = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		gp = game_params_sized(kind, size, gp.komi);
	selfplay_options o = quiet_options(&gp, kind == GAME_KIND_GO ? 8 : 16);
	o.explore.temperature_moves = 0;
	o.explore.temperature_end = 0;
	o.explore.temperature_floor = 0;
	o.explore.noise_eps = 0;
	o.explore.random_opening = n;
	o.resign_pct = 0;
	selfplay *sp = started(&o);
	game g;
	game_init(&g, &gp);
	opening_tally t = { .pass = game_pass_move(&g) };
	cr_assert_eq(selfplay_run(sp, games, 0, on_game_opening, &t, NULL), games);
	selfplay_free(sp);
	cr_assert_eq(t.replay.bad, 0, "%d records did not round-trip or replay", t.replay.bad);
	cr_assert_eq(t.bad, 0, "%d moves break the opening's rules", t.bad);
	return t;
}

/* --random-opening N: each game opens with K uniform in 0..N unsearched
 * moves that are no training positions, then plays on as before. Without
 * it the same settings play one game every time, so the spread of first
 * moves is the opening's. */
Test(selfplay, random_opening_varies_the_games_and_records_no_targets)
{
	opening_tally off = random_openings(GAME_KIND_CONNECT4, 0, 0, 8);
	cr_assert_eq(off.with_k[0], 8, "without the opening every move is searched");
	int first = 0;
	for (int a = 0; a < GAME_MAX_ACTIONS; a++)
		first += off.first_moves[a];
	cr_assert_eq(first, 1, "without the opening the games all open alike (%d first moves)",
		     first);

	opening_tally on = random_openings(GAME_KIND_CONNECT4, 0, 4, 60);
	for (int k = 0; k <= 4; k++)
		cr_assert_gt(on.with_k[k], 0, "no game opened with %d random moves", k);
	for (int k = 5; k < 16; k++)
		cr_assert_eq(on.with_k[k], 0, "%d games opened with %d random moves", on.with_k[k], k);
	first = 0;
	for (int a = 0; a < GAME_MAX_ACTIONS; a++)
		first += on.first_moves[a];
	cr_assert_geq(first, 5, "60 games opened in %d columns", first);

	/* Go: no pass among the random moves, and no game over before the
	 * search plays. */
	opening_tally go = random_openings(GAME_KIND_GO, 5, 6, 8);
	cr_assert_eq(go.passes, 0, "%d random moves passed", go.passes);
	cr_assert_gt(go.games - go.with_k[0], 0);
}
