/* tournament.h: a round-robin, or a gauntlet, of matches (match.h) rated
 * together: Bradley-Terry maximum likelihood over every pair's score (as
 * BayesElo and Ordo do, with one virtual draw per pair as a prior), player
 * 0 at 0 Elo. Every match is stored and resumed as match_run does it, so
 * running the same tournament again plays only the games that are missing.
 * `sente tournament` parses the players and options, calls
 * tournament_run and prints the standings. */
#ifndef SENTE_MATCH_TOURNAMENT_H
#define SENTE_MATCH_TOURNAMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "data/store.h"
#include "match/match.h"

/* The most players a tournament takes. */
#define TOURNAMENT_MAX_PLAYERS 64

/* Called before each match (s NULL) and after it (s its summary). */
typedef void (*tournament_match_fn)(void *ctx, const match_player *a, const match_player *b,
				    const match_summary *s);

typedef struct tournament_options {
	match_options match;          /* every match's settings (stop included) */
	bool gauntlet;                /* player 0 against each of the others only */
	match_progress_fn progress;   /* after each stored game; NULL: none */
	void *progress_ctx;           /* its ctx */
	tournament_match_fn on_match; /* before and after each match; NULL: none */
	void *match_ctx;              /* its ctx */
} tournament_options;

/* One player's line of the table. */
typedef struct tournament_standing {
	int player;     /* index into the players given */
	double elo;     /* relative to player 0 */
	double se;      /* its standard error (a 95% interval is 1.96 se) */
	double games;   /* games played, over every match */
	double points;  /* wins + draws / 2 */
} tournament_standing;

typedef struct tournament_result {
	int players;          /* entries of standings */
	int matches;          /* matches played (or resumed) */
	int engine_faults;    /* games lost by an engine's fault, over every match */
	int protocol_errors;  /* of those, answers that were not GTP or not a move */
	tournament_standing standings[TOURNAMENT_MAX_PLAYERS]; /* best first */
} tournament_result;

/* Outcomes of tournament_run. */
enum {
	TOURNAMENT_DONE = 0,     /* every match finished; the standings are filled */
	TOURNAMENT_STOPPED = 1,  /* a match was stopped (o->match.stop); run again to resume */
	TOURNAMENT_FAILED = -1,  /* a match could not be played, or the ratings not fitted */
};

/* Plays every match of the n (2..TOURNAMENT_MAX_PLAYERS) distinct players,
 * i against j for i < j in order (only 0 against j for a gauntlet), each
 * stored in db, then rates them. A TOURNAMENT_* outcome; FAILED with a
 * message ("A against B: why" for a match). *out holds the matches so far
 * either way, the standings only when DONE. */
int tournament_run(store *db, const match_player *players, int n, const tournament_options *o,
		   tournament_result *out, char *err, size_t errlen);

#endif
