/* replay.h: the learner's window of recent positions, in RAM.
 *
 * Finished games are kept as records (moves plus sparse visit counts), not
 * as input planes: a sampled position is rebuilt by replaying its game's
 * moves, then encoded under a random board symmetry (train/batch.c). The
 * window holds the most recent `window` recorded positions; older games are
 * dropped whole.
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
/* Value targets from now on: (1 - l) z + l q (record_value_target);
 * 0 (the default): the result z alone. */
void replay_set_value_q_weight(replay_buffer *rb, float l);

/* Copies the game in (its full-search moves become positions), dropping
 * the oldest games beyond the window. 0, or -1 when memory is short. */
int replay_add_game(replay_buffer *rb, const game_record *r);
int64_t replay_positions(const replay_buffer *rb); /* positions held */
int64_t replay_games(const replay_buffer *rb);     /* games held */
int64_t replay_added(const replay_buffer *rb);     /* positions ever added */

/* Fills b with n positions drawn uniformly from the window, each under a
 * uniformly random symmetry. 0, or -1 when the buffer is empty or a record
 * does not replay. */
int replay_sample(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, train_batch *b);
/* One rank's share of a data-parallel batch: draws the same n positions
 * and symmetries as replay_sample (the same numbers from *rng), but
 * encodes only positions first .. first + count - 1, into slots 0 ..
 * count - 1 of b. 0, or -1 as replay_sample (or a share out of range). */
int replay_sample_share(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, int first,
			int count, train_batch *b);

#endif
