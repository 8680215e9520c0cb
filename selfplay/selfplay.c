/* selfplay.c: self-play workers (see selfplay.h). */
#include "selfplay/selfplay.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "engine/rng.h"
#include "search/eval.h"
#include "search/mcts.h"

/* A network with its backend and evaluator, shared by the games that
 * started with it; freed when the last of them lets go. */
typedef struct sp_model {
	nn_net *net;       /* weights (inference form), NULL for uniform */
	nn_backend_set bes; /* its backends (n = 0 for uniform) */
	evaluator *ev;     /* the queue all games share */
	int64_t id;        /* model id in the store (0 when unknown) */
	int refs;          /* holders: the selfplay object and running games */
	struct sp_model *next; /* the selfplay object's list of models in use */
} sp_model;

struct sp_game;
struct sp_slot;

typedef struct sp_worker {
	struct selfplay *sp;   /* owner */
	pthread_t thread;      /* the worker thread */
	int index;             /* worker number, for seeds */
	uint64_t rng;          /* its random state */
	int n_games;           /* games it plays at once */
	struct sp_game *games; /* [n_games] */
	struct sp_slot *slots; /* [n_games] one per model its games use */
	int *pending;          /* [n_games] games of a round still staging leaves */
} sp_worker;

static void free_workers(struct selfplay *sp, sp_worker *w, int n);

/* Resignation as AlphaGo Zero sets it: the threshold is the one that would
 * have resigned at most SP_FALSE_RESIGN of the recent no-resign games that
 * the resigner went on to win or draw, capped by resign_pct, and off until
 * SP_RESIGN_MIN_SAMPLES such games were seen. */
#define SP_RESIGN_SAMPLES 400
#define SP_RESIGN_MIN_SAMPLES 50
#define SP_FALSE_RESIGN 0.05
/* Searches in a row below the threshold before a player resigns (as
 * KataGo's resignConsecTurns). */
#define SP_RESIGN_CONSEC 3

struct selfplay {
	selfplay_options opt;       /* as given */
	pthread_mutex_t mu;         /* guards model and counters */
	pthread_mutex_t fn_mu;      /* one finished-game callback at a time */
	sp_model *model;            /* the model new games take */
	sp_model *models;           /* every model in use: the newest and those
				     * games under way still hold (mu) */
	char backend[256];          /* what runs the newest model (guarded by mu) */
	selfplay_stats stats;       /* totals */
	uint64_t evals_done[4];     /* evaluator stats of models already freed */
	/* Per run: */
	int64_t games_wanted;       /* stop after this many (0: no limit) */
	int64_t games_started_run;  /* games begun this run */
	int64_t games_done_run;     /* games finished this run */
	double deadline;            /* monotonic seconds, 0: none */
	int auto_per;               /* games a worker drives when games_per_thread
				     * is 0: the model's lane batch on CPU lanes,
				     * else 1 (guarded by mu) */
	int lanes;                  /* the model's CPU lanes, 0 on CUDA (mu) */
	struct sp_worker *kept;     /* carry_games: the workers, their games
				     * under way, between runs */
	int n_kept;                 /* entries in kept[] */
	atomic_int stop;            /* workers must stop */
	atomic_int active;          /* workers still running */
	volatile sig_atomic_t *ext_stop; /* the caller's signal flag */
	selfplay_game_fn fn;        /* finished-game callback */
	void *fn_ctx;               /* its context */
	/* Resignation calibration: for the latest no-resign games, the lowest
	 * winrate (percent) the eventual winner's searches reported. */
	float winner_min[SP_RESIGN_SAMPLES];
	int n_winner_min, winner_min_pos;
};


/* Self-play's PUCT constant for a game of numbers n: the game's, else the
 * search's own. */
static double selfplay_cpuct(const game_numbers *n)
{
	return n->selfplay_cpuct > 0 ? n->selfplay_cpuct : mcts_options_default().cpuct;
}

selfplay_options selfplay_options_default(const game_params *g)
{
	selfplay_options o;
	memset(&o, 0, sizeof(o));
	o.game = *g;
	o.parallel_games = 16;
	o.games_per_thread = 0;
	o.visits = 200;
	o.cheap_visits = 40;
	o.full_fraction = 0.25;
	game_numbers n = game_numbers_of(g);
	mcts_options mo = mcts_options_default();
	o.explore = (selfplay_explore){
		.temperature = 1,
		.temperature_moves = n.temperature_moves,
		.temperature_end = n.temperature_end,
		.temperature_floor = n.temperature_floor,
		.cpuct = selfplay_cpuct(&n),
		.fpu_reduction = mo.fpu_reduction,
		.fpu_root = mo.fpu_root,
		.fpu_root_noise = mo.fpu_root_noise,
		.noise_alpha_sum = mo.noise_alpha_sum,
		.noise_eps = mo.noise_eps,
		.gumbel_m = mo.gumbel_m,
		.random_opening = n.selfplay_random_opening,
	};
	o.resign_pct = 5;
	o.resign_after_moves = n.resign_after;
	o.no_resign_fraction = 0.1;
	o.batch = 16;
	o.nn = nn_backend_options_default();
	o.cache_bytes = (size_t)64 << 20;
	o.seed = 1;
	o.progress_seconds = 10;
	return o;
}

void selfplay_take_sizes(selfplay_options *o, const nn_arch *a)
{
	o->n_sizes = nn_arch_size_list(a, o->sizes, SELFPLAY_MAX_SIZES);
}

