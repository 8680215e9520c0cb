/* parse.c: GTP command-line parsing (see parse.h). */
#include "gtp/parse.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

bool gtp_parse_line(const char *line, size_t len, gtp_command *cmd)
{
	size_t n = 0;
	cmd->id = -1;
	cmd->name = NULL;
	cmd->argc = 0;
	cmd->too_long = false;
	cmd->too_many_args = false;

	/* Clean: drop control characters, HT -> space, stop at '#' or LF. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];
		if (c == '\n' || c == '#')
			break;
		if (c == '\t')
			c = ' ';
		else if (c < 32 || c == 127)
			continue;
		if (n + 1 >= sizeof(cmd->buf)) {
			cmd->too_long = true;
			break;
		}
		cmd->buf[n++] = (char)c;
	}
	cmd->buf[n] = '\0';

	/* Split on spaces, in place. */
	char *tok[GTP_MAX_ARGS + 2];
	int ntok = 0;
	char *p = cmd->buf;
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (ntok == GTP_MAX_ARGS + 2) {
			cmd->too_many_args = true;
			break;
		}
		tok[ntok++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = '\0';
	}
	if (ntok == 0)
		return false;

	int first = 0;
	if (isdigit((unsigned char)tok[0][0])) {
		/* A leading number is the id; the spec makes it an int. */
		long id = 0;
		const char *s = tok[0];
		while (isdigit((unsigned char)*s) && id <= INT_MAX / 10)
			id = id * 10 + (*s++ - '0');
		if (*s == '\0' && id <= INT_MAX) {
			cmd->id = (int)id;
			first = 1;
		}
	}
	if (first >= ntok) {
		/* An id alone: a command with an empty name, answered as unknown. */
		cmd->name = "";
		return true;
	}
	cmd->name = tok[first];
	for (int i = first + 1; i < ntok; i++) {
		if (cmd->argc == GTP_MAX_ARGS) {
			cmd->too_many_args = true;
			break;
		}
		cmd->argv[cmd->argc++] = tok[i];
	}
	return true;
}
