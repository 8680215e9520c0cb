/* zobrist.h: Zobrist keys for Go positions.
 *
 * Keys are a pure function of (colour, padded point), splitmix64 of a fixed
 * seed, so every process and every thread sees the same keys. A table of
 * them is filled before main() runs (a constructor), which keeps lookups a
 * single load and needs no locking.
 */
#ifndef SENTE_ENGINE_ZOBRIST_H
#define SENTE_ENGINE_ZOBRIST_H

#include <stdint.h>

#include "engine/go.h"

#define ZOBRIST_SEED 0x53454e5445474fULL /* "SENTEGO" */

/* The key of a `color` (GO_BLACK or GO_WHITE) stone at padded point `p`,
 * computed from scratch; zobrist_stone() returns the same value faster. */
uint64_t zobrist_key(int color, int p);

/* Filled from zobrist_key() at load time; read it through zobrist_stone(). */
extern uint64_t zobrist_table[2][GO_PADDED];

static inline uint64_t zobrist_stone(int color, int p)
{
	return zobrist_table[color][p];
}

/* Mixed into go_hash() when Black is to move. */
uint64_t zobrist_black_to_move(void);

#endif