void selfplay_explore_settle(selfplay_explore *x, const game_params *g)
{
	game_numbers n = game_numbers_of(g);
	if (x->temperature_moves < 0)
		x->temperature_moves = n.temperature_moves;
	if (x->temperature_end < 0)
		x->temperature_end = n.temperature_end;
	if (x->temperature_floor < 0)
		x->temperature_floor = n.temperature_floor;
	if (x->cpuct < 0)
		x->cpuct = selfplay_cpuct(&n);
	if (x->random_opening < 0)
		x->random_opening = n.selfplay_random_opening;
}

double selfplay_temperature(const selfplay_explore *o, int ply)
{
	if (ply < o->temperature_moves)
		return o->temperature;
	if (ply >= o->temperature_end)
		return o->temperature_floor;
	double f = (double)(ply - o->temperature_moves) / (o->temperature_end - o->temperature_moves);
	return o->temperature + f * (o->temperature_floor - o->temperature);
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}

/* The winrate (percent) below which a game resigns now; 0: not yet. Call
 * with sp->mu held. */
static float resign_threshold_locked(const selfplay *sp)
{
	int n = sp->n_winner_min;
	if (sp->opt.resign_pct <= 0)
		return 0;
	if (sp->opt.no_resign_fraction <= 0)
		return sp->opt.resign_pct; /* nothing to calibrate on: as given */
	if (n < SP_RESIGN_MIN_SAMPLES)
		return 0;
	float v[SP_RESIGN_SAMPLES];
	memcpy(v, sp->winner_min, sizeof(float) * (size_t)n);
	qsort(v, (size_t)n, sizeof(float), cmp_float);
	/* Fewer than SP_FALSE_RESIGN * n values lie strictly below v[k]. */
	float t = v[(int)(SP_FALSE_RESIGN * n)];
	return t < sp->opt.resign_pct ? t : sp->opt.resign_pct;
}

float selfplay_resign_threshold(selfplay *sp)
{
	pthread_mutex_lock(&sp->mu);
	float t = resign_threshold_locked(sp);
	pthread_mutex_unlock(&sp->mu);
	return t;
}

static void model_release(selfplay *sp, sp_model *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&sp->mu);
	bool last = --m->refs == 0;
	if (last) {
		for (sp_model **at = &sp->models; *at; at = &(*at)->next)
			if (*at == m) {
				*at = m->next;
				break;
			}
	}
	if (last && m->ev) {
		eval_stats es;
		eval_get_stats(m->ev, &es);
		sp->evals_done[0] += es.evals;
		sp->evals_done[1] += es.batches;
		sp->evals_done[2] += es.cache_hits;
		sp->evals_done[3] += es.requests;
	}
	pthread_mutex_unlock(&sp->mu);
	if (!last)
		return;
	eval_free(m->ev);
	nn_backend_set_close(&m->bes);
	nn_net_free(m->net);
	free(m);
}

static sp_model *model_acquire(selfplay *sp)
{
	pthread_mutex_lock(&sp->mu);
	sp_model *m = sp->model;
	if (m)
		m->refs++;
	pthread_mutex_unlock(&sp->mu);
	return m;
}

int selfplay_set_model(selfplay *sp, const nn_net *net, int64_t model_id, char *err, size_t errlen)
{
	sp_model *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->id = model_id;
	m->refs = 1;
	nn_encoding enc = nn_encoding_for_game(&sp->opt.game);
	if (net) {
		m->net = nn_net_clone(net);
		if (!m->net) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		nn_net_fold_bn(m->net);
		enc = m->net->arch.encoding;
		/* int8 where the CPU has VNNI unless a precision was given: it
		 * keeps fp32's accuracy and nearly doubles the evaluations
		 * (docs/LEARNING.md, "Self-play at bf16 or int8"). */
		nn_backend_options bo = sp->opt.nn;
		bo.cpu_int8_default = 1;
		bo.lanes = nn_lanes_resolve(&bo, sp->opt.parallel_games);
		if (nn_backend_set_open(&m->bes, m->net, sp->opt.batch, &bo, err, errlen) < 0)
			goto fail;
	}
	/* On CPU lanes the games split evenly over them, each lane's batch
	 * the leaves of its share: one lane computes while the worker of
	 * another expands and descends its trees. */
	int share = m->bes.lanes > 1 ? (sp->opt.parallel_games + m->bes.lanes - 1) / m->bes.lanes : 0;
	int batch = nn_lane_batch(&m->bes, sp->opt.batch, share);
	int per = m->bes.lanes > 1 ? batch : 1;
	eval_options eo = eval_options_default();
	eo.max_batch = batch;
	eo.cache_bytes = sp->opt.cache_bytes;
	if (sp->opt.fill_wait_us > 0)
		eo.fill_wait_us = sp->opt.fill_wait_us;
	eo.seed = sp->opt.seed ^ (uint64_t)model_id;
	m->ev = eval_new(m->bes.be, m->bes.n, enc, &eo, err, errlen);
	if (!m->ev)
		goto fail;
	pthread_mutex_lock(&sp->mu);
	sp_model *old = sp->model;
	sp->model = m;
	m->next = sp->models;
	sp->models = m;
	sp->auto_per = per;
	sp->lanes = m->bes.lanes;
	snprintf(sp->backend, sizeof(sp->backend), "%s", m->bes.n ? m->bes.what : "none");
	pthread_mutex_unlock(&sp->mu);
	model_release(sp, old);
	return 0;
fail:
	nn_backend_set_close(&m->bes);
	nn_net_free(m->net);
	free(m);
	return -1;
}

