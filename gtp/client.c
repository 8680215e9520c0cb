/* client.c: GTP client over pipes (see client.h). */
#include "gtp/client.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/clock.h"

struct gtp_client {
	pid_t pid;            /* the engine process */
	int to_engine;        /* its stdin */
	int from_engine;      /* its stdout */
	char buf[1 << 16];    /* bytes read, not yet consumed */
	size_t len;           /* bytes in buf */
	bool broken;          /* dead or timed out: no further commands */
	char command[1024];   /* as started */
};

gtp_client *gtp_client_start(const char *command, const char *stderr_path, char *err,
			     size_t errlen)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	gtp_client *c = calloc(1, sizeof(*c));
	if (!c || pipe(in) != 0 || pipe(out) != 0) {
		snprintf(err, errlen, "cannot create pipes: %s", strerror(errno));
		goto fail;
	}
	snprintf(c->command, sizeof(c->command), "%s", command);
	/* A dead engine must give EPIPE, not kill us with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	c->pid = fork();
	if (c->pid < 0) {
		snprintf(err, errlen, "cannot fork: %s", strerror(errno));
		goto fail;
	}
	if (c->pid == 0) {
		/* A group of its own, so that whatever the shell starts is
		 * killed with it (see gtp_client_free). */
		setpgid(0, 0);
		dup2(in[0], 0);
		dup2(out[1], 1);
		int e = open(stderr_path ? stderr_path : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (e >= 0)
			dup2(e, 2);
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
		execl("/bin/sh", "sh", "-c", command, (char *)NULL);
		_exit(127);
	}
	setpgid(c->pid, c->pid); /* as the child does: whichever runs first */
	close(in[0]);
	close(out[1]);
	c->to_engine = in[1];
	c->from_engine = out[0];
	fcntl(c->to_engine, F_SETFD, FD_CLOEXEC);
	fcntl(c->from_engine, F_SETFD, FD_CLOEXEC);
	return c;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	free(c);
	return NULL;
}

