/* export.h: a run's stored games as files a person or another program
 * reads: Go as SGF, other games (Connect Four) as one line of moves.
 *
 * `sente db FILE export-sgf DIR` is its user; the text forms are here so
 * that anything above the store can write them the same way.
 */
#ifndef SENTE_DATA_EXPORT_H
#define SENTE_DATA_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "data/record.h"
#include "data/store.h"

/* A result as SGF's RE says it: B+R, W+3.5, 0 (draw); a Go result with
 * no score and every other game's win have no margin: B+ / W+. `kind` is
 * the store's name of the game ("go", "connect4"). Returns buf. */
const char *export_result_text(const char *kind, int result, double score, int resigned,
			       char *buf, size_t len);

/* A stored Go game as SGF text (malloc'd), or NULL when memory is short:
 * players named by the model that played, RE, DT, each move's comment
 * the search's root value for the mover, full or fast search and its
 * visits. */
char *export_go_sgf(const store_game_info *g, const game_record *r);

/* A record's moves as the game writes them, one line: no separator when
 * every move is one character (Connect Four's columns 1..7, the notation
 * solvers read), else spaces. malloc'd, NULL when memory is short. */
char *export_move_line(const game_record *r);

/* What an export did. */
typedef struct export_counts {
	int64_t listed;   /* games the store gave */
	int64_t sgf;      /* written as DIR/game-ID.sgf (Go) */
	int64_t lines;    /* written as DIR/game-ID.TAG.txt (others) */
	int64_t skipped;  /* rows whose record did not decode: named on `log` */
} export_counts;

/* Writes games into dir (created if missing), newest first: only game
 * `game_id` when it is > 0, else the `limit` newest (all when <= 0).
 * Each file is replaced whole or not at all (fileio_write_text). A
 * corrupt row is named on `log` (when not NULL) and skipped; a file that
 * cannot be written stops the export. A line of the log starts with
 * log_prefix (a command's name, "sente db: "; NULL: none). 0 (check
 * counts->skipped), or -1 with a message. */
int export_games(store *s, const char *dir, int64_t game_id, int64_t limit, FILE *log,
		 const char *log_prefix, export_counts *counts, char *err, size_t errlen);

#endif
