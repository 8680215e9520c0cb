/* mcts.h: tree-parallel Monte Carlo tree search with PUCT and virtual loss.
 *
 * N threads descend one shared tree. Each descent adds a virtual loss to
 * every node on its path so that the other threads spread out, and removes
 * it on backup. Node statistics are atomics; a node is expanded once (a
 * thread that finds a node being expanded backs off and retries). Leaves are
 * evaluated through the evaluator's queue (search/eval.h), so the threads'
 * leaves reach the network in batches. Nodes come from a preallocated pool;
 * when the pool is full the search stops expanding and says so in its stats.
 *
 * Values are in [-1, 1]. A node's value sum is kept from the view of the
 * player who moved into it, so a parent picks the child with the best Q.
 */
#ifndef SENTE_SEARCH_MCTS_H
#define SENTE_SEARCH_MCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/game.h"
#include "search/eval.h"

typedef struct mcts_options {
	int threads;            /* search threads (>= 1) */
	int max_visits;         /* stop when the root has this many visits; 0: no limit */
	int max_playouts;       /* stop after this many playouts of this search; 0: no limit */
	double max_seconds;     /* stop after this long; 0: no limit */
	float cpuct;            /* exploration constant at the start */
	float cpuct_base;       /* visits at which the log term adds cpuct_log once */
	float cpuct_log;        /* growth: c = cpuct + cpuct_log * ln((N + base + 1) / base) */
	float fpu_reduction;    /* unvisited child: parent Q minus this * sqrt(visited prior) */
	float fpu_root;         /* the same at the root without noise */
	float fpu_root_noise;   /* the same at the root under noise (default 0, as
				 * Leela Zero and KataGo self-play: the noise
				 * must be able to lift an unvisited move) */
	int virtual_loss;       /* visits counted as losses per in-flight descent
				 * (default 1: Leela Zero's 3 kept two threads off
				 * the one good reply of a ladder past 30,000
				 * playouts, tests/search/test_mcts.c) */
	int gather;             /* leaves a thread collects (with virtual loss) before
				 * evaluating them as one batch: threads * gather
				 * fills a batch without many threads */
	bool noise;             /* Dirichlet noise at the root (self-play) */
	float noise_alpha_sum;  /* alpha times the number of legal moves (AlphaZero Go: 10.83) */
	float noise_eps;        /* weight of the noise */
	float forced_k;         /* KataGo's forced playouts, at the root under noise:
				 * a child of prior P gets at least
				 * sqrt(forced_k * P * N) of the root's N playouts
				 * (KataGo: 2); mcts_policy_target takes them out
				 * again. 0 (the default): none */
	bool gumbel;            /* Gumbel root search (Danihelka et al. 2022,
				 * "Policy improvement by planning with Gumbel"):
				 * the root samples gumbel_m moves without
				 * replacement (Gumbel-top-k on the priors) and
				 * shares the visits among them by sequential
				 * halving; the move is the one left, the policy
				 * target the improved policy (see
				 * mcts_policy_target). PUCT below the root. For
				 * self-play with few visits; `noise` is not
				 * used with it. A search with moves banned
				 * (mcts_set_avoid) uses PUCT */
	int gumbel_m;           /* moves the root considers (mctx and the
				 * paper: 16) */
	size_t max_memory;      /* bytes for the node pool (twice when reusing trees) */
	uint64_t seed;          /* noise and move choice */
} mcts_options;

/* Figures of the last search. */
typedef struct mcts_stats {
	uint64_t playouts;      /* completed this search */
	uint64_t collisions;    /* descents that met a node being expanded and retried */
	uint64_t nodes;         /* nodes in use */
	uint64_t node_capacity; /* nodes the pool holds */
	bool pool_full;         /* expansion was refused for lack of nodes */
	double seconds;         /* wall time of the search */
} mcts_stats;

/* One child of the root, for move choice and analysis output. */
typedef struct mcts_child_info {
	int move;       /* action */
	int visits;     /* N */
	float q;        /* mean value for the player to move at the root */
	float prior;    /* network prior (after noise) */
	float lcb;      /* lower confidence bound of q */
	float score;    /* mean of the score head's answers below it, the
			 * final lead in points of the player to move at the
			 * root; NAN without the head or visits */
} mcts_child_info;

