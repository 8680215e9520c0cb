/* engine.h: the GTP engine front end. It reads GTP v2 commands, keeps the
 * game, and answers on an output stream. Handlers are a table, one small
 * function per command. Malformed input gets a `?` answer, never a crash. */
#ifndef SENTE_GTP_ENGINE_H
#define SENTE_GTP_ENGINE_H

#include <stdbool.h>
#include <stdio.h>

#include "engine/game.h"

typedef struct gtp_options {
	game_params game; /* game, initial board size and komi */
} gtp_options;

typedef struct gtp_engine gtp_engine;

/* A new engine on an empty board; NULL when out of memory or the game
 * parameters are bad (err says which). */
gtp_engine *gtp_engine_new(const gtp_options *opt, char *err, size_t errlen);
void gtp_engine_free(gtp_engine *e);

/* Handles one input line and writes the answer (if the line held a command)
 * to out. Returns false once `quit` has been answered. */
bool gtp_engine_handle(gtp_engine *e, const char *line, size_t len, FILE *out);
/* Reads lines from in until EOF or quit. Returns 0. */
int gtp_engine_run(gtp_engine *e, FILE *in, FILE *out);

/* The current game (read-only), for tests and callers. */
const game *gtp_engine_game(const gtp_engine *e);

#endif
