/* GTP: the parser, and golden sessions (tests/data/gtp/NAME.in answered
 * exactly as NAME.out). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtp/engine.h"
#include "gtp/parse.h"
#include "tests/no_temporary.h"

static gtp_command cmd;

Test(gtp_parse, id_name_args)
{
	const char *l = "12 play  b\tD4  # a comment\n";
	cr_assert(gtp_parse_line(l, strlen(l), &cmd));
	cr_assert_eq(cmd.id, 12);
	cr_assert_str_eq(cmd.name, "play");
	cr_assert_eq(cmd.argc, 2);
	cr_assert_str_eq(cmd.argv[0], "b");
	cr_assert_str_eq(cmd.argv[1], "D4");
}

Test(gtp_parse, empty_comment_and_control)
{
	cr_assert(!gtp_parse_line("", 0, &cmd));
	cr_assert(!gtp_parse_line("   \t \n", 6, &cmd));
	cr_assert(!gtp_parse_line("# only a comment\n", 17, &cmd));
	const char l[] = "na\x01me\r\n";
	cr_assert(gtp_parse_line(l, sizeof(l) - 1, &cmd));
	cr_assert_str_eq(cmd.name, "name", "control characters are removed");
	cr_assert_eq(cmd.id, -1);
	const char z[] = "list\0_commands\n"; /* an embedded NUL is dropped too */
	cr_assert(gtp_parse_line(z, sizeof(z) - 1, &cmd));
	cr_assert_str_eq(cmd.name, "list_commands");
}

Test(gtp_parse, id_only_and_huge_id)
{
	cr_assert(gtp_parse_line("7", 1, &cmd));
	cr_assert_eq(cmd.id, 7);
	cr_assert_str_eq(cmd.name, "");
	const char *l = "99999999999999999999 name";
	cr_assert(gtp_parse_line(l, strlen(l), &cmd));
	cr_assert_eq(cmd.id, -1, "an id that overflows is not an id");
	cr_assert_str_eq(cmd.name, "99999999999999999999");
}

Test(gtp_parse, long_lines_are_flagged)
{
	size_t n = GTP_MAX_LINE * 2;
	char *l = malloc(n);
	memset(l, 'a', n);
	cr_assert(gtp_parse_line(l, n, &cmd));
	cr_assert(cmd.too_long);
	for (size_t i = 0; i + 1 < n; i += 2)
		l[i + 1] = ' ';
	cr_assert(gtp_parse_line(l, 400, &cmd));
	cr_assert(cmd.too_many_args);
	free(l);
}

/* Runs tests/data/gtp/NAME.in through a fresh engine and compares the whole
 * output with NAME.out (SENTE_GOLDEN_UPDATE=1 rewrites NAME.out instead). */
