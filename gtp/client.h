/* client.h: a GTP client: starts an external engine (GNU Go, Leela Zero,
 * another sente), sends commands, parses answers. Every wait is bounded: an
 * engine that hangs is reported as timed out, one that exits or crashes as
 * dead, and neither takes the caller down. */
#ifndef SENTE_GTP_CLIENT_H
#define SENTE_GTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/game.h"

typedef enum gtp_client_status {
	GTP_CLIENT_OK = 0,       /* "=" answer */
	GTP_CLIENT_FAIL = 1,     /* "?" answer (the engine refused the command) */
	GTP_CLIENT_TIMEOUT = -1, /* no complete answer in time */
	GTP_CLIENT_DEAD = -2,    /* the engine exited, crashed or closed its pipes */
	GTP_CLIENT_PROTOCOL = -3, /* the answer was not GTP */
} gtp_client_status;

typedef struct gtp_client gtp_client;

/* Starts `command` (run by /bin/sh -c, in a process group of its own) with
 * pipes to its stdin and stdout; its stderr goes to stderr_path (NULL:
 * /dev/null). NULL with a message when it cannot start. */
gtp_client *gtp_client_start(const char *command, const char *stderr_path, char *err,
			     size_t errlen);
/* Asks the engine to quit, waits a moment, then kills its process group
 * (whatever it started that is still running); NULL is fine. */
void gtp_client_free(gtp_client *c);

/* Sends one command line (no newline needed) and waits up to timeout_s for
 * the answer, whose text (without "= "/"? " and the final blank line) goes
 * to answer (may be NULL). */
gtp_client_status gtp_client_send(gtp_client *c, const char *command, double timeout_s,
				  char *answer, size_t answer_len);
/* Frames one answer at the start of buf, len bytes of an engine's output
 * as they arrived (CRs dropped): lines before it that do not start with
 * '=' or '?' (blank lines, chatter) are skipped, and it ends at the first
 * blank line. Returns the bytes the caller may drop from the start of buf:
 * the skipped lines, and the answer too once *complete is set; then *ok
 * tells '=' from '?' and its text (without "="/"?", an id, one space and
 * the final blank line) is in answer (may be NULL), cut to answer_len - 1
 * bytes. Pure: reads no more than len bytes, whatever they hold. */
size_t gtp_client_frame(const char *buf, size_t len, bool *complete, bool *ok, char *answer,
			size_t answer_len);
/* Removes the CRs of buf[0..len) in place (GTP allows CR LF); returns the
 * length left. */
size_t gtp_client_drop_cr(char *buf, size_t len);
/* Parses a genmove answer for game g: blanks before it and anything after
 * its first word are ignored, case too. "resign" sets *resign; a vertex or
 * move of g sets *move (its legality is the caller's to check). False when
 * it is neither. */
bool gtp_client_parse_move(const game *g, const char *ans, int *move, bool *resign);
/* Parses a final_score answer ("B+3.5", "W+R", "0", case aside): the
 * winner (+1 Black, -1 White, 0 a draw) and Black's score, whose sign
 * agrees with the winner. False when it is not one: the margin is a plain
 * decimal (no sign, exponent, NaN or infinity) or a word for a win
 * without one (R, T, F: resign, time, forfeit), then the end or a blank. */
bool gtp_client_parse_score(const char *ans, int *result, double *score);
/* False once the engine is known dead or timed out (its pipe state is then
 * unknown and the client should be restarted). */
bool gtp_client_usable(const gtp_client *c);
/* The command line the client was started with. */
const char *gtp_client_command(const gtp_client *c);
const char *gtp_client_status_name(gtp_client_status s);

#endif