void gtp_client_free(gtp_client *c)
{
	if (!c)
		return;
	if (!c->broken) {
		char ans[64];
		gtp_client_send(c, "quit", 2.0, ans, sizeof(ans));
	}
	close(c->to_engine);
	close(c->from_engine);
	/* Give it a moment to exit by itself, then kill its whole group: the
	 * shell's children (the engine itself, when the shell did not exec it)
	 * would otherwise live on as orphans. The leader is reaped only after
	 * that, so that its pid, the group's id, cannot be reused meanwhile. */
	for (int i = 0; i < 50; i++) {
		siginfo_t si;
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
			goto done; /* reaped by someone else: the group is not ours to kill */
		if (si.si_pid == c->pid)
			break;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	kill(-c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
done:
	free(c);
}

bool gtp_client_usable(const gtp_client *c) { return c && !c->broken; }
const char *gtp_client_command(const gtp_client *c) { return c->command; }

bool gtp_client_parse_score(const char *ans, int *result, double *score)
{
	if (!strcmp(ans, "0")) {
		*result = 0;
		*score = 0;
		return true;
	}
	if ((ans[0] != 'B' && ans[0] != 'W' && ans[0] != 'b' && ans[0] != 'w') || ans[1] != '+')
		return false;
	int sign = (ans[0] == 'B' || ans[0] == 'b') ? 1 : -1;
	const char *p = ans + 2, *end;
	double v = 0;
	if (*p == 'R' || *p == 'r' || *p == 'T' || *p == 't' || *p == 'F' || *p == 'f') {
		/* "B+R", "W+Time", "B+Forfeit": a winner without a number. */
		for (end = p; isalpha((unsigned char)*end); end++)
			;
	} else {
		/* A plain decimal, the winner's margin: no sign (B+-3 would make
		 * Black the winner with White ahead), exponent, hex, inf or nan. */
		size_t digits = strspn(p, "0123456789"), frac = 0;
		end = p + digits;
		if (*end == '.') {
			frac = strspn(end + 1, "0123456789");
			end += 1 + frac;
		}
		if (digits + frac == 0)
			return false;
		v = strtod(p, NULL);
		if (!isfinite(v))
			return false; /* more digits than a double holds */
	}
	if (*end != '\0' && !isspace((unsigned char)*end))
		return false;
	*result = sign;
	*score = sign * v;
	return true;
}

const char *gtp_client_status_name(gtp_client_status s)
{
	switch (s) {
	case GTP_CLIENT_OK: return "ok";
	case GTP_CLIENT_FAIL: return "refused";
	case GTP_CLIENT_TIMEOUT: return "timed out";
	case GTP_CLIENT_DEAD: return "engine died";
	case GTP_CLIENT_PROTOCOL: return "protocol error";
	}
	return "?";
}

/* The end of a complete answer in buf ("\n\n" after a '='/'?' line), as the
 * offset just past it; 0 when not yet complete. */
static size_t answer_end(const char *buf, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\n')
			return i + 1;
	return 0;
}

size_t gtp_client_frame(const char *buf, size_t len, bool *complete, bool *ok, char *answer,
			size_t answer_len)
{
	size_t skip = 0;
	*complete = false;
	*ok = false;
	/* Drop blank lines and chatter before the answer starts. */
	while (skip < len && buf[skip] != '=' && buf[skip] != '?') {
		const char *nl = memchr(buf + skip, '\n', len - skip);
		if (!nl)
			return skip;
		skip = (size_t)(nl - buf) + 1;
	}
	buf += skip;
	len -= skip;
	size_t end = len > 0 ? answer_end(buf, len) : 0;
	if (!end)
		return skip;
	/* Skip "=" / "?", an optional id, and one space. */
	size_t s = 1;
	while (s < end && buf[s] >= '0' && buf[s] <= '9')
		s++;
	if (s < end && buf[s] == ' ')
		s++;
	size_t text_len = end - 2 > s ? end - 2 - s : 0;
	if (answer && answer_len) {
		size_t copy = text_len < answer_len - 1 ? text_len : answer_len - 1;
		memcpy(answer, buf + s, copy);
		answer[copy] = '\0';
	}
	*complete = true;
	*ok = buf[0] == '=';
	return skip + end;
}

size_t gtp_client_drop_cr(char *buf, size_t len)
{
	size_t w = 0;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != '\r')
			buf[w++] = buf[i];
	return w;
}

bool gtp_client_parse_move(const game *g, const char *ans, int *move, bool *resign)
{
	char text[32];
	*resign = false;
	while (*ans == ' ' || *ans == '\t')
		ans++;
	size_t n = strcspn(ans, " \t\n");
	if (n >= sizeof(text))
		return false; /* longer than any vertex or "resign" */
	for (size_t i = 0; i < n; i++)
		text[i] = (char)tolower((unsigned char)ans[i]);
	text[n] = '\0';
	if (!strcmp(text, "resign")) {
		*resign = true;
		return true;
	}
	return game_move_from_text(g, text, move) == GAME_OK;
}

gtp_client_status gtp_client_send(gtp_client *c, const char *command, double timeout_s,
				  char *answer, size_t answer_len)
{
	if (answer && answer_len)
		answer[0] = '\0';
	if (c->broken)
		return GTP_CLIENT_DEAD;
	char line[4096];
	int n = snprintf(line, sizeof(line), "%s\n", command);
	if (n < 0 || (size_t)n >= sizeof(line))
		return GTP_CLIENT_PROTOCOL;
	for (int off = 0; off < n;) {
		ssize_t k = write(c->to_engine, line + off, (size_t)(n - off));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			c->broken = true;
			return GTP_CLIENT_DEAD;
		}
		off += (int)k;
	}
	double deadline = clock_now() + timeout_s;
	for (;;) {
		bool complete, ok;
		size_t used = gtp_client_frame(c->buf, c->len, &complete, &ok, answer, answer_len);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		if (complete)
			return ok ? GTP_CLIENT_OK : GTP_CLIENT_FAIL;
		if (c->len == sizeof(c->buf)) {
			c->broken = true;
			return GTP_CLIENT_PROTOCOL; /* an answer larger than we keep */
		}
		double left = deadline - clock_now();
		if (left <= 0) {
			c->broken = true;
			return GTP_CLIENT_TIMEOUT;
		}
		struct pollfd p = { .fd = c->from_engine, .events = POLLIN };
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue; /* the deadline check above ends it */
		ssize_t k = read(c->from_engine, c->buf + c->len, sizeof(c->buf) - c->len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			c->broken = true;
			return GTP_CLIENT_DEAD;
		}
		/* GTP allows CR LF; keep LF only so answers compare simply. */
		c->len += gtp_client_drop_cr(c->buf + c->len, (size_t)k);
	}
}
