/* sgf.h: reading and writing Go game records in SGF (FF[4], older FF
 * tolerated), and replaying them onto a go_board.
 *
 * What is read: the first game tree of the file, and in it only the main
 * line (the first variation at every branch; later variations are checked
 * for syntax and skipped). Game info: GM (only 1 = Go, anything else is
 * refused), SZ (square 5..19; SZ missing means 19), KM (missing means komi
 * 0, as the SGF specification says, NOT the engine's default 7.5), HA, RU,
 * PB, PW, RE, DT, the root node's C. Setup AB/AW/AE (with FF[4] compressed
 * lists "AB[aa:cc]") in any node: before the first move it is the record's
 * setup; in a later node (GUIs write it when a user edits a game) it is an
 * edit applied before the next move. A point given two stones in one node
 * ("AB[aa]AW[aa]") is refused (AE may clear a point AB or AW set in the
 * same node, as files punch holes in rectangles). Moves B/W, with the C of
 * their node. Pass: "B[]", or "B[tt]" (FF[3] style, boards up to 19).
 * Unknown properties are ignored. Lower-case letters in property
 * identifiers are ignored (FF[3] long names: "AddBlack" reads as AB).
 * Text after the first game tree is ignored.
 *
 * Points are go.h points: y * size + x, y = 0 the bottom row; the pass is
 * size * size. SGF "aa" is the top-left corner, so SGF column c, row r
 * (from the top) is x = c, y = size - 1 - r.
 *
 * Errors a file can cause come back as a nonzero return and a message
 * naming the byte offset (0-based) where the problem was found, e.g.
 * "sgf: byte 17: value not closed (expected ']')". The reader never
 * recurses, so nesting depth costs no stack.
 */
#ifndef SENTE_ENGINE_SGF_H
#define SENTE_ENGINE_SGF_H

#include <stddef.h>
#include <stdint.h>

#include "engine/go.h"

/* Largest file sgf_load_file accepts. */
#define SGF_MAX_FILE (16u << 20)
/* Most moves a record may hold (far above any real game; bounds memory). */
#define SGF_MAX_MOVES 100000

/* A setup stone (AB / AW). */
typedef struct sgf_stone {
	int8_t color;  /* GO_BLACK or GO_WHITE */
	int16_t point; /* y * size + x, never the pass */
} sgf_stone;

/* One move of the main line. */
typedef struct sgf_move {
	int8_t color;  /* GO_BLACK or GO_WHITE; moves out of turn are kept */
	int16_t point; /* y * size + x, or size * size for a pass */
	char *comment; /* C[] of the move's node (malloc'd, unescaped), or NULL */
} sgf_move;

/* A setup change after the first move: AB/AW place a stone (replacing
 * one there), AE clears a point. */
typedef struct sgf_edit {
	int move;      /* applies before moves[move] (n_moves: after the last move) */
	int8_t color;  /* GO_BLACK or GO_WHITE (AB/AW), GO_EMPTY (AE) */
	int16_t point; /* y * size + x, never the pass */
} sgf_edit;

typedef struct sgf_record {
	int game;       /* GM value; always 1 (Go) in a record sgf_read returns */
	int size;       /* board size, 5..19 */
	double komi;    /* KM, 0 when the file has none */
	int handicap;   /* HA, 0 when none */
	char rules[32]; /* RU, "" when none (truncated to fit, as are the next) */
	char pb[64];    /* PB, Black's name */
	char pw[64];    /* PW, White's name */
	char re[32];    /* RE, the result ("B+R", "W+3.5", "0", ...) */
	char dt[32];    /* DT, the date */
	char *comment;  /* C of the root node (malloc'd), or NULL */
	int n_setup;    /* entries in setup[] */
	/* Setup stones, at distinct points, in file order (AE has already
	 * removed its points; a later AB/AW on a point replaces the earlier). */
	sgf_stone *setup;
	int n_moves;     /* entries in moves[] */
	sgf_move *moves; /* the main line */
	int n_edits;     /* entries in edits[] */
	sgf_edit *edits; /* setup after the first move, in file order (by move) */
	int cap_setup;   /* allocated length of setup[] */
	int cap_moves;   /* allocated length of moves[] */
	int cap_edits;   /* allocated length of edits[] */
} sgf_record;

/* An empty record: Go, 19x19, komi 0, no stones. Never fails. */
void sgf_record_init(sgf_record *r);
/* Frees what the record owns and leaves it as sgf_record_init does.
 * Accepts NULL and a zeroed record. */
void sgf_record_free(sgf_record *r);
/* Appends a setup stone, replacing one already at `point`. 0, or -1 when
 * colour or point is out of range or memory runs out. */
int sgf_record_add_setup(sgf_record *r, int color, int point);
/* Removes the setup stone at `point`, if any (AE). */
void sgf_record_remove_setup(sgf_record *r, int point);
/* Appends an edit before moves[move] (move >= every earlier edit's, at
 * most n_moves). 0, or -1 when out of range or memory runs out. */
int sgf_record_add_edit(sgf_record *r, int move, int color, int point);
/* Appends a move; `comment` (may be NULL) is copied. 0, or -1 when colour
 * or point is out of range, the record is full or memory runs out. */
int sgf_record_add_move(sgf_record *r, int color, int point, const char *comment);

/* Parses `len` bytes of SGF (need not be NUL-terminated) into `out`, which
 * is overwritten (it must not hold anything to free). Returns 0, or -1 with
 * a message in err (err may be NULL). Either way `out` may then be given
 * to sgf_record_free; on failure it is empty. */
int sgf_read(const char *text, size_t len, sgf_record *out, char *err, size_t errlen);
/* Reads a file with sgf_read; refuses files over SGF_MAX_FILE bytes. */
int sgf_load_file(const char *path, sgf_record *out, char *err, size_t errlen);

/* Sets up `b` from the record: size and komi, setup stones (with HA >= 2
 * and only Black setup stones, as a handicap: White to move), then the first
 * `upto` moves (negative, or more than there are: all), with the edits
 * before each of them and those that follow the last one played. Each move
 * is played for the colour the record names, so out-of-turn moves replay.
 * An edit that only adds stones to empty points places them as setup
 * stones; one that removes or replaces a stone starts the board afresh from
 * the edited position (the history before it is dropped, as a position
 * set up in a GUI has none), with the same side to move. Returns 0,
 * or -1 with a message naming the move number and its point when a move is
 * illegal, a setup stone cannot be placed, or size or komi is not supported
 * (komi must be a multiple of 0.5). */
int sgf_replay(const sgf_record *r, go_board *b, int upto, char *err, size_t errlen);

/* Builds a record from a board's history: setup stones become AB/AW (after
 * a move: edits), moves become nodes. Only Black setup stones before the
 * first move, two or more: HA is their number. When the game is over RE is
 * filled in (resignation, or the area score). Returns 0, or -1 (out then
 * empty) when memory runs out. `out` is overwritten. */
int sgf_record_from_go(const go_board *b, sgf_record *out);

/* The record as FF[4] text: FF GM CA AP SZ KM, then HA RU PB PW RE DT C
 * when set, AB/AW, and one node per move with its C; edits as a node of
 * AB/AW/AE before the move they precede. Passes are written
 * "[]". Returns a malloc'd NUL-terminated string the caller frees, or NULL
 * when the record is invalid (size, colour or point out of range) or memory
 * runs out. */
char *sgf_write(const sgf_record *r);

#endif
