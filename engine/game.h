/* game.h: the one game interface every layer above engine/ sees.
 *
 * A `game` holds a position plus its history (needed for superko, undo and the
 * network's history planes). It is a plain value: copying it with `=` or
 * memcpy gives an independent game, so search can copy positions without
 * allocating. Moves are small integers ("actions"):
 *   Go:           y * size + x, x = column (A..T without I, from the left),
 *                 y = row - 1 (row 1 is the bottom, as GTP prints it);
 *                 pass = size * size.  Same indexing as Leela Zero.
 *   Connect Four: the column 0..6 (text "1".."7"); no pass.
 * Players: GAME_BLACK (0) moves first ("b" in GTP, also for Connect Four),
 * GAME_WHITE (1) second.
 */
#ifndef SENTE_ENGINE_GAME_H
#define SENTE_ENGINE_GAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/connect4.h"
#include "engine/go.h"

typedef enum game_kind {
	GAME_KIND_GO = 0,
	GAME_KIND_CONNECT4 = 1,
} game_kind;
#define GAME_KIND_COUNT 2 /* game kinds: the entries of game_descs[] (game_desc.h) */

enum { GAME_BLACK = 0, GAME_WHITE = 1 };

/* Largest action count over all games and sizes: 19x19 points + pass. */
#define GAME_MAX_ACTIONS (GO_MAX_SIZE * GO_MAX_SIZE + 1)
#define GAME_MOVE_NONE (-1)

typedef struct game_params {
	game_kind kind; /* which game */
	int size;       /* Go board size 5..19; ignored for Connect Four */
	double komi;    /* Go komi, a multiple of 0.5; ignored for Connect Four */
} game_params;

typedef struct game {
	game_params params;
	union {
		go_board go;
		c4_board c4;
	} u;
} game;

/* Status codes of the fallible calls. */
typedef enum game_status {
	GAME_OK = 0,
	GAME_ERR_PARAMS = -1,  /* bad size or komi */
	GAME_ERR_ILLEGAL = -2, /* occupied, suicide, superko, full column, game over */
	GAME_ERR_SYNTAX = -3,  /* move text not understood */
	GAME_ERR_FULL = -4,    /* history full */
} game_status;

/* Default parameters for a kind: Go 19x19 komi 7.5; Connect Four 7x6.
 * What a game is (names, sizes, numbers, capabilities) is its descriptor:
 * engine/game_desc.h; these three read it. */
game_params game_params_default(game_kind kind);
/* A game's name or alias ("go", "connect4", "c4") -> kind; returns false
 * when the name is unknown. */
bool game_kind_from_name(const char *name, game_kind *out);
const char *game_kind_name(game_kind kind);

/* Starts an empty position. Returns GAME_ERR_PARAMS when out of range. */
game_status game_init(game *g, const game_params *p);
/* *dst = *src, copying only what the position uses (a Go game's history
 * so far, not its whole capacity). */
void game_copy(game *dst, const game *src);

int game_num_actions(const game *g); /* policy size: points (+ pass) */
int game_width(const game *g);       /* board columns */
int game_height(const game *g);      /* board rows */
int game_to_move(const game *g);     /* GAME_BLACK or GAME_WHITE */
int game_move_count(const game *g);  /* moves played so far (passes count) */
int game_pass_move(const game *g);   /* the pass action, or GAME_MOVE_NONE */
/* Go: `move` fills one of the mover's own true eyes (see go.h); false for
 * Connect Four. */
bool game_fills_own_eye(const game *g, int move);
/* The action at history index i (0 = first move), GAME_MOVE_NONE if out of range. */
int game_history_move(const game *g, int i);

bool game_is_legal(const game *g, int move);
/* Fills out[] (room for GAME_MAX_ACTIONS) with the legal actions of the side
 * to move, in increasing order; returns the count (0 when the game is over). */
int game_legal_moves(const game *g, int *out);
game_status game_play(game *g, int move);
/* Gives the move to `player` without playing (Go only; Connect Four's turn
 * follows from the discs, so there it returns false unless it is already
 * `player`'s turn). */
bool game_set_to_move(game *g, int player);
/* Takes back the last move; returns false when there is none. */
bool game_undo(game *g);

/* The side `player` resigns: the game is over and the other side has won. */
void game_resign(game *g, int player);
/* The komi in force (a GTP `komi` may have changed it); 0 without komi. */
double game_komi(const game *g);
/* The player who resigned, or -1 when nobody has. */
int game_resigned(const game *g);
bool game_is_over(const game *g);
/* Final result for Black: +1 Black won, -1 White won, 0 draw. Valid when over;
 * when not over, Go gives the result of scoring the board as it stands. */
int game_result(const game *g);
/* Go: Tromp-Taylor area score Black minus White minus komi; Connect Four: the
 * result (+1/-1/0). */
double game_score(const game *g);

uint64_t game_hash(const game *g); /* Zobrist hash of the position and side to move */

int game_num_symmetries(const game *g); /* 8 for Go, 2 for Connect Four */
/* The image of `move` under symmetry `sym` (0 = identity); pass maps to pass.
 * Go's eight are numbered as Leela Zero's (`heatmap N` is `kata-raw-nn N`). */
int game_symmetry_move(const game *g, int sym, int move);
/* The table of game_symmetry_move(g, sym, a) for every action a (the pass
 * included), made once: no call and division per move, no copy. */
const int16_t *game_symmetry_table(const game *g, int sym);
/* The inverse symmetry of `sym`: game_symmetry_move(g, inv, game_symmetry_move(g, sym, m)) == m. */
int game_symmetry_inverse(const game *g, int sym);

/* Move text: Go "D4", "pass" (GTP vertex), Connect Four "1".."7".
 * game_move_to_text writes into buf (at least 8 bytes) and returns buf. */
const char *game_move_to_text(const game *g, int move, char *buf);
/* Case-insensitive; accepts "pass" for Go. GAME_ERR_SYNTAX when not a move of
 * this board (it may still be illegal). */
game_status game_move_from_text(const game *g, const char *text, int *move);

/* Cell contents for display and encoding: -1 empty, else the player index. */
int game_cell(const game *g, int x, int y);

/* Writes a human-readable board to buf (GTP showboard style), returns length. */
size_t game_print(const game *g, char *buf, size_t len);

/* The encoding of a position into network input planes lives in nn/encode.h
 * (it depends on the network's encoding, not only on the game). */

#endif
