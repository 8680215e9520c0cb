/* go.h: the rules of Go on square boards 5x5 to 19x19.
 *
 * Area scoring (Tromp-Taylor), real komi, positional superko, suicide
 * illegal, two consecutive passes end the game, resignation, fixed and free
 * handicap. The board is a padded array with a sentinel border; stones of a
 * group are linked in a ring and each group tracks its liberties, so a move
 * costs no allocation. The history (moves, setup stones, position hashes) is
 * kept inside the struct so a go_board is a plain value that can be copied.
 *
 * Points are y * size + x (x from the left, y = 0 the bottom row, as GTP's
 * "A1"); the pass is size * size. Colours: 0 Black, 1 White, -1 empty.
 */
#ifndef SENTE_ENGINE_GO_H
#define SENTE_ENGINE_GO_H

#include <stdbool.h>
#include <stdint.h>

#define GO_MIN_SIZE 5
#define GO_MAX_SIZE 19
#define GO_STRIDE (GO_MAX_SIZE + 2)         /* padded row length */
#define GO_PADDED (GO_STRIDE * (GO_MAX_SIZE + 2))
/* History capacity (moves plus setup stones). A game also ends after
 * 3 * size * size moves, which always fits. */
#define GO_MAX_HISTORY 1200
/* Past positions kept for the network's history planes (Leela Zero uses 8). */
#define GO_PAST_POSITIONS 8
/* Words of the superko Bloom filter (16384 bits). */
#define GO_SEEN_WORDS 256

enum { GO_BLACK = 0, GO_WHITE = 1, GO_EMPTY = -1 };

/* One entry of the history: a move, or a setup stone (handicap, SGF AB/AW). */
typedef struct go_action {
	int16_t point;  /* point index, or the pass */
	int8_t color;   /* who played it */
	int8_t setup;   /* 1 for a placed setup stone, 0 for a move */
} go_action;

typedef struct go_board {
	/* --- filled in by go.c; see there for the invariants --- */
	int size;        /* 5..19 */
	double komi;     /* a multiple of 0.5, may be negative */
	int to_move;     /* GO_BLACK or GO_WHITE */
	int passes;      /* consecutive passes at the end of the history */
	int resigned;    /* -1, or the colour that resigned */
	int ko_point;    /* padded index of the simple-ko point, or 0 */
	uint64_t hash;   /* Zobrist hash of stones (side to move mixed in by go_hash) */
	int n_moves;     /* moves played (passes included, setup stones not) */
	int n_history;   /* entries in history[] */
	int n_empty;     /* entries in empty[] */
	int min_empty;   /* fewest empty points of any position in the history:
			  * one with fewer cannot repeat an earlier one */
	/* Board, padded: cell[] holds GO_EMPTY, GO_BLACK, GO_WHITE or the
	 * border value 2. */
	int8_t cell[GO_PADDED];
	int16_t next[GO_PADDED];   /* next stone in the group's ring */
	int16_t group[GO_PADDED];  /* group id (the padded index of its root) */
	int16_t libs[GO_PADDED];   /* exact liberty count, valid at the root */
	int16_t stones[GO_PADDED]; /* stone count, valid at the root */
	int16_t empty[GO_MAX_SIZE * GO_MAX_SIZE]; /* empty points (padded), any order */
	int16_t empty_at[GO_PADDED];  /* index in empty[] of an empty point */
	go_action history[GO_MAX_HISTORY];
	uint64_t past_hash[GO_MAX_HISTORY + 1]; /* position hash after each history entry */
	/* Bloom filter over past_hash[]: a clear bit proves a position new, so
	 * the superko scan of past_hash[] runs only on a hit. */
	uint64_t seen[GO_SEEN_WORDS];
	/* Bit i: White was to move when the history had i entries (restores
	 * the side to move on undo, which a handicap or an out-of-turn move
	 * may have set). */
	uint64_t white_at[(GO_MAX_HISTORY + 64) / 64];
	/* Ring of the last GO_PAST_POSITIONS positions (unpadded, y*size+x):
	 * past[(past_head - k) mod N] is the position k moves ago. Setup stones
	 * change the newest entry instead of adding one. */
	int8_t past[GO_PAST_POSITIONS][GO_MAX_SIZE * GO_MAX_SIZE];
	int past_head;   /* newest entry of past[] */
	int past_count;  /* valid entries in past[], 1..GO_PAST_POSITIONS */
} go_board;

