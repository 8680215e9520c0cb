/* internal.h: what the files of the GTP engine share (engine.c: input,
 * answers, the command table and the GTP v2 commands; analyze.c: analysis,
 * raw network output and estimates; extensions.c: the KataGo, Leela Zero,
 * KGS and GoGui extensions). Not part of the module's API. */
#ifndef SENTE_GTP_INTERNAL_H
#define SENTE_GTP_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "engine/game.h"
#include "gtp/engine.h"
#include "gtp/parse.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/mcts.h"
#include "search/timectl.h"

/* What `version` answers: Leela Zero's GTP level first (Lizzie reads the
 * number after the first dot and wants 15 or more), sente's own version
 * after it. */
#define GTP_SENTE_VERSION "0.1.0" /* sente's own version (cli/cli.h's SENTE_VERSION) */
#define GTP_VERSION "0.17.0+sente." GTP_SENTE_VERSION

/* Input read straight from the file descriptor, so the engine can tell
 * whether a next line is waiting (analysis runs until one arrives) without
 * stdio's buffer hiding it. */
typedef struct gtp_input {
	int fd;                  /* where commands come from */
	char buf[1 << 16];       /* bytes read, not yet handed out */
	size_t len;              /* bytes in buf */
	bool eof;                /* read() reported the end */
	bool skipping;           /* dropping the rest of an over-long line */
	char line[GTP_MAX_LINE * 2]; /* the line being handled */
} gtp_input;

/* A growable answer text; answers are small and not on a hot path. */
typedef struct gtp_reply {
	char *text; /* NUL-terminated */
	size_t len; /* bytes used, without the NUL */
	size_t cap; /* bytes allocated */
} gtp_reply;

struct gtp_engine {
	gtp_options opt;   /* as created */
	game game;         /* the position and its history */
	gtp_command cmd;   /* the command being handled */
	gtp_reply reply;   /* its answer */
	bool quit;         /* `quit` was answered */
	nn_net *net;       /* the network, NULL without weights */
	nn_backend_set bes; /* its backends (one per GPU, or the CPU) */
	evaluator *ev;     /* evaluation queue (uniform without a network) */
	nn_encoding enc;   /* the network's input encoding */
	mcts *search;      /* the search tree */
	timectl time;      /* time settings and clocks */
	gtp_input *in;     /* the command stream, NULL when lines are handed in */
	FILE *out;         /* where answers go */
	bool pondering;    /* a background search runs for the opponent's turn */
	bool streamed;     /* the handler wrote its answer itself (analysis) */
	bool cancellable;  /* the search in progress ends when an input line arrives
			    * (kata-search_cancellable) */
	bool cancelled;    /* ... and it did */
	char pb[64], pw[64], rules[32]; /* PB, PW, RU of the last loadsgf, for
				 * printsgf ("" after clear_board or none) */
};


/* Handlers return true for success ("="), false for failure ("?"); either
 * way the reply holds the text. */
typedef bool (*gtp_handler)(gtp_engine *e, const gtp_command *c, gtp_reply *r);

typedef struct gtp_entry {
	const char *name;    /* the command */
	gtp_handler handler; /* its function */
	bool go_only;        /* needs a Go board: refused when the game has none */
} gtp_entry;


