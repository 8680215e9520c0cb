/* game_desc.h: what a game is, as one const table per game.
 *
 * Code above engine/ asks a game's descriptor (its name, sizes, numbers
 * and capabilities) instead of switching on game_kind; only the rules'
 * hot path in engine/game.c switches. A descriptor lives in the file with
 * its game's rules (engine/go.c, engine/connect4.c) and is listed in
 * engine/game_desc.c. engine/ knows no network: the encodings are named
 * here and resolved by nn/encode.c.
 */
#ifndef SENTE_ENGINE_GAME_DESC_H
#define SENTE_ENGINE_GAME_DESC_H

#include <stdbool.h>

#include "engine/game.h"

/* The numbers of a game that depend on its parameters (board size). */
typedef struct game_numbers {
	int width, height;     /* board columns and rows */
	int actions;           /* policy size: points (+ pass); game_num_actions */
	int typical_length;    /* plies of a typical game, for first guesses */
	int temperature_moves; /* self-play: plies at temperature 1 (in proportion to visits) */
	/* Self-play's temperature falls linearly from 1 after temperature_moves
	 * to temperature_floor at ply temperature_end (<= temperature_moves: a
	 * step) and stays there (0: the most visited move). */
	int temperature_end;
	double temperature_floor;
	/* Self-play's PUCT exploration constant; 0: the search's own default
	 * (mcts_options_default), which play, analysis and measurement use. */
	double selfplay_cpuct;
	/* Self-play: each game opens with up to this many uniformly random
	 * moves (selfplay_explore.random_opening); 0: none. */
	int selfplay_random_opening;
	int opening_moves;     /* match: random plies that open each game */
	int max_moves;         /* match: move limit, then the game is scored as it stands */
	int resign_after;      /* self-play: no resignation before this ply */
} game_numbers;

/* What a training run (`sente run`) starts from when not told otherwise. */
typedef struct game_run_defaults {
	int blocks, channels;      /* residual blocks and width of a new network */
	int visits;                /* full (recorded) search visits */
	int cheap_visits;          /* cheap (unrecorded) search visits */
	int parallel_games;        /* self-play games at once */
	int window;                /* positions in the learner's window */
	double positions_per_game; /* recorded positions per game: a guess until games are seen */
	bool carry_games;          /* self-play games under way go on into the next iteration
				    * (loop_options' carry_games) */
} game_run_defaults;

typedef struct game_desc {
	game_kind kind;             /* game_descs[kind] is this */
	const char *name;           /* canonical name: the store, run folders, messages */
	const char *title;          /* for people: "Go", "Connect Four" */
	const char *const *aliases; /* other names accepted on input, NULL-terminated */
	game_params defaults;       /* what game_params_default gives */
	bool has_size;              /* the board is size x size, size a parameter (else
				     * params.size is fixed at defaults.size) */
	int min_size, max_size;     /* bounds of params.size (both defaults.size when fixed) */
	bool has_komi;              /* komi is a parameter; the score is an area count */
	bool has_pass;              /* a pass move exists (the last action) */
	bool has_go_board;          /* the position is a go_board (g->u.go): SGF, handicap,
				     * dead stones and ownership apply */
	int num_symmetries;         /* board symmetries: game_num_symmetries */
	const char *encoding;       /* input encoding without a network (Leela Zero's for Go) */
	const char *net_encoding;   /* input encoding of a new network */
	int value_hidden;           /* a new network's value head: hidden units */
	int value_outputs;          /* 1: tanh value; 3: win/draw/loss (draws are common) */
	bool solved_positions;      /* data/NAME/ holds positions labelled by a perfect
				     * solver (selfplay/strength.h), so a run measures
				     * its error rate; else games against its first net */
	/* Fills the numbers for params p (p's kind is this game's). */
	void (*numbers)(const game_params *p, game_numbers *out);
	/* Fills the training-run defaults for params p. */
	void (*run_defaults)(const game_params *p, game_run_defaults *out);
	/* A cheap prior for play without a network: weights (not normalised,
	 * each > 0) for the n legal moves of g, into w[i] for legal[i]. Go
	 * favours the third and fourth lines and never fills its own eyes
	 * first; Connect Four the centre columns. */
	void (*plain_prior)(const game *g, const int *legal, int n, float *w);
	/* Who owns each point of a finished game g, from the first player's
	 * view: owner[a] for the point of action a is +1 (the first player),
	 * -1 or 0, for the points 0 .. width * height - 1. NULL for a game
	 * without territory (Connect Four): the ownership head does not apply. */
	void (*ownership)(const game *g, float *owner);
} game_desc;

extern const game_desc game_go, game_connect4;

/* Every game, indexed by game_kind, then NULL. */
extern const game_desc *const game_descs[];

/* The descriptor of a kind; NULL when kind is not a game. */
const game_desc *game_desc_by_kind(int kind);
/* By name or alias, case-insensitive; NULL when unknown. */
const game_desc *game_desc_by_name(const char *name);
/* The descriptor of params / of a game (which must be valid kinds). */
const game_desc *game_desc_from_params(const game_params *p);
const game_desc *game_desc_of(const game *g);

/* Game `kind`'s default parameters with the board size and komi given
 * where the game has them (size <= 0 or komi NAN: the default); kind must
 * be a game. For front ends that take --size and --komi for any game. */
game_params game_params_sized(int kind, int size, double komi);

/* The numbers and run defaults for params p. */
game_numbers game_numbers_of(const game_params *p);
game_run_defaults game_run_defaults_of(const game_params *p);

#endif