/* Empty board; returns 0, or -1 when size or komi is out of range. */
int go_init(go_board *b, int size, double komi);
/* *dst = *src as far as any reader can tell: without the unused end of
 * the history arrays (most of the struct's 25 KB early in a game), nor the
 * per-point arrays' room beyond a smaller board (a 9x9 board copies about
 * half of a 19x19 one): what a search's descent copies. */
void go_copy(go_board *dst, const go_board *src);
/* Sets komi (a multiple of 0.5); returns -1 when it is not. */
int go_set_komi(go_board *b, double komi);

static inline int go_pass_move(const go_board *b) { return b->size * b->size; }
int go_to_move(const go_board *b);
int go_color_at(const go_board *b, int x, int y);
/* The colour at (x, y) k positions ago (k = 0 now, up to GO_PAST_POSITIONS-1);
 * GO_EMPTY before the first position. */
int go_color_at_past(const go_board *b, int k, int x, int y);
/* The whole board k positions ago (k as above): the colour of each point
 * y*size+x; NULL before the first position. */
const int8_t *go_past_board(const go_board *b, int k);
/* Liberties of the group at (x, y), 0 when empty. */
int go_liberties_at(const go_board *b, int x, int y);

/* Legal for the side to move: empty point, not suicide, not repeating an
 * earlier whole-board position (positional superko); pass is always legal
 * while the game is not over, and nothing is once it is. */
bool go_is_legal(const go_board *b, int move);
/* True when `move` is an empty point whose four neighbours are the mover's
 * stones (or the edge) and that the opponent cannot make false: the eyes
 * the playouts and self-play's passing rule leave alone. */
bool go_fills_own_eye(const go_board *b, int move);
/* The legal moves, pass last, in increasing order; 0 once the game is over.
 * out[] needs room for size * size + 1 moves. */
int go_legal_moves(const go_board *b, int *out);
/* Plays for the side to move. 0, or -1 illegal, -2 history full. The game
 * being over does not refuse a move (GTP lets a GUI play on after two
 * passes); callers that mind check go_is_over() first. */
int go_play(go_board *b, int move);
/* Plays for `color` (GTP "play w D4" out of turn): the side to move becomes
 * `color` first. Same return values. */
int go_play_color(go_board *b, int color, int move);
/* Gives the move to `color` without playing (GTP genmove for the side not
 * on move); undo restores the earlier side with the entry before it. */
void go_set_to_move(go_board *b, int color);
/* Takes back the last history entry (a move or setup stone) by replaying the
 * rest; false when the history is empty. A resignation is taken back too. */
bool go_undo(go_board *b);

/* Setup stone (handicap, SGF AB/AW): not a move, no capture, no side change.
 * Returns -1 if the point is occupied or the history full, or if the stone
 * would leave a group (its own or a neighbour) without liberties. */
int go_place_stone(go_board *b, int color, int point);
/* The standard GTP handicap placements for n stones (2..9, size-dependent);
 * writes them to points[] and returns n, or -1 when n is not allowed on this
 * size. Does not touch the board. */
int go_fixed_handicap_points(int size, int n, int *points);
/* Places handicap stones for Black and gives White the move. -1 when the
 * board is not empty or n not allowed. */
int go_set_handicap(go_board *b, const int *points, int n);

void go_resign(go_board *b, int color);
/* Two consecutive passes, a resignation, or 3 * size * size moves. */
bool go_is_over(const go_board *b);
/* Tromp-Taylor area score: Black's stones and empty regions reaching only
 * Black, minus White's, minus komi. */
double go_score(const go_board *b);
/* +1 Black wins, -1 White wins, 0 draw (resignation decides first). */
int go_result(const go_board *b);
/* Ownership by area rules, per point y*size+x: GO_BLACK, GO_WHITE or GO_EMPTY
 * (dame). */
void go_area(const go_board *b, int8_t *owner);
uint64_t go_hash(const go_board *b); /* stones plus side to move */
/* Hash of the stones only, recomputed from scratch (for tests). */
uint64_t go_hash_recompute(const go_board *b);

/* Fast random playout with simple ko only (as fast engines do in playouts):
 * uniformly random legal moves that do not fill the mover's own single-point
 * eyes, until two passes or 3 * size * size moves. Does not record history
 * (the board's history is left inconsistent: use a copy). Returns the
 * number of moves played. `rng` is an rng_xorshift64 state (engine/rng.h), nonzero. */
int go_playout(go_board *b, uint64_t *rng);

/* Checks every internal invariant (groups, liberties, hash); for tests.
 * Returns true when consistent. */
bool go_check(const go_board *b);

#endif
