/* zobrist.c: deterministic Zobrist keys (see zobrist.h). */
#include "engine/zobrist.h"

#include "engine/rng.h"

uint64_t zobrist_table[2][GO_PADDED];

uint64_t zobrist_key(int color, int p)
{
	return rng_mix(ZOBRIST_SEED + (uint64_t)color * GO_PADDED + (uint64_t)p);
}

uint64_t zobrist_black_to_move(void)
{
	/* An index past every stone key, so it collides with none of them. */
	return rng_mix(ZOBRIST_SEED + 2 * GO_PADDED);
}

/* Runs before main() and before any thread exists, so the table needs no
 * lock and every reader sees it filled. */
__attribute__((constructor)) static void zobrist_fill(void)
{
	for (int c = 0; c < 2; c++)
		for (int p = 0; p < GO_PADDED; p++)
			zobrist_table[c][p] = zobrist_key(c, p);
}
