/* engine.h: the GTP engine front end. It reads GTP v2 commands, keeps the
 * game, searches with the network (or a uniform policy without one), and
 * answers on an output stream. Handlers are a table, one small function per
 * command. Malformed input gets a `?` answer, never a crash. */
#ifndef SENTE_GTP_ENGINE_H
#define SENTE_GTP_ENGINE_H

#include <stdbool.h>
#include <stdio.h>

#include "engine/game.h"
#include "nn/backend.h"
#include "search/mcts.h"

typedef struct gtp_options {
	game_params game;        /* game, initial board size and komi */
	bool game_given;         /* the game was asked for: a network of another is refused
				  * (else the network's game is played) */
	bool size_given;         /* the size was asked for: a network of another size is
				  * refused (else the network's size is played) */
	const char *weights;     /* model file (.sente or Leela Zero); NULL: uniform policy */
	mcts_options search;     /* threads, visit and playout limits, seed, memory */
	bool limits_set;         /* -v/-p given: they apply under time control too */
	int batch;               /* largest evaluation batch */
	nn_backend_options nn;   /* precision and compute threads of the network */
	size_t cache_bytes;      /* NN cache size */
	bool ponder;             /* think during the opponent's turn */
	float resign_pct;        /* resign below this winrate, percent; 0 never */
	double lag;              /* seconds kept in reserve per move */
	bool quiet;              /* no diagnostics on stderr */
	bool plain_prior;        /* without a network, search from the game's cheap prior
				  * (game_desc.plain_prior) rather than a uniform one */
} gtp_options;

/* Go 19x19, komi 7.5, no weights (the game's cheap prior), 2 threads,
 * 800 visits, batch 16, pondering on, resign at 10%, lag 1 s. */
gtp_options gtp_options_default(void);

typedef struct gtp_engine gtp_engine;

/* A new engine on an empty board; NULL with a message when the weights do
 * not load, the backend cannot start, or the game parameters are bad. */
gtp_engine *gtp_engine_new(const gtp_options *opt, char *err, size_t errlen);
void gtp_engine_free(gtp_engine *e);

/* Handles one input line and writes the answer (if the line held a command)
 * to out. Analysis commands run one bounded search when there is no input
 * stream to end them. Returns false once `quit` has been answered. */
bool gtp_engine_handle(gtp_engine *e, const char *line, size_t len, FILE *out);
/* Reads commands from in until EOF or quit, answering on out; analysis
 * runs until the next input line arrives. Returns 0. */
int gtp_engine_run(gtp_engine *e, FILE *in, FILE *out);

/* The current game (read-only), for tests and callers. */
const game *gtp_engine_game(const gtp_engine *e);
/* Which backend runs the network, e.g. "cuda fp16 on GPU 0 (NVIDIA H100)"
 * or "cpu fp32 (CUDA not used: no CUDA device found)"; "none" without one. */
const char *gtp_engine_backend(const gtp_engine *e);

#endif
