/* replay.h: the learner's window of recent positions, in RAM.
 *
 * Finished games are kept as records (moves plus sparse visit counts), not
 * as input planes: a sampled position is rebuilt by replaying its game's
 * moves, then encoded under a random board symmetry (train/batch.c). The
 * window holds the most recent `window` recorded positions; older games are
 * dropped whole. The window may be narrowed as a run goes on
 * (replay_set_window, replay_window_size: KataGo's growing window), and a
 * reuse cap retires the oldest games once they have been drawn that many
 * times on average (replay_set_reuse_cap).
 */
#ifndef SENTE_TRAIN_REPLAY_H
#define SENTE_TRAIN_REPLAY_H

#include <stdint.h>

#include "data/record.h"
#include "nn/encode.h"
#include "train/trainer.h"

typedef struct replay_buffer replay_buffer;

/* An empty buffer keeping up to `window` positions. NULL when memory is
 * short. */
replay_buffer *replay_new(int64_t window);
void replay_free(replay_buffer *rb);
/* Value targets from now on: record_value_target's with q_weight l,
 * lambda and cut (the defaults, 0, 1 and false: the result z alone). */
void replay_set_value_target(replay_buffer *rb, float l, float lambda, bool cut);

/* KataGo's growing window: the positions to sample from after `seen`
 * positions of a run, a power law anchored at `min`,
 *   min + beta * min * ((seen / min)^alpha - 1) / alpha,
 * so that the window is `min` when seen = min and first grows by beta per
 * new position, then ever more slowly (as seen^alpha). At least `min`, at
 * most `max` (0: no limit). alpha in (0, 1], beta >= 0, min >= 1. */
int64_t replay_window_size(int64_t seen, int64_t min, double alpha, double beta, int64_t max);
/* Narrows (or widens, up to the size given to replay_new) the window:
 * the oldest games are dropped while the rest still hold `window`. */
void replay_set_window(replay_buffer *rb, int64_t window);
/* The reuse cap: a game whose positions have been drawn `cap` times on
 * average (the expected draws of one of its positions since it came, sum
 * over the draws of 1 / positions held) leaves the window before a draw
 * would take it past the cap, oldest first. 0 (the default): no cap. */
void replay_set_reuse_cap(replay_buffer *rb, double cap);
/* The expected draws of each position of the oldest game held (0 when
 * empty): with a cap, never above it. */
double replay_oldest_reuse(const replay_buffer *rb);

/* Copies the game in (its full-search moves become positions), dropping
 * the oldest games beyond the window. 0, or -1 when memory is short. */
int replay_add_game(replay_buffer *rb, const game_record *r);
int64_t replay_positions(const replay_buffer *rb); /* positions held */
int64_t replay_games(const replay_buffer *rb);     /* games held */
int64_t replay_added(const replay_buffer *rb);     /* positions ever added */

/* Fills b with n positions drawn uniformly from the window, each under a
 * uniformly random symmetry. 0; REPLAY_USED_UP when the reuse cap has
 * retired every game (play more games first); -1 when the buffer is empty
 * or a record does not replay. */
#define REPLAY_USED_UP 1
int replay_sample(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, train_batch *b);
/* One rank's share of a data-parallel batch: draws the same n positions
 * and symmetries as replay_sample (the same numbers from *rng), but
 * encodes only positions first .. first + count - 1, into slots 0 ..
 * count - 1 of b. 0, or -1 as replay_sample (or a share out of range). */
int replay_sample_share(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, int first,
			int count, train_batch *b);
/* Draws as replay_sample, but the draws neither count toward the reuse
 * cap nor retire games: for statistics (the batch-norm recomputation),
 * not training. 0, or -1. */
int replay_sample_uncounted(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n,
			    train_batch *b);

#endif
