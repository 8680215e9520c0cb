/* gtp.c: `sente gtp`, the GTP engine on stdin/stdout. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/game_desc.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "gtp/engine.h"

static const char gtp_about[] =
	"Speaks GTP v2 on standard input and output, for GUIs (Sabaki, Lizzie,\n"
	"GoGui, q5Go) and match tools; diagnostics go to standard error. Besides\n"
	"the GTP v2 commands it answers Leela Zero's analysis (lz-analyze, and\n"
	"analyze in the same format, as Sabaki reads it; lz-genmove_analyze,\n"
	"genmove_analyze), KataGo's (kata-analyze, kata-genmove_analyze,\n"
	"kata-search, kata-raw-nn, kata-get-rules, ...), lz-setoption, heatmap,\n"
	"kgs-genmove_cleanup and gogui-analyze_commands; list_commands lists all.\n"
	"A network fixes the game and the board size: --game and --size are only\n"
	"needed without one (a size the network cannot play is refused).\n";

/* -p N: a playout limit replaces the visit limit (a later -v sets one again). */
static int playouts_arg(const cli_opt *o, const char *v, char *err, size_t errlen)
{
	mcts_options *m = o->ptr;
	long n;
	if (!cli_parse_int(v, 1, 100000000, &n)) {
		snprintf(err, errlen, "%s takes an integer 1..100000000, got '%s'", o->name, v);
		return -1;
	}
	m->max_playouts = (int)n;
	m->max_visits = 0;
	return 0;
}

int cli_gtp(int argc, char **argv)
{
	gtp_options opt = gtp_options_default();
	long size = 19, memory_mb = (long)(opt.search.max_memory >> 20);
	double komi = 7.5;
	game_kind kind = game_desc_by_name("go")->kind;
	const cli_opt opts[] = {
		CLI_OPT_STRING("--weights", "-w", &opt.weights, "FILE",
			       "network: a .sente model or Leela Zero weights (text or gzip); without "
			       "one, a cheap prior (Go: corners, then the third and fourth lines; Connect "
			       "Four: centre columns) and a neutral value (weak, but every command works)"),
		CLI_OPT_INT("--visits", "-v", &opt.search.max_visits, 1, 100000000, "N",
			    "stop a search when the root has N visits", .given = &opt.limits_set),
		CLI_OPT_CALL("--playouts", "-p", &opt.search, playouts_arg, "N",
			     "stop after N playouts of this search", .given = &opt.limits_set,
			     .def = "none"),
		CLI_OPT_INT("--threads", "-t", &opt.search.threads, 1, 256, "N", "search threads"),
		CLI_OPT_INT("--batch", "-b", &opt.batch, 1, 4096, "N", "largest network batch"),
		CLI_OPT_INT("--nn-threads", NULL, &opt.nn.threads, 1, 1024, "N",
			    "network compute threads", .def = "all cores"),
		CLI_OPT_INT("--nn-lanes", NULL, &opt.nn.lanes, 1, 16, "N",
			    "CPU: copies of the network that split the compute threads, each "
			    "running one search thread's batch at a time",
			    .def = "one per compute thread, at most the search threads"),
		CLI_OPT_NN_BACKEND(&opt.nn, "auto: CUDA when a device is present, else the CPU",
				   "auto, cpu or cuda; cuda falls back to the CPU with a message when "
				   "no device can be used"),
		CLI_OPT_NN_GPUS(&opt.nn, "0", "CUDA devices, e.g. 0,1: one evaluator thread each"),
		CLI_OPT_NN_PRECISION(&opt.nn, "fp32 on the CPU, fp16 on CUDA",
				     "fp32, bf16 or int8 on the CPU; fp16 or fp32 on CUDA (int8 "
				     "calibrates on 256 positions at load)"),
		CLI_OPT_FLAG_OFF("--noponder", NULL, &opt.ponder, "do not think during the opponent's turn"),
		CLI_OPT_INT("--seed", "-s", &opt.search.seed, 0, 0x7fffffffL, "N", "random seed"),
		CLI_OPT_REAL("--resign", "-r", &opt.resign_pct, 0, 100, "PCT",
			     "resign when the winrate is below PCT percent; 0 never resigns"),
		CLI_OPT_REAL("--lagbuffer", NULL, &opt.lag, 0, 60, "S", "seconds kept in reserve per move"),
		CLI_OPT_INT("--virtual-loss", NULL, &opt.search.virtual_loss, 0, 100, "N",
			    "losses counted per descent in flight, to spread threads apart (larger "
			    "spreads batches more but reads forced lines worse)"),
		CLI_OPT_INT("--memory", NULL, &memory_mb, 16, 1 << 20, "MB", "search tree memory"),
		CLI_OPT_CALL("--game", NULL, &kind, cli_opt_game, "go|connect4",
			     "which game; for Connect Four the first player is b and moves are the "
			     "columns 1..7", .def = "the network's, else go", .given = &opt.game_given),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N",
			    "initial Go board size; a network fixes its own (another is refused)",
			    .def = "the network's, else 19", .given = &opt.size_given),
		CLI_OPT_REAL("--komi", NULL, &komi, -INFINITY, INFINITY, "K", "initial komi"),
		CLI_OPT_FLAG("--quiet", "-q", &opt.quiet, "no diagnostics on standard error"),
	};
	const cli_spec spec = { .cmd = "gtp", .usage = "[options]", .about = gtp_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	opt.search.max_memory = (size_t)memory_mb << 20;
	opt.game = game_params_sized(kind, (int)size, komi);
	char err[512];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "sente gtp: %s\n", err);
		return 1;
	}
	kind = gtp_engine_game(e)->params.kind; /* the network's, when it has one */
	if (!opt.quiet) {
		if (opt.weights)
			fprintf(stderr, "sente gtp: %s, network %s, backend %s\n",
				game_kind_name(kind), opt.weights, gtp_engine_backend(e));
		else
			fprintf(stderr, "sente gtp: %s, no weights: the game's cheap prior and a "
				"neutral value (pass -w FILE for a network)\n", game_kind_name(kind));
	}
	rc = gtp_engine_run(e, stdin, stdout);
	gtp_engine_free(e);
	return rc;
}
