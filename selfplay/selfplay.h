/* selfplay.h: self-play workers. One process plays many games at once,
 * all sharing one evaluator so the network sees full batches (one game per
 * process starves it). A worker thread drives games_per_thread games: each
 * round it takes a leaf from each of them and evaluates them as one batch,
 * so that few threads fill a batch without waking once per evaluation.
 *
 * Exploration as AlphaZero and its successors do it: Dirichlet noise at the
 * root of full searches, temperature 1 for the opening moves then the most
 * visited move, resignation below a winrate with a fraction of games that
 * never resign (to measure false resignations), and playout-cap
 * randomisation (KataGo): most moves get a cheap search and are not
 * recorded, a fraction get the full search and become training targets.
 * A newer model is taken up between games, without stopping.
 */
#ifndef SENTE_SELFPLAY_SELFPLAY_H
#define SENTE_SELFPLAY_SELFPLAY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "data/record.h"
#include "engine/game.h"
#include "engine/progress.h"
#include "nn/backend.h"
#include "nn/net.h"

/* How self-play explores: the temperature schedule (selfplay_temperature):
 * `temperature` for the first temperature_moves plies, then falling
 * linearly to temperature_floor at ply temperature_end (<=
 * temperature_moves: a step), then the floor (0: the most visited move);
 * and the search's settings (search/mcts.h). */
typedef struct selfplay_explore {
	double temperature;       /* opening temperature (1) */
	int temperature_moves;    /* plies at the opening temperature */
	int temperature_end;      /* ply from which the floor applies */
	double temperature_floor; /* temperature after the schedule */
	double cpuct;             /* PUCT exploration constant (the game's
				   * selfplay_cpuct, else the search's) */
	double fpu_reduction;     /* FPU reduction below the root */
	double fpu_root;          /* at the root of cheap searches (no noise) */
	double fpu_root_noise;    /* at the root of full searches (noise) */
	double noise_alpha_sum;   /* Dirichlet alpha times legal moves */
	double noise_eps;         /* weight of the noise at the root */
	double forced_k;          /* forced playouts with policy target pruning in
				   * full searches (mcts_options.forced_k; KataGo
				   * 2); 0: off. Moves are drawn from the pruned
				   * visits, as the target is (mcts_choose_move) */
	bool gumbel;              /* Gumbel root search (mcts_options.gumbel) in
				   * every search instead of Dirichlet noise and
				   * the temperature: the move is the one
				   * sequential halving kept, the target the
				   * improved policy */
	int gumbel_m;             /* moves its root considers (16) */
	int random_opening;       /* each game opens with K uniformly random
				   * legal moves, K drawn uniformly from
				   * 0..random_opening, played without a
				   * search and not training positions (Go:
				   * no pass, no move filling its own eye;
				   * none that would end the game), so that
				   * self-play meets openings its network
				   * would never choose; 0: off */
} selfplay_explore;

#define SELFPLAY_MAX_SIZES 8

typedef struct selfplay_options {
	game_params game;        /* what to play */
	int sizes[SELFPLAY_MAX_SIZES]; /* Go: board sizes each game draws one of
				  * (a network of several sizes); n_sizes 0:
				  * game.size alone */
	int n_sizes;
	int parallel_games;      /* games at once */
	int games_per_thread;    /* games one worker thread drives, their leaves
				  * evaluated as one batch per round: the
				  * workers are ceil(parallel_games / this);
				  * 0 (the default): the games split evenly
				  * over the CPU lanes (nn.lanes), else 1 */
	int visits;              /* full search visits (recorded moves) */
	int cheap_visits;        /* cheap search visits; 0 turns playout-cap randomisation off */
	double full_fraction;    /* chance that a move gets the full search */
	selfplay_explore explore; /* temperature schedule and search settings */
	float resign_pct;        /* resign below this winrate, percent, at most;
				  * 0: never. The threshold in use is
				  * calibrated on the no-resign games (see
				  * selfplay_resign_threshold) */
	double no_resign_fraction; /* games that never resign, to measure false resignations */
	int resign_after_moves;  /* no resignation before this many moves */
	int batch;               /* largest network batch */
	nn_backend_options nn;   /* network threads, lanes and precision; lanes
				  * 0 (the default): one lane per thread, each
				  * lane's batch its share of the games, at
				  * most `batch` */
	size_t cache_bytes;      /* NN cache */
	int fill_wait_us;        /* longest wait for the other games' leaves
				  * before a short batch (eval_options);
				  * 0: the evaluator's default */
	uint64_t seed;           /* noise, temperature, resignation draws */
	bool carry_games;        /* a run ends once it has its games finished,
				  * and the games under way go on in the next
				  * run (with the newest model, the search of
				  * the move under way begun again), so that
				  * no run ends on a tail of a few games whose
				  * batches leave cores idle; selfplay_free
				  * drops them. false: a run begins no more
				  * games than it wants and plays them all
				  * out */
	double progress_seconds; /* progress line every this many seconds; 0: none */
	progress *progress;      /* the caller's progress line: selfplay_run
				  * updates it with its figures (games of the
				  * run as its count) instead of printing its
				  * own lines; NULL: none */
	bool json;               /* progress as JSON lines (on stdout, beside the line) */
	bool quiet;              /* nothing on stderr */
} selfplay_options;