selfplay *selfplay_new(const selfplay_options *o, char *err, size_t errlen)
{
	selfplay *sp = calloc(1, sizeof(*sp));
	if (!sp) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sp->opt = *o;
	if (sp->opt.parallel_games < 1)
		sp->opt.parallel_games = 1;
	if (sp->opt.batch < 1)
		sp->opt.batch = 1;
	if (sp->opt.games_per_thread < 0)
		sp->opt.games_per_thread = 0;
	if (sp->opt.visits < 1)
		sp->opt.visits = 1;
	pthread_mutex_init(&sp->mu, NULL);
	pthread_mutex_init(&sp->fn_mu, NULL);
	if (selfplay_set_model(sp, NULL, 0, err, errlen) != 0) {
		selfplay_free(sp);
		return NULL;
	}
	return sp;
}

void selfplay_free(selfplay *sp)
{
	if (!sp)
		return;
	free_workers(sp, sp->kept, sp->n_kept);
	model_release(sp, sp->model);
	pthread_mutex_destroy(&sp->fn_mu);
	pthread_mutex_destroy(&sp->mu);
	free(sp);
}

/* Claims the start of one more game of this run; false when the run has
 * enough games started or must stop. With carry_games every empty place
 * is filled while the run goes on: the run ends once it has its games
 * finished (run_has_its_games, after a round) and carries the games under
 * way, so a worker that starts late, or fills just after another worker
 * finished the last game, leaves no place idle for the next run. */
static bool claim_game(selfplay *sp)
{
	if (atomic_load(&sp->stop) || (sp->ext_stop && *sp->ext_stop) ||
	    (sp->deadline > 0 && clock_now() >= sp->deadline))
		return false;
	pthread_mutex_lock(&sp->mu);
	bool ok = sp->games_wanted == 0 || sp->opt.carry_games ||
		  sp->games_started_run < sp->games_wanted;
	if (ok)
		sp->games_started_run++;
	pthread_mutex_unlock(&sp->mu);
	return ok;
}

/* carry_games: the run has its games; its workers leave their games
 * under way for the next run. */
static bool run_has_its_games(selfplay *sp)
{
	if (!sp->opt.carry_games)
		return false;
	pthread_mutex_lock(&sp->mu);
	bool done = sp->games_wanted > 0 && sp->games_done_run >= sp->games_wanted;
	pthread_mutex_unlock(&sp->mu);
	return done;
}

static bool should_stop(selfplay *sp)
{
	return atomic_load(&sp->stop) || (sp->ext_stop && *sp->ext_stop) ||
	       (sp->deadline > 0 && clock_now() >= sp->deadline);
}

/* Passing, as Leela Zero plays it: a player that would lose if the game
 * were counted now (Tromp-Taylor area, komi) does not pass while it has a
 * move that does not fill one of its own eyes; a player that would win
 * passes after its opponent's pass, ending the game. Without this an early
 * network learns to pass: the side that thinks itself lost passes every
 * move (any move is as bad), the other wins, and the value head learns
 * from games of a dozen moves. */
static double mover_score(const game *g)
{
	double score = game_score(g); /* Black - White - komi */
	return game_to_move(g) == GAME_BLACK ? score : -score;
}

/* The root's best move other than pass that does not fill the mover's own
 * eye (by visits, then prior), else `pass`. */
static int best_non_pass(mcts *m, const game *g, int pass)
{
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = mcts_root_children(m, ci, GAME_MAX_ACTIONS);
	for (int i = 0; i < n; i++)
		if (ci[i].move != pass && !game_fills_own_eye(g, ci[i].move))
			return ci[i].move;
	return pass;
}

static int apply_pass_rule(mcts *m, const game *g, int mv)
{
	int pass = game_pass_move(g);
	if (pass == GAME_MOVE_NONE)
		return mv;
	int n = game_move_count(g);
	if (n > 0 && game_history_move(g, n - 1) == pass && mover_score(g) > 0)
		return pass; /* the opponent passed and we win: end it */
	if (mv == pass && mover_score(g) < 0)
		return best_non_pass(m, g, pass);
	return mv;
}

/* One game under way, between its searches: a worker drives several. */
typedef struct sp_game {
	bool live;               /* the slot holds a game */
	sp_model *mdl;           /* the model it plays with (held) */
	int slot;                /* its model's slot in the worker */
	mcts *m;                 /* its search */
	mcts_options mo;         /* the search's options */
	game g;                  /* the position */
	game_record rec;         /* the record so far */
	bool full;               /* the search under way is a full one */
	bool no_resign;          /* never resigns (calibration game) */
	float resign_at;         /* the threshold when the game began */
	float min_wr[2];         /* lowest resign-relevant winrate, per player */
	float last_wr[2][SP_RESIGN_CONSEC];
	int n_wr[2];
	int would_resign;        /* the player that would have resigned, or -1 */
	mcts_round round;        /* the leaves of the round under way */
	int n_leaves;            /* their count */
} sp_game;

/* The games of a worker that play with one model: their leaves are
 * staged in its scratch and go to its evaluator as one batch per round. */
typedef struct sp_slot {
	sp_model *mdl;           /* NULL: free */
	int users;               /* games using it */
	eval_scratch *scratch;   /* room for every game's leaves */
} sp_slot;

