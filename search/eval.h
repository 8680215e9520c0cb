/* eval.h: the evaluation queue between search threads and the network.
 *
 * Search threads never call the network: eval_position() encodes the
 * position in the calling thread, posts it to a queue and sleeps; one server
 * thread per backend (device) drains the queue greedily into one batch (up
 * to max_batch), runs the backend, turns logits into a policy over the
 * legal moves, and wakes each waiter with its own answer. An NN cache keyed
 * by the position (with the history the encoding sees) answers
 * transpositions without a network call.
 *
 * Without a backend the evaluator answers a uniform policy over the legal
 * moves and a neutral value, at once.
 */
#ifndef SENTE_SEARCH_EVAL_H
#define SENTE_SEARCH_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/game.h"
#include "nn/backend.h"

typedef struct eval_options {
	int max_batch;         /* largest batch per forward call (<= each backend's) */
	size_t cache_bytes;    /* NN cache memory; 0 turns the cache off */
	int random_symmetry;   /* 1: evaluate under a random board symmetry */
	uint64_t seed;         /* for the symmetry choice */
	int fill_wait_us;      /* longest wait for registered clients before a
				* batch that is not full runs (eval_client_enter) */
	bool plain_prior;      /* without backends: the game's cheap prior
				* (game_desc.plain_prior) instead of a uniform one */
} eval_options;

typedef struct eval_stats {
	uint64_t requests;   /* eval_position calls */
	uint64_t cache_hits; /* answered from the cache */
	uint64_t evals;      /* positions sent to a backend */
	uint64_t batches;    /* forward calls */
	uint64_t failures;   /* backend errors */
} eval_stats;

typedef struct evaluator evaluator;

/* Defaults: batch 16, 64 MB cache, random symmetry on, seed 1, fill wait
 * 3 ms. */
eval_options eval_options_default(void);

/* An evaluator over n_backends backends (one server thread each; the caller
 * keeps ownership of the backends and frees them after eval_free), using
 * `enc` to encode positions. n_backends = 0 gives the uniform evaluator.
 * NULL with a message on failure. */
evaluator *eval_new(nn_backend **backends, int n_backends, nn_encoding enc,
		    const eval_options *opt, char *err, size_t errlen);
/* Stops the server threads (waiters are answered first) and frees. */
void eval_free(evaluator *ev);

/* Evaluates g for its side to move. policy[game_num_actions(g)] gets a
 * probability per action (0 for illegal ones, summing to 1 over the legal
 * ones); *value the expected result in [-1, 1] for the side to move.
 * Thread-safe; blocks until answered. 0, or -1 when the backend failed
 * (policy uniform, value 0 then). The game must not be over. */
int eval_position(evaluator *ev, const game *g, float *policy, float *value);

/* Scratch for eval_batch: room for `cap` positions (encoded planes, legal
 * moves, requests), made once per search thread so that evaluating a batch
 * allocates nothing. NULL when memory is short. */
typedef struct eval_scratch eval_scratch;
eval_scratch *eval_scratch_new(evaluator *ev, int cap);
void eval_scratch_free(eval_scratch *s);
/* Evaluates n positions (n <= the scratch's cap) in one go: they are posted
 * to the queue together, so one search thread can fill a batch by itself.
 * Same outputs per position as eval_position, and with scores (may be
 * NULL) each position's score head answer: the side to move's final lead
 * in points, as eval_raw_heads gives it (cached with the rest), or NAN
 * when the network has no score head (eval_heads) or the evaluation
 * failed. 0, or -1 when any failed. */
int eval_batch(evaluator *ev, eval_scratch *s, int n, const game *const *games,
	       float *const *policies, float *values, float *scores);
/* eval_batch, writing each position's legal moves (game_legal_moves'
 * list, which the evaluation works out anyway) to legal[i] (room for
 * GAME_MAX_ACTIONS) and their count to n_legal[i]: a search expanding the
 * leaves needs them again. */
int eval_batch_legal(evaluator *ev, eval_scratch *s, int n, const game *const *games,
		     float *const *policies, float *values, float *scores, int *const *legal,
		     int *n_legal);
/* eval_batch in two steps, for a thread that gathers the leaves of
 * several searches (self-play) and goes on at once with one whose leaf
 * needs no network. eval_stage: 0 when g was answered at once (the
 * uniform evaluator, no legal move, an NN cache hit: policy and *value
 * written), 1 when it waits in the scratch for the next eval_post (at most
 * the scratch's cap), -1 when it failed (answered uniform); *score (score
 * may be NULL) as eval_batch gives it, once answered. Each position
 * is a request, encoded once. eval_post posts the waiting positions as one
 * batch and returns when every answer is written: 0, or -1 when any
 * failed. */
int eval_stage(evaluator *ev, eval_scratch *s, const game *g, float *policy, float *value,
	       float *score);
/* eval_stage, writing g's legal moves to legal (room for GAME_MAX_ACTIONS,
 * valid until the answer) and their count to *n_legal, as
 * eval_batch_legal. */
int eval_stage_legal(evaluator *ev, eval_scratch *s, const game *g, float *policy, float *value,
		     float *score, int *legal, int *n_legal);
int eval_post(evaluator *ev, eval_scratch *s);
/* Asks the CPU to bring g's NN cache entry near, for an eval_stage of g
 * a little later: a thread with many searches gathers each one's leaf,
 * then stages them, and the lookups' memory latency overlaps. Changes
 * nothing else; a no-op without a cache. */
void eval_prefetch(evaluator *ev, const game *g);

/* The network's own answer for g under symmetry `sym` (no cache, no random
 * symmetry): what GTP kata-raw-nn shows. Same outputs as eval_position. */
int eval_raw(evaluator *ev, const game *g, int sym, float *policy, float *value);

/* The heads (NN_HEAD_OWN, NN_HEAD_SCORE of nn/net.h) that the network has
 * and every backend of ev computes (nn_backend_heads); 0 without. */
int eval_heads(const evaluator *ev);
/* eval_raw, and the network's heads for g (never cached): ownership[p] for
 * every point p = y * width + x of the board, in [-1, 1], +1 when the side
 * to move will own it; *score the side to move's final lead in points (the
 * head's output times the board's points). Either may be NULL. 0, or -1
 * (outputs of the heads untouched) when a head asked for is missing (see
 * eval_heads), the board is not the network's, or the backend failed. */
int eval_raw_heads(evaluator *ev, const game *g, int sym, float *policy, float *value,
		   float *ownership, float *score);

/* The key the cache uses for g: its position, the side to move, and as much
 * history (and komi) as the encoding sees. */
uint64_t eval_key(const game *g, nn_encoding enc);

/* A thread that will keep posting requests (a search thread for the length
 * of its search) registers as a client. The server then waits, before
 * running a batch that is not full, until every registered client is
 * blocked on an answer (or fill_wait_us passes), so that many clients
 * that each post one leaf still fill a batch. Unregistered threads are
 * served greedily, as before. */
void eval_client_enter(evaluator *ev);
void eval_client_leave(evaluator *ev);

void eval_get_stats(const evaluator *ev, eval_stats *out);
/* Empties the NN cache (GTP clear_cache). */
void eval_clear_cache(evaluator *ev);
/* True when a backend answers (false for the uniform evaluator). */
int eval_has_network(const evaluator *ev);

#endif