static void golden(const char *name, game_kind kind, int size)
{
	char path[256], *expect = NULL, *got = NULL;
	size_t got_len = 0;
	snprintf(path, sizeof(path), "tests/data/gtp/%s.in", name);
	FILE *in = fopen(path, "r");
	cr_assert(in, "cannot open %s (tests run from the repository root)", path);
	snprintf(path, sizeof(path), "tests/data/gtp/%s.out", name);
	FILE *ef = fopen(path, "r");
	cr_assert(ef, "cannot open %s", path);
	fseek(ef, 0, SEEK_END);
	long elen = ftell(ef);
	rewind(ef);
	expect = calloc(1, (size_t)elen + 1);
	cr_assert_eq(fread(expect, 1, (size_t)elen, ef), (size_t)elen);
	fclose(ef);

	gtp_options opt = gtp_options_default();
	opt.game = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		opt.game.size = size;
	/* The deterministic mode: one thread, fixed seed, no pondering. */
	opt.search.threads = 1;
	opt.search.max_visits = 200;
	opt.search.max_memory = 32 << 20;
	opt.ponder = false;
	opt.quiet = true;
	opt.plain_prior = false; /* the goldens search from a uniform prior */
	char err[128];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	cr_assert(e, "%s", err);
	FILE *out = open_memstream(&got, &got_len);
	gtp_engine_run(e, in, out);
	fclose(out);
	fclose(in);
	gtp_engine_free(e);
	if (getenv("SENTE_GOLDEN_UPDATE")) { /* rewrite the fixture; check its diff */
		snprintf(path, sizeof(path), "tests/data/gtp/%s.out", name);
		FILE *f = fopen(path, "w");
		cr_assert(f && fputs(got, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
		free(expect);
		expect = strdup(got);
	}
	if (strcmp(got, expect) != 0) {
		/* Show the first difference, line by line. */
		int line = 1;
		size_t i = 0;
		while (got[i] && got[i] == expect[i]) {
			if (got[i] == '\n')
				line++;
			i++;
		}
		cr_assert_fail("%s: output differs from %s.out at line %d:\n--- got ---\n%.200s\n"
			       "--- expected ---\n%.200s", name, name, line, got + i, expect + i);
	}
	free(got);
	free(expect);
}

Test(gtp_golden, basic) { golden("basic", GAME_KIND_GO, 19); }
Test(gtp_golden, errors) { golden("errors", GAME_KIND_GO, 19); }
Test(gtp_golden, handicap) { golden("handicap", GAME_KIND_GO, 19); }
Test(gtp_golden, connect4) { golden("connect4", GAME_KIND_CONNECT4, 7); }
Test(gtp_golden, search) { golden("search", GAME_KIND_GO, 19); }
Test(gtp_golden, c4search) { golden("c4search", GAME_KIND_CONNECT4, 7); }

/* A fresh engine on an empty 9x9 board: no network, one thread, quiet. */
static gtp_engine *new_engine_9x9(void)
{
	gtp_options opt = gtp_options_default();
	opt.game.size = 9;
	opt.search.threads = 1;
	opt.ponder = false;
	opt.quiet = true;
	char err[128];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	cr_assert(e, "%s", err);
	return e;
}

/* Input for an engine on a pipe, written by a thread (it may exceed what
 * the pipe holds). */
typedef struct pipe_feed {
	int fd;           /* the pipe's write end, closed when done */
	const char *data; /* what to write */
	size_t len;       /* its length */
} pipe_feed;

static void *feed_pipe(void *arg)
{
	pipe_feed *f = arg;
	for (size_t off = 0; off < f->len;) {
		ssize_t k = write(f->fd, f->data + off, f->len - off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	close(f->fd);
	return NULL;
}

/* Runs `input` through gtp_engine_run reading a pipe, as stdin would be;
 * the answers, malloc'd. */
static char *run_on_pipe(const char *input, size_t len)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pipe_feed f = { .fd = p[1], .data = input, .len = len };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, feed_pipe, &f), 0);
	char *got = NULL;
	size_t got_len = 0;
	gtp_engine *e = new_engine_9x9();
	FILE *in = fdopen(p[0], "r");
	FILE *out = open_memstream(&got, &got_len);
	gtp_engine_run(e, in, out);
	fclose(out);
	fclose(in);
	pthread_join(t, NULL);
	gtp_engine_free(e);
	return got;
}

/* A line longer than the engine reads at once is one bad command, answered
 * once; its tail never runs as a command of its own. */
Test(gtp_input, an_overlong_line_is_discarded_whole)
{
	char dir[] = "/tmp/sente-gtp-XXXXXX", path[64];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/smuggled.sgf", dir);
	/* 64 KiB up to the tail, which would write a file. */
	const char head[] = "1 play b D4";
	size_t pad = 65536 - (sizeof(head) - 1);
	size_t cap = 65536 + 256 + 40000;
	char *in = malloc(cap), *p = in;
	p += sprintf(p, "%s", head);
	memset(p, ' ', pad);
	p += pad;
	p += sprintf(p, "printsgf %s\n2 name\n", path);
	/* Longer than a line may be, shorter than the read buffer, and mostly
	 * bytes that the parser drops: still too long. */
	p += sprintf(p, "3 name");
	memset(p, 1, 30000);
	p += 30000;
	p += sprintf(p, " x\n4 name\n");
	char *got = run_on_pipe(in, (size_t)(p - in));
	cr_assert_str_eq(got, "?1 line too long\n\n=2 sente\n\n?3 line too long\n\n=4 sente\n\n");
	cr_assert_neq(access(path, F_OK), 0, "the tail of the long line ran as a command");
	free(got);
	free(in);
	rmdir(dir);
}

/* The answers of a fresh 9x9 engine to `input`'s lines, handed in one by
 * one; malloc'd. */
static char *handle_lines(const char *input)
{
	char *got = NULL;
	size_t got_len = 0;
	gtp_engine *e = new_engine_9x9();
	FILE *out = open_memstream(&got, &got_len);
	for (const char *p = input; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		gtp_engine_handle(e, p, n, out);
		p += n;
	}
	fclose(out);
	gtp_engine_free(e);
	return got;
}

/* GTP numbers are decimal: strtod's hex, infinity and NaN are refused. */
Test(gtp_engine, numbers_are_decimal)
{
	char *got = handle_lines("1 komi 0x10\n2 komi inf\n3 komi nan\n4 komi -6.5\n"
				 "5 time_settings 0x10 0 0\n6 time_settings 0 0X1p4 1\n"
				 "7 time_left b 0x10 0\n8 time_settings 300 .5 1\n");
	cr_assert_str_eq(got, "?1 komi not a float\n\n?2 komi not a float\n\n?3 komi not a float\n\n"
			      "=4\n\n?5 syntax error\n\n?6 syntax error\n\n?7 syntax error\n\n"
			      "=8\n\n");
	free(got);
}

/* Leela Zero's lz-setoption reaches the search's limits and the resign
 * threshold (names may hold spaces); KGS's kgs-rules takes the area rules
 * and refuses the others. */
Test(gtp_engine, lz_setoption_and_kgs_rules)
{
	char *got = handle_lines("1 lz-setoption name visits value 77\n2 kata-get-param maxVisits\n"
				 "3 lz-setoption name resign percentage value 12.5\n"
				 "4 lz-setoption name nonsense value 1\n5 lz-setoption name visits\n"
				 "6 lz-setoption visits 5\n7 kgs-rules chinese\n8 kgs-rules aga\n"
				 "9 kgs-rules japanese\n10 kgs-rules\n");
	cr_assert_str_eq(got, "=1\n\n=2 77\n\n=3\n\n?4 unknown option\n\n"
			      "?5 syntax error (value missing)\n\n"
			      "?6 syntax error (lz-setoption name NAME value VALUE)\n\n=7\n\n=8\n\n"
			      "?9 rules not supported: sente scores by area only\n\n?10 syntax error\n\n");
	free(got);
}

/* printsgf FILE writes the game there whole, replaces an older file, and
 * answers an error, leaving nothing behind, where it cannot. */
Test(gtp_engine, printsgf_to_a_file)
{
	char dir[] = "/tmp/sente-gtp-XXXXXX", in[1024];
	cr_assert(mkdtemp(dir));
	snprintf(in, sizeof(in),
		 "1 play b E5\n2 printsgf %s/g.sgf\n3 play w C3\n4 printsgf %s/g.sgf\n"
		 "5 printsgf %s/no/such/g.sgf\n",
		 dir, dir, dir);
	char *got = handle_lines(in);
	cr_assert_str_eq(got, "=1\n\n=2\n\n=3\n\n=4\n\n?5 cannot write file\n\n");
	free(got);
	char path[128], text[4096];
	snprintf(path, sizeof(path), "%s/g.sgf", dir);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = 0;
	fclose(f);
	cr_assert(strstr(text, ";B[ee]") && strstr(text, ";W[cg]"), "both moves, once: %s", text);
	cr_assert_eq(strstr(text, ")"), strrchr(text, ')'), "one game tree: %s", text);
	snprintf(path, sizeof(path), "%s/g.sgf", dir);
	cr_assert(no_temporary(path), "no temporary file left");
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_assert_eq(system(path), 0);
}