/* Takes the worker's slot for model `mdl` (a free one when no game plays
 * with it yet); -1 when memory is short. */
static int slot_take(sp_worker *w, sp_model *mdl)
{
	int free_i = -1;
	for (int i = 0; i < w->n_games; i++) {
		if (w->slots[i].mdl == mdl && w->slots[i].users > 0) {
			w->slots[i].users++;
			return i;
		}
		if (w->slots[i].users == 0 && free_i < 0)
			free_i = i;
	}
	sp_slot *s = &w->slots[free_i];
	s->scratch = eval_scratch_new(mdl->ev, w->n_games);
	if (!s->scratch)
		return -1;
	s->mdl = mdl;
	s->users = 1;
	/* One client of the evaluator per worker, however many games: the
	 * server's fill wait then waits for this thread's batch. */
	eval_client_enter(mdl->ev);
	return free_i;
}

static void slot_drop(sp_worker *w, int i)
{
	sp_slot *s = &w->slots[i];
	if (--s->users > 0)
		return;
	eval_client_leave(s->mdl->ev);
	eval_scratch_free(s->scratch);
	memset(s, 0, sizeof(*s));
}

/* Empties a game's place but for its search, which the next game there
 * reuses (mcts_reset). */
static void game_clear(sp_game *gm)
{
	mcts *m = gm->m;
	memset(gm, 0, sizeof(*gm));
	gm->m = m;
}

/* Plays the random opening of selfplay_explore.random_opening into g and
 * its record: K uniformly random moves, K uniform in 0..max, recorded
 * without a search (not training positions, root value unknown). A move
 * that would end the game is taken back and ends the opening. 0, or -1
 * when the record runs out of memory. */
static int random_opening(game *g, game_record *rec, int max, uint64_t *rng)
{
	if (max <= 0)
		return 0;
	int k = (int)(rng_next(rng) % (uint64_t)(max + 1));
	int legal[GAME_MAX_ACTIONS], pass = game_pass_move(g);
	for (int i = 0; i < k; i++) {
		int n = game_legal_moves(g, legal), m = 0;
		for (int j = 0; j < n; j++)
			if (legal[j] != pass && !game_fills_own_eye(g, legal[j]))
				legal[m++] = legal[j];
		if (m == 0)
			break;
		int mv = legal[rng_next(rng) % (uint64_t)m];
		if (game_play(g, mv) != GAME_OK)
			return -1;
		if (game_is_over(g)) {
			game_undo(g);
			break;
		}
		if (record_add_move(rec, mv, false, NAN, NULL, 0) != 0)
			return -1;
	}
	return 0;
}

/* Starts a game with model `mdl` (held by the caller, then by the game).
 * 0, or -1 on error. */
static int game_begin(selfplay *sp, sp_worker *w, sp_game *gm, sp_model *mdl)
{
	const selfplay_options *o = &sp->opt;
	char err[256];
	game_clear(gm);
	gm->mdl = mdl;
	gm->slot = -1;
	mcts_options mo = mcts_options_default();
	mo.threads = 1;
	mo.gather = 1;
	mo.seed = rng_next(&w->rng);
	mo.noise = true;
	const selfplay_explore *x = &o->explore;
	mo.cpuct = (float)x->cpuct;
	mo.fpu_reduction = (float)x->fpu_reduction;
	mo.fpu_root = (float)x->fpu_root;
	mo.fpu_root_noise = (float)x->fpu_root_noise;
	mo.noise_alpha_sum = (float)x->noise_alpha_sum;
	mo.noise_eps = (float)x->noise_eps;
	mo.forced_k = (float)x->forced_k;
	mo.gumbel = x->gumbel;
	mo.gumbel_m = x->gumbel_m;
	/* Enough nodes for a full search with reuse, with room to spare. */
	size_t per = (size_t)o->visits * (size_t)game_numbers_of(&o->game).actions;
	mo.max_memory = per * 64 * 4 + ((size_t)8 << 20);
	gm->mo = mo;
	if (gm->m)
		mcts_reset(gm->m, mdl->ev, &mo);
	else if (!(gm->m = mcts_new(mdl->ev, &mo, err, sizeof(err))))
		return -1;
	gm->slot = slot_take(w, mdl);
	if (gm->slot < 0)
		return -1;
	gm->live = true;
	game_params gp = o->game;
	if (o->n_sizes > 0) /* a network of several sizes: one drawn for each game */
		gp.size = o->sizes[rng_next(&w->rng) % (uint64_t)o->n_sizes];
	game_init(&gm->g, &gp);
	record_init(&gm->rec, &gp);
	if (o->explore.gumbel)
		gm->rec.target = RECORD_TARGET_IMPROVED;
	if (random_opening(&gm->g, &gm->rec, o->explore.random_opening, &w->rng) != 0)
		return -1;
	gm->no_resign = o->resign_pct <= 0 || rng_uniform(&w->rng) < o->no_resign_fraction;
	pthread_mutex_lock(&sp->mu);
	gm->resign_at = resign_threshold_locked(sp);
	pthread_mutex_unlock(&sp->mu);
	gm->min_wr[0] = gm->min_wr[1] = 100;
	gm->would_resign = -1;
	return 0;
}

/* Begins the game's next search: 0 begun, 1 the game is over, 2 the run
 * must stop (the game is abandoned), -1 error. */
