/* gtp.c: `sente gtp`, the GTP engine on stdin/stdout. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "gtp/engine.h"

static const char gtp_help[] =
	"usage: sente gtp [options]\n"
	"\n"
	"Speaks GTP v2 on standard input and output, for GUIs (Sabaki, Lizzie,\n"
	"GoGui) and match tools. Diagnostics go to standard error.\n"
	"\n"
	"options:\n"
	"  --game go|connect4   which game (default go); for Connect Four the\n"
	"                       first player is b and moves are the columns 1..7\n"
	"  --size N             initial Go board size 5..19 (default 19)\n"
	"  --komi K             initial komi (default 7.5)\n"
	"  -q, --quiet          no diagnostics on standard error\n";

int cli_gtp(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(gtp_help, stdout);
		return 0;
	}
	gtp_options opt = { .game = game_params_default(GAME_KIND_GO) };
	long size = 19;
	double komi = 7.5;
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--game") && v) {
			if (!game_kind_from_name(v, &opt.game.kind))
				return cli_usage_error("gtp", "unknown game '%s' (go or connect4)", v);
			i++;
		} else if (!strcmp(a, "--size") && v) {
			if (!cli_parse_int(v, GO_MIN_SIZE, GO_MAX_SIZE, &size))
				return cli_usage_error("gtp", "--size takes %d..%d, got '%s'",
						       GO_MIN_SIZE, GO_MAX_SIZE, v);
			i++;
		} else if (!strcmp(a, "--komi") && v) {
			if (!cli_parse_double(v, &komi))
				return cli_usage_error("gtp", "--komi takes a number, got '%s'", v);
			i++;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else {
			return cli_usage_error("gtp", "unknown or incomplete option '%s'", a);
		}
	}
	if (opt.game.kind == GAME_KIND_GO) {
		opt.game.size = (int)size;
		opt.game.komi = komi;
	} else {
		opt.game = game_params_default(GAME_KIND_CONNECT4);
	}
	char err[256];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	if (!e)
		return cli_usage_error("gtp", "%s", err);
	if (!quiet)
		fprintf(stderr, "sente gtp: %s, ready (no network or search yet: no genmove)\n",
			game_kind_name(opt.game.kind));
	int rc = gtp_engine_run(e, stdin, stdout);
	gtp_engine_free(e);
	return rc;
}
