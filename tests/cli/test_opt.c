/* cli/opt.h: the declarative option tables, parsed and printed directly
 * (no process is started). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/opt.h"
#include "engine/game.h"
#include "nn/backend.h"

/* A command with one option of every kind. */
typedef struct fixture {
	long games;          /* --games, -g: 1..100 */
	int size;            /* --size: 5..19, with a given marker */
	bool size_given;
	double komi;         /* --komi: -10..10 */
	float resign;        /* --resign: (0, 50] as a float */
	bool quiet;          /* -q */
	bool ponder;         /* --noponder */
	const char *db;      /* --db */
	char dir[8];         /* --dir into a small array */
	int algo;            /* --algo: a choice */
	game_kind kind;      /* --game: a callback */
	nn_backend_options nn; /* --backend, --gpus, --precision */
	int batches[4], n_batches; /* --batch LIST */
	const char *pos[2];  /* positional arguments */
	int n_pos;
} fixture;

static const char *const algos[] = { "auto", "direct", "winograd", NULL };

static fixture fx;
static cli_opt opts[16];
static cli_spec spec;
static cli_int_list batch_list;

static void setup(void)
{
	memset(&fx, 0, sizeof(fx));
	fx.games = 10;
	fx.size = 9;
	fx.komi = 7.5;
	fx.resign = 5;
	fx.ponder = true;
	fx.db = "sente.db";
	strcpy(fx.dir, "runs");
	fx.algo = 0;
	fx.kind = GAME_KIND_GO;
	fx.nn = nn_backend_options_default();
	fx.batches[0] = 1;
	fx.n_batches = 1;
	batch_list = (cli_int_list){ .v = fx.batches, .cap = 4, .n = &fx.n_batches };
	const cli_opt t[] = {
		CLI_OPT_INT("--games", "-g", &fx.games, 1, 100, "N", "games to play"),
		CLI_OPT_INT("--size", NULL, &fx.size, 5, 19, "N", "board size", .given = &fx.size_given),
		CLI_OPT_REAL("--komi", NULL, &fx.komi, -10, 10, "K", "komi"),
		CLI_OPT_REAL("--resign", NULL, &fx.resign, 0, 50, "PCT", "resign threshold",
			     .open_lo = true),
		CLI_OPT_FLAG("--quiet", "-q", &fx.quiet, "say nothing"),
		CLI_OPT_FLAG_OFF("--noponder", NULL, &fx.ponder, "do not ponder"),
		CLI_OPT_STRING("--db", NULL, &fx.db, "FILE", "the database"),
		CLI_OPT_BUF("--dir", NULL, fx.dir, "DIR", "the folder"),
		CLI_OPT_CHOICE("--algo", NULL, &fx.algo, algos, "A", "convolution algorithm"),
		CLI_OPT_CALL("--game", NULL, &fx.kind, cli_opt_game, "NAME", "which game", .def = "go"),
		CLI_OPT_NN_BACKEND(&fx.nn, "auto", "auto, cpu or cuda"),
		CLI_OPT_NN_GPUS(&fx.nn, "0", "CUDA devices"),
		CLI_OPT_NN_PRECISION(&fx.nn, "fp32", "arithmetic"),
		CLI_OPT_CALL("--batch", NULL, &batch_list, cli_opt_int_list, "LIST", "batch sizes",
			     .lo = 1, .hi = 64, .def = "1"),
		CLI_OPT_INT("--threads", NULL, &fx.size, 0, 8, "N", "threads", .def = "all cores"),
	};
	memcpy(opts, t, sizeof(t));
	spec = (cli_spec){ .cmd = "test", .usage = "A [B] [options]", .about = "A test command.\n",
			   .opts = opts, .n_opts = CLI_N(t), .after = "The end.\n",
			   .pos = fx.pos, .pos_max = 2, .pos_n = &fx.n_pos };
}

/* Parses the words of `line` (split at spaces); the exit status when the
 * command should stop, -1 when it goes on. */