static int game_search(selfplay *sp, sp_worker *w, sp_game *gm)
{
	const selfplay_options *o = &sp->opt;
	if (game_is_over(&gm->g))
		return 1;
	if (should_stop(sp))
		return 2;
	gm->full = o->cheap_visits <= 0 || rng_uniform(&w->rng) < o->full_fraction;
	gm->mo.max_visits = gm->full ? o->visits : o->cheap_visits;
	gm->mo.noise = gm->full && !o->explore.gumbel;
	mcts_set_options(gm->m, &gm->mo);
	mcts_set_position(gm->m, &gm->g);
	return mcts_begin(gm->m) ? 0 : -1;
}

/* After a search: resignation and its calibration, the move (temperature,
 * pass rule), its record. 0 the game goes on, 1 it is over, -1 error. */
static int game_move(selfplay *sp, sp_game *gm)
{
	const selfplay_options *o = &sp->opt;
	const selfplay_explore *x = &o->explore;
	mcts *m = gm->m;
	game *g = &gm->g;
	mcts_child_info ci[GAME_MAX_ACTIONS];
	record_visit visits[GAME_MAX_ACTIONS];
	mcts_end(m);
	float v = mcts_search_value(m);
	int mover = game_to_move(g);
	/* A player resigns when its last SP_RESIGN_CONSEC searches (of
	 * 20 visits or more, past the opening) all stood below the
	 * threshold: the highest of them is what is compared, and what
	 * calibration records. */
	float wr = (v + 1) * 50, recent = 100;
	if (mcts_root_visits(m) >= 20 && game_move_count(g) >= o->resign_after_moves) {
		gm->last_wr[mover][gm->n_wr[mover]++ % SP_RESIGN_CONSEC] = wr;
		if (gm->n_wr[mover] >= SP_RESIGN_CONSEC) {
			recent = gm->last_wr[mover][0];
			for (int k = 1; k < SP_RESIGN_CONSEC; k++)
				recent = fmaxf(recent, gm->last_wr[mover][k]);
		}
	}
	if (recent < gm->min_wr[mover])
		gm->min_wr[mover] = recent;
	if (gm->resign_at > 0 && recent < gm->resign_at) {
		if (!gm->no_resign) {
			game_resign(g, mover);
			return 1;
		}
		if (gm->would_resign < 0)
			gm->would_resign = mover;
	}
	float temp = (float)selfplay_temperature(x, game_move_count(g));
	/* The search's own choice first (it draws nothing), so that the
	 * record can tell an exploring move. */
	int own = temp > 0 ? mcts_choose_move(m, 0, false) : GAME_MOVE_NONE;
	int mv = mcts_choose_move(m, temp, false);
	if (mv == GAME_MOVE_NONE)
		return -1;
	mv = apply_pass_rule(m, g, mv);
	bool explored = own != GAME_MOVE_NONE && apply_pass_rule(m, g, own) != mv;
	int nv = 0;
	if (gm->full) {
		/* The target: the visits, forced playouts pruned (or
		 * Gumbel's improved policy). */
		int n = mcts_policy_target(m, ci, GAME_MAX_ACTIONS);
		for (int i = 0; i < n; i++)
			if (ci[i].visits > 0) {
				visits[nv].move = (int16_t)ci[i].move;
				visits[nv].count = (uint16_t)(ci[i].visits > 65535 ? 65535 : ci[i].visits);
				nv++;
			}
	}
	if (record_add_move(&gm->rec, mv, gm->full && nv > 0, v, visits, nv) != 0)
		return -1;
	if (explored)
		record_mark_explored(&gm->rec);
	if (game_play(g, mv) != GAME_OK)
		return -1;
	return game_is_over(g) ? 1 : 0;
}

/* A finished game: its outcome, the resignation calibration, the stats,
 * and the callback. Nonzero when the callback asks to stop. */
static int game_finish(selfplay *sp, sp_game *gm)
{
	const selfplay_options *o = &sp->opt;
	game_record *rec = &gm->rec;
	record_set_outcome(rec, &gm->g);
	pthread_mutex_lock(&sp->mu);
	if (gm->no_resign && o->resign_pct > 0) {
		int r = game_result(&gm->g); /* +1 first player */
		float wmin = r > 0 ? gm->min_wr[GAME_BLACK] : r < 0 ? gm->min_wr[GAME_WHITE]
				   : fminf(gm->min_wr[GAME_BLACK], gm->min_wr[GAME_WHITE]);
		sp->winner_min[sp->winner_min_pos] = wmin;
		sp->winner_min_pos = (sp->winner_min_pos + 1) % SP_RESIGN_SAMPLES;
		if (sp->n_winner_min < SP_RESIGN_SAMPLES)
			sp->n_winner_min++;
		sp->stats.no_resign_games++;
		if (gm->would_resign >= 0) {
			sp->stats.would_resign++;
			int for_resigner = gm->would_resign == GAME_BLACK ? r : -r;
			if (for_resigner >= 0)
				sp->stats.false_resign++;
		}
	}
	sp->stats.games++;
	sp->games_done_run++;
	sp->stats.moves += rec->n_moves;
	sp->stats.positions += record_full_count(rec);
	sp->stats.wins[rec->result > 0 ? 0 : rec->result < 0 ? 1 : 2]++;
	if (rec->resigned >= 0)
		sp->stats.resigned++;
	pthread_mutex_unlock(&sp->mu);
	/* Outside `mu`: the callback may swap the model. */
	pthread_mutex_lock(&sp->fn_mu);
	int stop = sp->fn ? sp->fn(sp->fn_ctx, rec, gm->mdl->id) : 0;
	pthread_mutex_unlock(&sp->fn_mu);
	return stop;
}

