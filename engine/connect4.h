/* connect4.h: Connect Four on 7 columns by 6 rows, as two bitboards.
 *
 * Bit layout: column c, row r (0 = bottom) is bit c * 7 + r; the seventh
 * bit of each column is a sentinel row that keeps shifts from wrapping.
 * Moves are columns 0..6. Player 0 moves first.
 */
#ifndef SENTE_ENGINE_CONNECT4_H
#define SENTE_ENGINE_CONNECT4_H

#include <stdbool.h>
#include <stdint.h>

#define C4_WIDTH 7
#define C4_HEIGHT 6
#define C4_CELLS (C4_WIDTH * C4_HEIGHT)

typedef struct c4_board {
	uint64_t stones[2];        /* discs of player 0 and player 1 */
	uint8_t height[C4_WIDTH];  /* discs in each column */
	int8_t moves[C4_CELLS];    /* columns played, in order */
	int n_moves;
	int winner;                /* -1 none yet, 0 or 1 */
	int resigned;              /* -1, or the player that resigned */
} c4_board;

void c4_init(c4_board *b);
int c4_to_move(const c4_board *b);
bool c4_is_legal(const c4_board *b, int col);
int c4_legal_moves(const c4_board *b, int *out);
int c4_play(c4_board *b, int col); /* 0, or -1 illegal */
bool c4_undo(c4_board *b);
void c4_resign(c4_board *b, int player);
bool c4_is_over(const c4_board *b); /* four in a row, full board or resignation */
int c4_result(const c4_board *b);   /* +1 first player won, -1 second, 0 draw/none */
int c4_cell(const c4_board *b, int col, int row); /* -1 empty, else player */
uint64_t c4_hash(const c4_board *b);

#endif