/* Moves the search may not explore (GTP's analyze `avoid`/`allow`):
 * until_ply[colour][move] = k bans the move for that colour at plies
 * 1..k of the search (ply 1 is the root's move); 0 allows it. */
typedef struct mcts_avoid {
	uint16_t until_ply[2][GAME_MAX_ACTIONS];
} mcts_avoid;

/* Bans for `color` (0 black, 1 white) up to ply `depth` (at most 65535)
 * in a: the moves listed[0..n) when avoiding, every other one when
 * `allow`; a ban already longer stays. */
void mcts_avoid_ban(mcts_avoid *a, int color, const bool *listed, int n, bool allow, int depth);

typedef struct mcts mcts;

mcts_options mcts_options_default(void);

/* max_memory for a pool that holds `visits` expansions of `actions`
 * children each, the second arena (tree reuse) included: every expansion
 * takes a node per legal move, so on an empty 19x19 board the default
 * 512 MB holds about 16,000 visits. */
size_t mcts_memory_for(int visits, int actions);

/* A search over `ev` (not owned). NULL with a message when memory is short. */
mcts *mcts_new(evaluator *ev, const mcts_options *opt, char *err, size_t errlen);
void mcts_free(mcts *m);
/* Makes m the search that mcts_new(ev, opt) would give (no tree, no
 * bans, opt's seed), keeping its node pool at its size: a caller that
 * plays game after game reuses memory already faulted in instead of
 * mapping and zeroing a fresh pool for each. */
void mcts_reset(mcts *m, evaluator *ev, const mcts_options *opt);
/* Searches with `ev` (not owned) from now on; drops the tree, whose
 * values came from the old one. */
void mcts_set_evaluator(mcts *m, evaluator *ev);

/* Sets the position to search from. Keeps the subtree when the new
 * position follows the old root by one or two moves (tree reuse). */
void mcts_set_position(mcts *m, const game *g);
/* Drops the tree. */
void mcts_clear(mcts *m);
/* Changes limits and parameters between searches. */
void mcts_set_options(mcts *m, const mcts_options *opt);

/* Bans moves for the next searches (copied; call it between searches,
 * never during one); NULL lifts every ban. A node
 * whose every move is banned is searched as if none were. */
void mcts_set_avoid(mcts *m, const mcts_avoid *avoid);

/* Searches synchronously until a limit is reached. */
void mcts_search(mcts *m);
/* A single-threaded search (threads == 1) driven from outside, one round
 * at a time, so that one thread can evaluate the leaves of several
 * searches (several self-play games) as one batch. mcts_search is this
 * loop:
 *
 *   if (mcts_begin(m)) {
 *           while (!mcts_done(m)) {
 *                   mcts_round r;
 *                   int n = mcts_gather(m, &r);
 *                   ... evaluate r.games[0..n) into r.policies[i], r.values[i]
 *                   mcts_apply(m, n);
 *           }
 *           mcts_end(m);
 *   }
 *
 * The leaves of a round are valid (and hold their virtual losses) until
 * mcts_apply; every mcts_gather must be followed by mcts_apply, with n
 * possibly 0 (a round may end in finished games only). A root not yet
 * expanded makes a round of its own, as in mcts_search, so the noise goes
 * in before any other descent. */
typedef struct mcts_round {
	const game *const *games; /* [n] the leaves' positions */
	float *const *policies;   /* [n] where each leaf's policy goes (GAME_MAX_ACTIONS) */
	float *values;            /* [n] each leaf's value, for its side to move */
	float *scores;            /* [n] each leaf's score (eval_batch's), NAN
				   * until answered */
	int *const *legal;        /* [n] room for each leaf's legal moves and */
	int *n_legal;             /* [n] their count (-1: none given), which
				   * eval_batch_legal writes, sparing the
				   * expansion working them out again */
} mcts_round;

/* Sets the search up from the position given (limits, noise when the
 * root is already expanded). False when there is nothing to search (no
 * position, or the game is over). */
