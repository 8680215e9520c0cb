/* connect4.c: Connect Four on bitboards (see connect4.h for the layout). */
#include "engine/connect4.h"
#include "engine/game_desc.h"
#include "engine/rng.h"

#include <assert.h>
#include <string.h>

#define C4_COL_BITS (C4_HEIGHT + 1)
#define C4_TYPICAL_LENGTH 22 /* plies of a typical game */
#define C4_RANDOM_OPENING 8  /* self-play's random opening moves, at most */


/* True when the bitboard holds four in a row in any direction: vertical (1),
 * horizontal (7), and the two diagonals (6, 8). The sentinel row keeps the
 * shifts from joining discs of different columns. */
static bool c4_four(uint64_t s)
{
	static const int dirs[4] = { 1, C4_COL_BITS, C4_COL_BITS - 1, C4_COL_BITS + 1 };
	for (int i = 0; i < 4; i++) {
		uint64_t m = s & (s >> dirs[i]);
		if (m & (m >> (2 * dirs[i])))
			return true;
	}
	return false;
}

void c4_init(c4_board *b)
{
	memset(b, 0, sizeof(*b));
	b->winner = -1;
	b->resigned = -1;
}

int c4_to_move(const c4_board *b) { return b->n_moves & 1; }

bool c4_is_over(const c4_board *b)
{
	return b->winner >= 0 || b->resigned >= 0 || b->n_moves == C4_CELLS;
}

bool c4_is_legal(const c4_board *b, int col)
{
	return col >= 0 && col < C4_WIDTH && !c4_is_over(b) && b->height[col] < C4_HEIGHT;
}

int c4_legal_moves(const c4_board *b, int *out)
{
	int n = 0;
	for (int c = 0; c < C4_WIDTH; c++)
		if (c4_is_legal(b, c))
			out[n++] = c;
	return n;
}

int c4_play(c4_board *b, int col)
{
	if (!c4_is_legal(b, col))
		return -1;
	int p = c4_to_move(b);
	b->stones[p] |= 1ULL << (col * C4_COL_BITS + b->height[col]);
	b->height[col]++;
	b->moves[b->n_moves++] = (int8_t)col;
	if (c4_four(b->stones[p]))
		b->winner = p;
	return 0;
}

bool c4_undo(c4_board *b)
{
	if (b->resigned >= 0) {
		/* A resignation is not a move: taking it back reopens the game. */
		b->resigned = -1;
		return true;
	}
	if (b->n_moves == 0)
		return false;
	int col = b->moves[--b->n_moves];
	int p = b->n_moves & 1;
	b->height[col]--;
	b->stones[p] &= ~(1ULL << (col * C4_COL_BITS + b->height[col]));
	b->winner = -1; /* the position before a win had no winner */
	return true;
}

void c4_resign(c4_board *b, int player)
{
	if (!c4_is_over(b))
		b->resigned = player;
}

int c4_result(const c4_board *b)
{
	int w = b->winner;
	if (w < 0 && b->resigned >= 0)
		w = 1 - b->resigned;
	if (w < 0)
		return 0;
	return w == 0 ? 1 : -1;
}

int c4_cell(const c4_board *b, int col, int row)
{
	assert(col >= 0 && col < C4_WIDTH && row >= 0 && row < C4_HEIGHT);
	uint64_t bit = 1ULL << (col * C4_COL_BITS + row);
	if (b->stones[0] & bit)
		return 0;
	if (b->stones[1] & bit)
		return 1;
	return -1;
}

/* The two bitboards determine the position (and the side to move), so a
 * strong mix of them is as good as a Zobrist table and needs none. */
uint64_t c4_hash(const c4_board *b)
{
	return rng_mix(b->stones[0] ^ rng_mix(b->stones[1] + 0x51ed27u));
}

/* ---- the descriptor ------------------------------------------------------- */

static void c4_numbers(const game_params *p, game_numbers *out)
{
	out->width = C4_WIDTH;
	out->height = C4_HEIGHT;
	out->actions = C4_WIDTH;
	out->typical_length = C4_TYPICAL_LENGTH;
	/* AlphaZero.jl's schedule: 1 to ply 20, falling to 0.3 at ply 30 and
	 * staying there. It keeps self-play's games apart and explores the
	 * whole opening (docs/LEARNING.md, "A temperature floor" and "An
	 * opening at temperature 1 to ply 20"). */
	out->temperature_moves = 20;
	out->temperature_end = 30;
	out->temperature_floor = 0.3;
	/* AlphaZero.jl's 2: the wider searches teach more than 1.1's
	 * (docs/LEARNING.md, "A wider self-play search"). */
	out->selfplay_cpuct = 2.0;
	/* Up to 8 random opening moves: self-play otherwise opens nearly
	 * every game in the centre column, and positions brought to the
	 * engine start anywhere (docs/LEARNING.md, "Random openings"). */
	out->selfplay_random_opening = C4_RANDOM_OPENING;
	out->opening_moves = 2;
	out->max_moves = C4_CELLS;
	out->resign_after = 8;
}

static void c4_run_defaults(const game_params *p, game_run_defaults *out)
{
	out->blocks = 4;
	out->channels = 48;
	out->visits = 200;
	out->cheap_visits = 40;
	out->parallel_games = 32;
	out->window = 150000; /* docs/LEARNING.md, "A larger window" */
	/* A quarter of a typical game's plies, less its random opening
	 * (half its most on average) */
	out->positions_per_game = 0.25 * (C4_TYPICAL_LENGTH - C4_RANDOM_OPENING / 2.0);
	/* Carried games erred more in search: docs/LEARNING.md, "Carrying
	 * self-play games across iterations" */
	out->carry_games = false;
}

/* Columns by how many lines of four pass through their cells. */
static void c4_plain_prior(const game *g, const int *legal, int n, float *w)
{
	static const float col[C4_WIDTH] = { 3, 4, 5, 7, 5, 4, 3 };
	(void)g;
	for (int i = 0; i < n; i++)
		w[i] = legal[i] >= 0 && legal[i] < C4_WIDTH ? col[legal[i]] : 1;
}

const game_desc game_connect4 = {
	.kind = GAME_KIND_CONNECT4,
	.name = "connect4",
	.title = "Connect Four",
	.aliases = (const char *const[]){ "c4", NULL },
	.defaults = { .kind = GAME_KIND_CONNECT4, .size = C4_WIDTH, .komi = 0 },
	.has_size = false,
	.min_size = C4_WIDTH,
	.max_size = C4_WIDTH,
	.has_komi = false,
	.has_pass = false,
	.has_go_board = false,
	.num_symmetries = 2,
	.encoding = "c4",
	.net_encoding = "c4",
	.value_hidden = 64,
	.value_outputs = 3,
	.solved_positions = true,
	.numbers = c4_numbers,
	.run_defaults = c4_run_defaults,
	.plain_prior = c4_plain_prior,
};