/* Frees a game's record and lets go of its model. Its search stays for
 * the next game in its place (game_begin resets it): a fresh search per
 * game mapped a new node pool and faulted and zeroed its pages again. */
static void game_free(selfplay *sp, sp_worker *w, sp_game *gm)
{
	record_free(&gm->rec);
	if (gm->slot >= 0)
		slot_drop(w, gm->slot);
	model_release(sp, gm->mdl);
	game_clear(gm);
}

/* Starts games in the worker's empty places while the run wants more,
 * each through to its first search (a game that ends before searching,
 * of no moves, is finished at once); *claiming goes false once no more
 * will start. 0, or -1 on error. */
static int fill_games(selfplay *sp, sp_worker *w, bool *claiming)
{
	for (int i = 0; i < w->n_games && *claiming; i++) {
		sp_game *gm = &w->games[i];
		while (!gm->live && *claiming) {
			if (!claim_game(sp)) {
				*claiming = false;
				break;
			}
			sp_model *mdl = model_acquire(sp);
			if (game_begin(sp, w, gm, mdl) != 0) {
				game_free(sp, w, gm);
				return -1;
			}
			int rc = game_search(sp, w, gm);
			if (rc == 0)
				break;
			if (rc < 0)
				return -1;
			if (rc == 1 && game_finish(sp, gm) != 0)
				atomic_store(&sp->stop, 1);
			game_free(sp, w, gm);
			/* A game of no moves ends a carrying run as any other. */
			if (rc == 2 || run_has_its_games(sp))
				*claiming = false;
		}
	}
	return 0;
}

/* After a round, a game whose search is done moves, and begins its next
 * search, or finishes (or is abandoned on stop). -1 on error. */
static int game_step(selfplay *sp, sp_worker *w, sp_game *gm)
{
	if (!mcts_done(gm->m))
		return 0;
	int rc = game_move(sp, gm);
	if (rc == 0)
		rc = game_search(sp, w, gm);
	if (rc == 0)
		return 0;
	if (rc < 0)
		return -1;
	if (rc == 1 && game_finish(sp, gm) != 0)
		atomic_store(&sp->stop, 1);
	game_free(sp, w, gm);
	return 0;
}

/* Rounds a game may play in one of its worker's rounds on positions the
 * NN cache answers (or that end in finished games), before its leaf goes
 * to the batch anyway. */
#define SP_QUICK_ROUNDS 64

/* The game's next leaves, gathered from its search, their NN cache
 * entries asked for (game_stage reads them after the worker's other
 * games have gathered theirs). */
static void game_leaves(sp_game *gm)
{
	gm->n_leaves = mcts_gather(gm->m, &gm->round);
	for (int k = 0; k < gm->n_leaves; k++)
		eval_prefetch(gm->mdl->ev, gm->round.games[k]);
}

/* Stages the game's leaves in its model's scratch for the worker's
 * batch. A round whose leaves the cache answers (eval_stage answers them
 * at once), or that ended in finished games only, is applied at once and
 * the game goes on (its search may end, the game with it), so that the
 * batch holds positions the network must see: a cache hit would otherwise
 * take a place in it. The game's next leaves are then gathered, and 1
 * returned: the worker stages them after its other games' (up to
 * SP_QUICK_ROUNDS such rounds; `last`: the leaves go to the batch
 * anyway). 0 when the game waits for the batch or ended, -1 on error. */
static int game_stage(selfplay *sp, sp_worker *w, sp_game *gm, bool last)
{
	eval_scratch *s = w->slots[gm->slot].scratch;
	int staged = 0;
	for (int k = 0; k < gm->n_leaves; k++)
		staged += eval_stage_legal(gm->mdl->ev, s, gm->round.games[k], gm->round.policies[k],
					   &gm->round.values[k], &gm->round.scores[k],
					   gm->round.legal[k], &gm->round.n_legal[k]) > 0;
	if (staged > 0 || last)
		return 0;
	mcts_apply(gm->m, gm->n_leaves);
	gm->n_leaves = 0;
	if (game_step(sp, w, gm) != 0)
		return -1;
	if (!gm->live)
		return 0;
	game_leaves(gm);
	return 1;
}

/* Ends the worker's games under way and frees their searches. */
static void worker_drop_games(selfplay *sp, sp_worker *w)
{
	for (int i = 0; i < w->n_games; i++) {
		if (w->games[i].live)
			game_free(sp, w, &w->games[i]);
		mcts_free(w->games[i].m);
		w->games[i].m = NULL;
	}
}

/* A game carried from the last run goes on with the newest model: its
 * search of the move under way begins again with it. 0, or -1 on error. */
static int game_renew(selfplay *sp, sp_worker *w, sp_game *gm)
{
	sp_model *mdl = model_acquire(sp);
	if (mdl == gm->mdl) {
		model_release(sp, mdl);
		return 0;
	}
	/* The old slot first: a worker has a slot per game, no more. */
	slot_drop(w, gm->slot);
	gm->slot = slot_take(w, mdl);
	if (gm->slot < 0) {
		model_release(sp, mdl);
		return -1;
	}
	model_release(sp, gm->mdl);
	gm->mdl = mdl;
	mcts_set_evaluator(gm->m, mdl->ev);
	mcts_set_options(gm->m, &gm->mo);
	mcts_set_position(gm->m, &gm->g);
	return mcts_begin(gm->m) ? 0 : -1;
}