static int parse(const char *line)
{
	static char buf[1024];
	char *argv[64];
	int argc = 0;
	snprintf(buf, sizeof(buf), "test %s", line);
	for (char *save, *w = strtok_r(buf, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	int rc = 12345;
	bool go_on = cli_opt_parse(&spec, argc, argv, &rc);
	cr_assert(go_on ? rc == 0 : rc == 0 || rc == 2, "rc %d", rc);
	return go_on ? -1 : rc;
}

static void setup_err(void)
{
	setup();
	cr_redirect_stderr();
}

/* Usage errors go to stderr; captured so that the log stays quiet. */
TestSuite(cli_opt, .init = setup_err);

static void setup_out(void)
{
	setup();
	cr_redirect_stdout();
}

Test(cli_opt, ints_in_and_out_of_bounds)
{
	cr_assert_eq(parse("--games 100"), -1);
	cr_assert_eq(fx.games, 100);
	cr_assert_eq(parse("--games 1"), -1);
	cr_assert_eq(fx.games, 1);
	cr_assert_eq(parse("--games 0"), 2);
	cr_assert_eq(parse("--games 101"), 2);
	cr_assert_eq(parse("--games 5x"), 2);
	cr_assert_eq(parse("--games 99999999999999999999999"), 2);
	cr_assert_eq(fx.games, 1, "a refused value leaves the field");
	cr_assert_eq(parse("--size 19"), -1);
	cr_assert_eq(fx.size, 19, "an int field gets the value");
}

Test(cli_opt, given_markers)
{
	cr_assert_eq(parse("--games 3"), -1);
	cr_assert_not(fx.size_given);
	cr_assert_eq(parse("--size 9"), -1);
	cr_assert(fx.size_given, "given even when it repeats the default");
}

Test(cli_opt, reals)
{
	cr_assert_eq(parse("--komi -6.5 --resign 12.5"), -1);
	cr_assert_float_eq(fx.komi, -6.5, 1e-12);
	cr_assert_float_eq(fx.resign, 12.5f, 1e-6);
	cr_assert_eq(parse("--komi 10.5"), 2);
	cr_assert_eq(parse("--komi nan"), 2);
	cr_assert_eq(parse("--komi seven"), 2);
	cr_assert_eq(parse("--resign 0"), 2, "an open lower bound refuses itself");
	cr_assert_eq(parse("--resign 50"), -1);
}

/* A real option is a finite number even when its bounds are infinite. */
Test(cli_opt, reals_are_finite)
{
	double x = 1;
	const cli_opt t[] = {
		CLI_OPT_REAL("--x", NULL, &x, -INFINITY, INFINITY, "X", "any number"),
	};
	spec = (cli_spec){ .cmd = "test", .usage = "[options]", .opts = t, .n_opts = CLI_N(t) };
	cr_assert_eq(parse("--x -1e300"), -1);
	cr_assert_float_eq(x, -1e300, 1e290);
	const char *bad[] = { "nan", "inf", "-inf", "infinity", "1e999", "-1e999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "--x %s", bad[i]);
		cr_assert_eq(parse(line), 2, "%s", line);
	}
	cr_assert_float_eq(x, -1e300, 1e290, "a refused value leaves the field");
}

Test(cli_opt, flags_strings_and_buffers)
{
	cr_assert_eq(parse("-q --noponder --db x.db --dir abc"), -1);
	cr_assert(fx.quiet);
	cr_assert_not(fx.ponder);
	cr_assert_str_eq(fx.db, "x.db");
	cr_assert_str_eq(fx.dir, "abc");
	cr_assert_eq(parse("--dir abcdefgh"), 2, "longer than the array");
	cr_assert_str_eq(fx.dir, "abc");
}

Test(cli_opt, choices_and_callbacks)
{
	cr_assert_eq(parse("--algo winograd --game connect4"), -1);
	cr_assert_eq(fx.algo, 2);
	cr_assert_eq(fx.kind, GAME_KIND_CONNECT4);
	cr_assert_eq(parse("--algo fast"), 2);
	cr_assert_eq(parse("--game chess"), 2);
	cr_assert_eq(parse("--backend cpu --gpus 0,2 --precision bf16"), -1);
	cr_assert_eq(fx.nn.kind, NN_BACKEND_CPU);
	cr_assert_eq(fx.nn.n_gpus, 2);
	cr_assert_eq(fx.nn.gpus[1], 2);
	cr_assert_eq(fx.nn.precision, NN_DTYPE_BF16);
	cr_assert(fx.nn.precision_given);
	cr_assert_eq(parse("--backend tpu"), 2);
	cr_assert_eq(parse("--gpus 0,0"), 2);
	cr_assert_eq(parse("--batch 2,4,64"), -1);
	cr_assert_eq(fx.n_batches, 3);
	cr_assert_eq(fx.batches[2], 64);
	cr_assert_eq(parse("--batch 2,,4"), 2);
	cr_assert_eq(parse("--batch 1,2,3,4,5"), 2, "more than the list holds");
	cr_assert_eq(parse("--batch 65"), 2);
}

Test(cli_opt, short_names_and_positionals)
{
	cr_assert_eq(parse("A -g 7 B -q"), -1);
	cr_assert_eq(fx.games, 7);
	cr_assert(fx.quiet);
	cr_assert_eq(fx.n_pos, 2);
	cr_assert_str_eq(fx.pos[0], "A");
	cr_assert_str_eq(fx.pos[1], "B");
	cr_assert_eq(parse("A B C"), 2, "one positional argument too many");
	cr_assert_eq(parse("-- -g"), -1, "after --, options are positional");
	cr_assert_eq(fx.n_pos, 1);
	cr_assert_str_eq(fx.pos[0], "-g");
	cr_assert_eq(parse("-"), -1, "a lone dash is a positional argument");
}

Test(cli_opt, unknown_option_and_missing_value, .init = setup_err)
{
	cr_assert_eq(parse("--bogus"), 2);
	cr_assert_eq(parse("--games"), 2);
	cr_assert_eq(parse("--games 200"), 2);
	fflush(stderr);
	cr_assert_stderr_eq_str("sente test: unknown option '--bogus' (see 'sente test --help')\n"
				"sente test: --games needs a value (N) (see 'sente test --help')\n"
				"sente test: --games takes an integer 1..100, got '200' "
				"(see 'sente test --help')\n");
}

Test(cli_opt, no_positionals_when_none_are_taken)
{
	spec.pos = NULL;
	cr_assert_eq(parse("A"), 2);
}

Test(cli_opt, help_lists_every_option_with_its_default)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert(f);
	cli_opt_help(&spec, f);
	fclose(f);
	cr_assert(strstr(text, "usage: sente test A [B] [options]\n"), "%s", text);
	cr_assert(strstr(text, "A test command."), "%s", text);
	cr_assert(strstr(text, "The end."), "%s", text);
	for (int k = 0; k < spec.n_opts; k++) {
		cr_assert(strstr(text, opts[k].name), "%s missing:\n%s", opts[k].name, text);
		if (opts[k].alias)
			cr_assert(strstr(text, opts[k].alias), "%s", text);
	}
	const char *defaults[] = { "(default 10)", "(default 9)", "(default 7.5)", "(default 5)",
				   "(default sente.db)", "(default runs)", "(default auto)",
				   "(default go)", "(default 0)", "(default fp32)", "(default 1)",
				   "(default all cores)" };
	for (size_t k = 0; k < sizeof(defaults) / sizeof(defaults[0]); k++)
		cr_assert(strstr(text, defaults[k]), "%s missing:\n%s", defaults[k], text);
	cr_assert(strstr(text, "  -g, --games N"), "%s", text);
	cr_assert(strstr(text, "      --size N"), "long names line up under short ones:\n%s", text);
	cr_assert_null(strstr(text, "say nothing (default"), "flags show no default:\n%s", text);
	/* Every line fits in 79 columns. */
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		cr_assert(n <= 79, "%.*s", (int)n, p);
		p += n + (p[n] != '\0');
	}
	free(text);
}

Test(cli_opt, help_flag_prints_and_stops, .init = setup_out)
{
	cr_assert_eq(parse("--games 0 --help"), 0, "help wins over a bad value");
	fflush(stdout);
	cr_assert_stdout_neq_str("");
}
