/* parse.h: GTP v2 command lines, split into id, name and arguments.
 *
 * Follows the spec's preprocessing (section 3.1): control characters other
 * than HT and LF are removed, HT becomes a space, everything after '#' is a
 * comment, lines left empty are ignored. Never fails on any byte string:
 * an unparsable line is reported as such, not crashed on.
 */
#ifndef SENTE_GTP_PARSE_H
#define SENTE_GTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define GTP_MAX_ARGS 64
#define GTP_MAX_LINE 8192

typedef struct gtp_command {
	char buf[GTP_MAX_LINE]; /* the cleaned line; name and args point into it */
	int id;                 /* the command id, or -1 when none was given */
	const char *name;       /* the command name, NULL for an empty line */
	int argc;               /* number of arguments */
	const char *argv[GTP_MAX_ARGS]; /* the arguments */
	bool too_long;          /* the line was cut at GTP_MAX_LINE bytes */
	bool too_many_args;     /* arguments past GTP_MAX_ARGS were dropped */
} gtp_command;

/* Parses one line (len bytes, with or without its newline). Returns false
 * for a line that holds no command (empty, blank or only a comment). */
bool gtp_parse_line(const char *line, size_t len, gtp_command *cmd);

#endif