/* Diagnostics on stderr, unless quiet. */
void gtp_log(const gtp_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Waits up to timeout_ms (-1: forever) for a next input line; true when one
 * (or the end of input) is there. */
bool gtp_input_wait(gtp_input *in, int timeout_ms);

/* Appends to an answer. */
void gtp_reply_add(gtp_reply *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets msg as the answer; returns false (a handler's failure). */
bool gtp_fail(gtp_reply *r, const char *msg);
/* False with "syntax error" when c has fewer than n arguments. */
bool gtp_need_args(const gtp_command *c, int n, gtp_reply *r);
/* "b", "black", "w", "white" (any case) -> colour; -1 otherwise. */
int gtp_parse_color(const char *s);
/* A decimal integer within +-1e6 / a finite decimal number, nothing after it. */
bool gtp_parse_int(const char *s, int *out);
bool gtp_parse_real(const char *s, double *out);
/* The first argument as a colour, or false with the answer set. */
bool gtp_parse_color_arg(const gtp_command *c, int *color, gtp_reply *r);

/* The game has a Go board (handicap, SGF, scoring, ownership apply). */
bool gtp_is_go(const gtp_engine *e);
/* Winrate (0..1) of a value in [-1, 1]. */
static inline double gtp_winrate(float v) { return (v + 1) / 2; }

/* Starts an answer the handler streams itself ("=ID" and a newline). */
void gtp_begin_streamed(gtp_engine *e, const gtp_command *c);
void gtp_stop_pondering(gtp_engine *e);
void gtp_start_pondering(gtp_engine *e);
/* Search limits for a move by color (time control, or the user's limits). */
void gtp_set_limits(gtp_engine *e, int color, double seconds_override);
/* Gives the move to color, as genmove may ask out of turn. */
bool gtp_ensure_to_move(gtp_engine *e, int color, gtp_reply *r);
/* Plays move for the side to move, charging its clock; the move's text. */
void gtp_commit_move(gtp_engine *e, int move, double started, gtp_reply *r);
/* Searches and picks a move for the side to move (GAME_MOVE_NONE: resign). */
int gtp_think(gtp_engine *e, bool allow_resign);
/* genmove (commit) or a search that leaves the game as it was (!commit). */
bool gtp_genmove_common(gtp_engine *e, const gtp_command *c, gtp_reply *r, bool commit);

/* Final ownership of every point of a Go position, estimated by `playouts`
 * fast random playouts (no eye filling) to the end: black[p] and white[p]
 * are the shares of playouts in which point p = y * size + x ended up
 * Black's and White's (both may be NULL). Deterministic for a position. */
void gtp_ownership(const go_board *b, int playouts, float *black, float *white);
/* gtp_ownership, and the final Tromp-Taylor score of the playouts (Black's
 * area minus White's minus komi): its mean and standard deviation into
 * *score_mean and *score_sd (each may be NULL; with 0 playouts the board
 * scored as it stands). Thread-safe: the JSON analysis engine calls it
 * from its analysis threads. */
void gtp_playout_estimate(const go_board *b, int playouts, float *black, float *white,
			  double *score_mean, double *score_sd);

/* The end of Go position g as the engines show it: own[p] Black's share of
 * point p minus White's, in [-1, 1]; own_sd[p] its spread; *score the final
 * score, Black's view (komi counted), and *score_sd its spread. Each part
 * comes from the network's head where ev's network has it (eval_heads;
 * the ownership's spread then sqrt(1 - own^2), the score's NAN) and from
 * `playouts` fast random playouts (gtp_playout_estimate) otherwise. Any
 * output may be NULL. Returns the heads that answered (NN_HEAD_OWN,
 * NN_HEAD_SCORE), 0 when the playouts gave everything. Thread-safe. */
int gtp_estimate(evaluator *ev, const game *g, int playouts, float *own, float *own_sd,
		 double *score, double *score_sd);

/* Rule sets counted by area without a tax or a button (tromp-taylor,
 * chinese, aga, ...; any case), which sente plays as its own rules. */
bool gtp_rules_area_name(const char *name);
/* sente's rules as KataGo's JSON (kata-get-rules). */
extern const char gtp_rules_json[];

/* Handlers of analyze.c and extensions.c. */
bool gtp_cmd_lz_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_lz_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_genmove_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_search_analyze(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_raw_nn(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_heatmap(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_gogui_policy(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_gogui_ownership(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_get_komi(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_get_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_set_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kgs_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_list_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_get_param(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_set_param(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_list_params(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_search(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_search_cancellable(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kata_search_analyze_cancellable(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_lz_setoption(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_lz_memory_report(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_kgs_genmove_cleanup(gtp_engine *e, const gtp_command *c, gtp_reply *r);
bool gtp_cmd_gogui_analyze_commands(gtp_engine *e, const gtp_command *c, gtp_reply *r);

#endif
