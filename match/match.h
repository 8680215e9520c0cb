/* match.h: matches between two players, each a sente model (a file or a
 * model id in the store) or an external engine spoken to over GTP.
 *
 * Games run K at once, one thread each. A sente model has one evaluator for
 * the whole match, shared by every game's search, so that the network sees
 * full batches; an external engine runs one process per game thread. Colours
 * alternate: game 2k has A as Black, game 2k+1 the same opening with the
 * colours swapped. Openings are a few random moves (on Go, off the first
 * line) or lines from a book, so that deterministic engines do not repeat
 * one game, and the pair cancels any advantage an opening gives.
 *
 * Every finished game is stored at once (one transaction) with its SGF; a
 * match is found again by its players and settings, so running the same
 * command after a kill plays only the games that are missing.
 *
 * An external engine that crashes, hangs past the move timeout, answers
 * something that is not a legal move, or refuses a legal move loses the
 * game (the reason is stored) and is restarted for the next game; one that
 * resigns loses by resignation.
 */
#ifndef SENTE_MATCH_MATCH_H
#define SENTE_MATCH_MATCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/store.h"
#include "engine/progress.h"
#include "engine/game.h"
#include "match/elo.h"

typedef enum match_player_kind {
	MATCH_PLAYER_MODEL = 0, /* a sente (or Leela Zero) network searched by sente */
	MATCH_PLAYER_GTP = 1,   /* an external engine */
} match_player_kind;

typedef struct match_player {
	match_player_kind kind;
	char spec[1100];     /* as stored: "model:ID", a file path, or "gtp:COMMAND" */
	char name[128];      /* for SGF PB/PW and tables */
	char file[1024];     /* model: the weights file */
	char command[1024];  /* GTP: the command line */
	int64_t model_id;    /* model: its id in the store, 0 when given as a file */
	int64_t train_step;  /* model: learner step it was exported at, -1 unknown */
	int visits;          /* model: visits per move; 0 takes the match's */
	bool has_game;       /* model: game below is its network's */
	game_params game;    /* model: the game and board its network plays */
} match_player;

/* Reads a player: "gtp:COMMAND", "model:ID" or a bare number (a model id in
 * db, which may then not be NULL), or the path of a model file (whose
 * network is read for its game and board). 0, or -1 with a message
 * (missing file, unknown id, not a model). Engines are not started here. */
int match_player_parse(const char *text, store *db, match_player *out, char *err, size_t errlen);

typedef struct match_options {
	game_params game;       /* game, board and komi */
	int games;              /* games to play in all (resumed ones count) */
	int parallel;           /* games at once */
	int visits;             /* sente visits per move (players may override) */
	double move_seconds;    /* > 0: time per move instead of visits (GTP: byo-yomi) */
	int opening_moves;      /* random openings of this many moves ... */
	char book[1024];        /* ... or, when not "", lines of moves from this file */
	bool sprt;              /* stop early when the SPRT decides */
	elo_sprt sprt_params;   /* its hypotheses */
	float resign_pct;       /* sente resigns below this winrate, percent; 0 never */
	double move_timeout;    /* seconds an engine may take for one genmove */
	int max_moves;          /* game scored as it stands after this many moves */
	char sgf_dir[1024];     /* when not "", each game's SGF is also written here */
	int batch;              /* largest network batch */
	int nn_threads;         /* network compute threads; 0 all cores */
	uint64_t seed;          /* openings and searches */
	bool fresh;             /* start a new match even when one can be resumed */
	volatile sig_atomic_t *stop; /* set (signals) to stop after games in flight; may be NULL */
	progress *progress;     /* the caller's progress line: its count is set to the games
				 * left to play, and after each game it shows the games and
				 * the score so far; NULL: none */
} match_options;

/* Defaults for a game: 100 games, 2 at once, 100 visits, 4 random opening
 * moves on Go (2 on boards under 9, 2 for Connect Four), resign at 5%, a
 * 120 s move timeout, 3 x points moves at most, SPRT off (parameters
 * Leela Zero's), seed 1. */
match_options match_options_default(const game_params *g);

/* The state of a match, from A's side. */
typedef struct match_summary {
	int64_t match_id;     /* matches.id */
	int games;            /* finished, resumed ones included */
	int wins, losses, draws; /* for A */
	int a_black_wins;     /* games A won as Black (colour balance) */
	int black_wins;       /* games Black won */
	int resumed;          /* games found stored when the match started */
	int engine_faults;    /* games lost by an engine's crash, hang, illegal or refused move */
	int protocol_errors;  /* GTP answers that were not GTP or not a move (forfeits, so of
			       * engine_faults), or a final_score that was not a score (the
			       * game scored by area instead) */
	int restarts;         /* engine processes started again after a fault */
	elo_estimate elo;     /* A minus B */
	elo_sprt_result sprt; /* when the SPRT is on */
	char status[16];      /* "running", "done", "sprt-h0", "sprt-h1", "stopped" */
	double seconds;       /* wall time of this session */
} match_summary;

/* Called after each stored game (never two at a time) with the summary so
 * far and the game (strings valid during the call); NULL for none. */
typedef void (*match_progress_fn)(void *ctx, const match_summary *s, const store_match_game *g);

/* Plays (or resumes) the match A against B, storing every game in db.
 * 0 when the match finished, stopped on SPRT or was stopped; -1 with a
 * message when it could not be played (a model that does not fit the
 * board, an engine that refuses the board size or cannot start, a store
 * failure). *out holds the results either way. */
int match_run(store *db, const match_player *a, const match_player *b, const match_options *o,
	      match_progress_fn fn, void *ctx, match_summary *out, char *err, size_t errlen);

/* The settings text that identifies a match for resumption. */
void match_settings_text(const match_player *a, const match_player *b, const match_options *o,
			 char *buf, size_t len);

/* Tallies the stored games of match `match_id` into *out (A's side). 0 or -1. */
int match_load_summary(store *db, int64_t match_id, match_summary *out);

#endif