/* One worker thread plays n_games games at once: each round takes a leaf
 * from every game, evaluates the leaves of the games sharing a model as
 * one batch, and expands and backs up each in its own tree; a game whose
 * search is done moves at once and searches again, or ends and leaves its
 * place to the next game. */
static void *worker_main(void *arg)
{
	sp_worker *w = arg;
	selfplay *sp = w->sp;
	bool claiming = true;
	int err = 0;
	pthread_setname_np(pthread_self(), "sente-play"); /* as the evaluator's "sente-nn" */
	for (int i = 0; i < w->n_games && !err; i++)
		if (w->games[i].live && game_renew(sp, w, &w->games[i]) != 0)
			err = 1;
	while (!err) {
		if (fill_games(sp, w, &claiming) != 0) {
			err = 1;
			break;
		}
		/* Every live game's leaves, then their staging in waves: the
		 * games whose leaves the cache answered go on and gather
		 * again, so that the cache lookups of a wave overlap. */
		int live = 0;
		for (int i = 0; i < w->n_games; i++)
			if (w->games[i].live) {
				game_leaves(&w->games[i]);
				w->pending[live++] = i;
			}
		if (live == 0)
			break;
		for (int quick = 0, n = live; n > 0 && !err; quick++) {
			int more = 0;
			for (int j = 0; j < n; j++) {
				int r = game_stage(sp, w, &w->games[w->pending[j]], quick == SP_QUICK_ROUNDS);
				if (r < 0) {
					err = 1;
					break;
				}
				if (r > 0)
					w->pending[more++] = w->pending[j];
			}
			n = more;
		}
		if (err)
			break;
		/* The answers land in each search's own leaves. */
		for (int i = 0; i < w->n_games; i++)
			if (w->slots[i].users > 0)
				eval_post(w->slots[i].mdl->ev, w->slots[i].scratch);
		for (int i = 0; i < w->n_games; i++) {
			sp_game *gm = &w->games[i];
			if (!gm->live)
				continue;
			mcts_apply(gm->m, gm->n_leaves);
			if (game_step(sp, w, gm) != 0) {
				err = 1;
				break;
			}
		}
		if (err || run_has_its_games(sp))
			break;
	}
	if (err)
		atomic_store(&sp->stop, 1);
	/* Games left on error or stop are dropped; carried ones stay. */
	if (err || !sp->opt.carry_games || atomic_load(&sp->stop) || (sp->ext_stop && *sp->ext_stop))
		worker_drop_games(sp, w);
	atomic_fetch_sub(&sp->active, 1);
	return NULL;
}

void selfplay_get_stats(selfplay *sp, selfplay_stats *out)
{
	pthread_mutex_lock(&sp->mu);
	*out = sp->stats;
	out->evals = sp->evals_done[0];
	out->batches = sp->evals_done[1];
	out->cache_hits = sp->evals_done[2];
	out->requests = sp->evals_done[3];
	/* The newest model's, and those of older ones that games carried
	 * from an earlier run still play with. */
	for (const sp_model *m = sp->models; m; m = m->next) {
		if (!m->ev)
			continue;
		eval_stats es;
		eval_get_stats(m->ev, &es);
		out->evals += es.evals;
		out->batches += es.batches;
		out->cache_hits += es.cache_hits;
		out->requests += es.requests;
	}
	pthread_mutex_unlock(&sp->mu);
}

static void print_progress(selfplay *sp, const selfplay_stats *a, const selfplay_stats *b,
			   double dt, double elapsed)
{
	double gps = (b->games - a->games) / dt, pps = (b->positions - a->positions) / dt;
	double eps = (double)(b->evals - a->evals) / dt;
	double mb = b->batches > a->batches ? (double)(b->evals - a->evals) / (double)(b->batches - a->batches) : 0;
	uint64_t rq = b->requests - a->requests;
	double hit = rq ? (double)(b->cache_hits - a->cache_hits) / (double)rq : 0;
	if (sp->opt.json)
		printf("{\"selfplay\":\"progress\",\"seconds\":%.1f,\"games\":%lld,\"positions\":%lld,"
		       "\"games_per_s\":%.2f,\"positions_per_s\":%.1f,\"evals_per_s\":%.1f,"
		       "\"mean_batch\":%.2f,\"cache_hit_rate\":%.3f,\"false_resign\":%lld,"
		       "\"no_resign_games\":%lld,\"resign_threshold\":%.2f}\n",
		       elapsed, (long long)b->games, (long long)b->positions, gps, pps, eps, mb, hit,
		       (long long)b->false_resign, (long long)b->no_resign_games,
		       selfplay_resign_threshold(sp));
	else if (!sp->opt.quiet && !sp->opt.progress)
		fprintf(stderr, "selfplay: %6.0f s  %lld games  %.1f positions/s  %.0f evals/s  "
			"batch %.1f  cache %.0f%%  resign <%.1f%%\n", elapsed, (long long)b->games, pps,
			eps, mb, hit * 100, selfplay_resign_threshold(sp));
	fflush(stdout);
}

/* The caller's progress line: this run's games as its count, and its
 * rates since the run began. */