typedef struct selfplay_stats {
	int64_t games;           /* finished games */
	int64_t moves;           /* moves played */
	int64_t positions;       /* recorded (full search) positions */
	int64_t wins[3];         /* first player won, second won, draws */
	int64_t resigned;        /* games ended by resignation */
	int64_t no_resign_games; /* games played without resigning */
	int64_t would_resign;    /* of those, games where resignation would have happened */
	int64_t false_resign;    /* of those, games the would-be resigner went on to win or draw */
	uint64_t evals;          /* network evaluations */
	uint64_t batches;        /* network calls */
	uint64_t cache_hits;     /* NN cache hits */
	uint64_t requests;       /* evaluation requests */
	double seconds;          /* wall time of selfplay_run */
} selfplay_stats;

/* Called once per finished game, from the game's thread but never two at a
 * time; it may call selfplay_set_model. Return nonzero to stop the run
 * (e.g. the store failed). */
typedef int (*selfplay_game_fn)(void *ctx, const game_record *r, int64_t model_id);

typedef struct selfplay selfplay;

/* Defaults for 2 CPU cores: 16 games at once, 200 full / 40 cheap visits,
 * 25% full searches, the game's temperature schedule (Connect Four: 1
 * for 20 plies, falling to 0.3 at ply 30; Go: 1 for as many plies as the
 * board's size, then the most visited move), resign at 5% at most (three
 * searches in a row, not in the first quarter of the board or 8 Connect
 * Four plies) with 10% of games never resigning. */
selfplay_options selfplay_options_default(const game_params *g);
/* The board sizes of a network of several (nn_arch.sizes) into o's sizes,
 * so that self-play with it plays each of them; none (game.size alone) for
 * a net of one size. */
void selfplay_take_sizes(selfplay_options *o, const nn_arch *a);
/* The temperature schedule's fields and cpuct left negative (the game's,
 * for a worker that learns its game from the first model) filled in from
 * game g's numbers. */
void selfplay_explore_settle(selfplay_explore *x, const game_params *g);
/* The temperature of the move at ply `ply` (0-based) under x's schedule. */
double selfplay_temperature(const selfplay_explore *x, int ply);

selfplay *selfplay_new(const selfplay_options *o, char *err, size_t errlen);
void selfplay_free(selfplay *sp);

/* Uses `net` (copied; NULL: uniform policy, neutral value) from the next
 * game on; games under way finish with the model they started with
 * (games carried into the next run take the newest: carry_games). */
int selfplay_set_model(selfplay *sp, const nn_net *net, int64_t model_id, char *err, size_t errlen);

/* Plays until `games` more games have finished (0: no limit), `seconds` have
 * passed (0: no limit), fn asks to stop, or *stop becomes nonzero (signals);
 * unfinished games are dropped, except those that carry_games keeps for
 * the next run once `games` have finished. Returns the games finished, or
 * -1. */
int64_t selfplay_run(selfplay *sp, int64_t games, double seconds, selfplay_game_fn fn, void *ctx,
		     volatile sig_atomic_t *stop);
/* Games under way that the next run goes on with (carry_games); call it
 * between runs. */
int selfplay_carried(const selfplay *sp);

/* Which backend runs the current model (nn_backend_set.what), or "none". */
void selfplay_backend(selfplay *sp, char *buf, size_t len);
/* Totals since selfplay_new. */
void selfplay_get_stats(selfplay *sp, selfplay_stats *out);

/* The winrate (percent) below which games now resign: the largest value,
 * up to resign_pct, that would have resigned at most 5% of the latest 400
 * no-resign games in a position their side went on to win or draw (the
 * rule AlphaGo Zero used); resign_pct itself when no_resign_fraction is 0.
 * 0 until 50 no-resign games have been played:
 * an early network's confident values are often wrong, and resigning on
 * them would fill the window with games that end after a few moves. */
float selfplay_resign_threshold(selfplay *sp);

#endif