bool mcts_begin(mcts *m);
/* The leaves of the next round (at most the `gather` option, 1 while the
 * root is unexpanded): returns their count, *out says where they are. */
int mcts_gather(mcts *m, mcts_round *out);
/* Expands and backs up the round's n_leaves evaluated leaves; stops the
 * search when the pool is full or the time is up. */
void mcts_apply(mcts *m, int n_leaves);
/* True when the search has reached its budget, was stopped or
 * interrupted, filled its pool or passed its deadline. */
bool mcts_done(mcts *m);
/* Closes the search (its end time for the stats). */
void mcts_end(mcts *m);

/* Starts searching in the background (for pondering and analysis);
 * mcts_stop() ends it. Limits still apply; a background search without
 * limits runs until stopped or the pool is full. */
void mcts_start(mcts *m);
/* Asks the background search to stop and waits for its threads. */
void mcts_stop(mcts *m);
/* From any thread: ends the search in progress (synchronous or in the
 * background) soon, without waiting; a search that has not begun yet
 * ends at once when it does. Holds until mcts_clear() (the JSON
 * analysis engine's terminate: the caller clears before each new
 * position it searches). */
void mcts_interrupt(mcts *m);
/* True while a background search is running. */
bool mcts_running(const mcts *m);

/* Root children sorted best first (by visits, then prior); returns the count. */
int mcts_root_children(mcts *m, mcts_child_info *out, int max);
#define MCTS_GUMBEL_TARGET_SCALE 1000
/* The root's children as a policy target: mcts_root_children, except
 * after a Gumbel search, where each child's `visits` is its share of the
 * improved policy softmax(log prior + sigma(completed Q)) in units of
 * 1/MCTS_GUMBEL_TARGET_SCALE (the paper's section 4: a visited child's
 * Q, an unvisited one the root's mixed value; sigma(q) = (50 + the
 * largest child visits) * (q + 1) / 2), and after a search with forced
 * playouts (forced_k > 0 under noise), where KataGo's policy target
 * pruning applies (its paper, section 3.1): the
 * most visited child keeps its visits; every other child loses up to its
 * forced count sqrt(forced_k * P * N), N the children's visits, as long as
 * its PUCT value with the visits left stays below the best child's; a
 * child left with at most one visit is pruned to 0. Best first. */
int mcts_policy_target(mcts *m, mcts_child_info *out, int max);
/* The value the search stands for, for the player to move at the root:
 * the root's mean value, or after a Gumbel search the improved policy's
 * expectation of the completed Q (the root's mean would count the visits
 * sequential halving gives every considered move, good or bad). */
float mcts_search_value(mcts *m);
/* The forced playouts of a child of prior `prior` when the root's children
 * have `total` visits: sqrt(k * prior * total). */
double mcts_forced_playouts(float k, float prior, int total);

/* The principal variation from the root's child `move`: moves into pv[],
 * returns its length (pv[0] == move). */
int mcts_pv(mcts *m, int move, int *pv, int max);
/* mcts_pv, with the visits of the node each PV move leads to in visits[]
 * (may be NULL). */
int mcts_pv_visits(mcts *m, int move, int *pv, int *visits, int max);
/* Root visits and mean value (for the player to move at the root). */
int mcts_root_visits(mcts *m);
float mcts_root_value(mcts *m);
/* The mean of the score head's answers over the search (the final lead in
 * points of the player to move at the root, as KataGo's rootInfo
 * scoreLead), backed up beside the values; NAN when the network has no
 * score head or nothing was searched. */
float mcts_root_score(mcts *m);

/* The move to play: with temperature > 0, drawn with probability
 * proportional to visits^(1/temperature), the visits with forced playouts
 * pruned as in mcts_policy_target; else the most visited child, or
 * with use_lcb the best lower confidence bound among children with at least
 * 10% of the top visits. After a Gumbel search, the move sequential
 * halving kept (the Gumbel noise is the exploration: temperature and
 * use_lcb do not apply). GAME_MOVE_NONE when the root has no child. */
int mcts_choose_move(mcts *m, float temperature, bool use_lcb);

void mcts_get_stats(const mcts *m, mcts_stats *out);

#endif