static void update_line(selfplay *sp, const selfplay_stats *a, const selfplay_stats *b, double dt)
{
	if (dt <= 0)
		return;
	uint64_t rq = b->requests - a->requests, nb = b->batches - a->batches;
	progress_update(sp->opt.progress, (double)(b->games - a->games), false,
			"%lld games  %.1f positions/s  %.0f evals/s  batch %.1f  cache %.0f%%",
			(long long)(b->games - a->games), (double)(b->positions - a->positions) / dt,
			(double)(b->evals - a->evals) / dt, nb ? (double)(b->evals - a->evals) / (double)nb : 0.0,
			rq ? 100.0 * (double)(b->cache_hits - a->cache_hits) / (double)rq : 0.0);
}

/* Frees the workers and their games still under way (carried ones; a
 * finished run's workers have none). */
static void free_workers(selfplay *sp, sp_worker *w, int n)
{
	for (int i = 0; w && i < n; i++) {
		worker_drop_games(sp, &w[i]);
		free(w[i].games);
		free(w[i].slots);
		free(w[i].pending);
	}
	free(w);
}

int64_t selfplay_run(selfplay *sp, int64_t games, double seconds, selfplay_game_fn fn, void *ctx,
		     volatile sig_atomic_t *stop)
{
	int n = sp->opt.parallel_games;
	/* Carried games keep every place busy however few a run wants. */
	if (games > 0 && games < n && !sp->opt.carry_games)
		n = (int)games;
	pthread_mutex_lock(&sp->mu);
	int per = sp->opt.games_per_thread > 0 ? sp->opt.games_per_thread : sp->auto_per;
	/* Fewer games than parallel_games: still one worker per lane. */
	if (sp->opt.games_per_thread == 0 && sp->lanes > 1 && n < sp->opt.parallel_games)
		per = (n + sp->lanes - 1) / sp->lanes;
	pthread_mutex_unlock(&sp->mu);
	if (per < 1)
		per = 1;
	int n_workers = (n + per - 1) / per;
	sp_worker *w = sp->kept;
	/* Games carried from the last run go on where the workers are laid
	 * out as before (the same games per worker); otherwise they end. */
	bool same = w && sp->n_kept == n_workers;
	for (int i = 0; same && i < n_workers; i++)
		same = w[i].n_games == (i < n_workers - 1 ? per : n - per * (n_workers - 1));
	if (!same) {
		free_workers(sp, w, sp->n_kept);
		sp->kept = NULL;
		sp->n_kept = 0;
		if (!(w = calloc((size_t)n_workers, sizeof(*w))))
			return -1;
		for (int i = 0; i < n_workers; i++) {
			w[i].n_games = i < n_workers - 1 ? per : n - per * (n_workers - 1);
			w[i].games = calloc((size_t)w[i].n_games, sizeof(sp_game));
			w[i].slots = calloc((size_t)w[i].n_games, sizeof(sp_slot));
			w[i].pending = calloc((size_t)w[i].n_games, sizeof(int));
			if (!w[i].games || !w[i].slots || !w[i].pending) {
				free_workers(sp, w, n_workers);
				return -1;
			}
		}
	}
	double t0 = clock_now();
	sp->games_wanted = games;
	sp->games_started_run = sp->games_done_run = 0;
	sp->deadline = seconds > 0 ? t0 + seconds : 0;
	atomic_store(&sp->stop, 0);
	sp->ext_stop = stop;
	sp->fn = fn;
	sp->fn_ctx = ctx;
	int started = 0;
	atomic_store(&sp->active, n_workers);
	for (int i = 0; i < n_workers; i++) {
		w[i].sp = sp;
		w[i].index = i;
		w[i].rng = sp->opt.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 7919 + (uint64_t)sp->stats.games;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
			atomic_fetch_sub(&sp->active, n_workers - i);
			break;
		}
		started++;
	}
	/* The calling thread reports progress while the workers play. */
	selfplay_stats last, cur, first;
	selfplay_get_stats(sp, &last);
	first = last;
	double t_last = t0, t_line = t0;
	while (atomic_load(&sp->active) > 0) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		double t = clock_now();
		if (sp->opt.progress && t - t_line >= PROGRESS_TTY_INTERVAL) {
			selfplay_get_stats(sp, &cur);
			update_line(sp, &first, &cur, t - t0);
			t_line = t;
		}
		if (sp->opt.progress_seconds > 0 && t - t_last >= sp->opt.progress_seconds) {
			selfplay_get_stats(sp, &cur);
			print_progress(sp, &last, &cur, t - t_last, t - t0);
			last = cur;
			t_last = t;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(w[i].thread, NULL);
	if (sp->opt.carry_games && started == n_workers) {
		sp->kept = w;
		sp->n_kept = n_workers;
	} else {
		sp->kept = NULL;
		sp->n_kept = 0;
		free_workers(sp, w, n_workers);
	}
	sp->stats.seconds += clock_now() - t0;
	return sp->games_done_run;
}

int selfplay_carried(const selfplay *sp)
{
	int n = 0;
	for (int i = 0; i < sp->n_kept; i++)
		for (int k = 0; k < sp->kept[i].n_games; k++)
			n += sp->kept[i].games[k].live;
	return n;
}

void selfplay_backend(selfplay *sp, char *buf, size_t len)
{
	pthread_mutex_lock(&sp->mu);
	snprintf(buf, len, "%s", sp->backend[0] ? sp->backend : "none");
	pthread_mutex_unlock(&sp->mu);
}
