/* gtp.c: `sente gtp`, the GTP engine on stdin/stdout. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "gtp/engine.h"

static const char gtp_help[] =
	"usage: sente gtp [options]\n"
	"\n"
	"Speaks GTP v2 on standard input and output, for GUIs (Sabaki, Lizzie,\n"
	"GoGui, q5Go) and match tools; diagnostics go to standard error. Besides\n"
	"the GTP v2 commands it answers lz-analyze, kata-analyze (and analyze),\n"
	"lz-genmove_analyze, kata-genmove_analyze, kata-raw-nn, clear_cache, stop.\n"
	"\n"
	"options:\n"
	"  -w, --weights FILE   network: a .sente model or Leela Zero weights (text\n"
	"                       or gzip); without one, a uniform policy and a\n"
	"                       neutral value (weak, but every command works)\n"
	"  -v, --visits N       stop a search when the root has N visits (default 800)\n"
	"  -p, --playouts N     stop after N playouts of this search (default: none)\n"
	"  -t, --threads N      search threads (default 2)\n"
	"  -b, --batch N        largest network batch (default 16)\n"
	"      --nn-threads N   network compute threads (default: all cores)\n"
	"      --backend B      auto, cpu or cuda (default auto: CUDA when a device\n"
	"                       is present, else the CPU; cuda falls back to the\n"
	"                       CPU with a message when no device can be used)\n"
	"      --gpus LIST      CUDA devices, e.g. 0,1: one evaluator thread each\n"
	"                       (default 0)\n"
	"      --precision P    fp32, bf16 or int8 on the CPU; fp16 or fp32 on CUDA\n"
	"                       (default fp32 on the CPU, fp16 on CUDA; int8\n"
	"                       calibrates on 256 positions at load)\n"
	"      --noponder       do not think during the opponent's turn\n"
	"  -s, --seed N         random seed (default 1)\n"
	"  -r, --resign PCT     resign when the winrate is below PCT percent\n"
	"                       (default 10; 0 never resigns)\n"
	"      --lagbuffer S    seconds kept in reserve per move (default 1.0)\n"
	"      --virtual-loss N losses counted per descent in flight, to spread\n"
	"                       threads apart (default 1; larger spreads batches\n"
	"                       more but reads forced lines worse)\n"
	"      --memory MB      search tree memory (default 512)\n"
	"      --game go|connect4  which game (default go); for Connect Four the\n"
	"                       first player is b and moves are the columns 1..7\n"
	"      --size N         initial Go board size 5..19 (default 19; a network\n"
	"                       fixes its own size)\n"
	"      --komi K         initial komi (default 7.5)\n"
	"  -q, --quiet          no diagnostics on standard error\n";

/* Parses a positive count flag's value; prints the error. */
static bool count_arg(const char *flag, const char *v, long lo, long hi, long *out)
{
	if (cli_parse_int(v, lo, hi, out))
		return true;
	cli_usage_error("gtp", "%s takes an integer %ld..%ld, got '%s'", flag, lo, hi, v);
	return false;
}

int cli_gtp(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(gtp_help, stdout);
		return 0;
	}
	gtp_options opt = gtp_options_default();
	long size = 19, n;
	int r;
	char berr[256];
	double komi = 7.5, d;
	game_kind kind = GAME_KIND_GO;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = v != NULL;
#define IS(s, l) (!strcmp(a, s) || !strcmp(a, l))
		if (IS("-w", "--weights") && takes) {
			opt.weights = v;
		} else if (IS("-v", "--visits") && takes) {
			if (!count_arg(a, v, 1, 100000000, &n))
				return 2;
			opt.search.max_visits = (int)n;
			opt.limits_set = true;
		} else if (IS("-p", "--playouts") && takes) {
			if (!count_arg(a, v, 1, 100000000, &n))
				return 2;
			opt.search.max_playouts = (int)n;
			opt.search.max_visits = 0;
			opt.limits_set = true;
		} else if (IS("-t", "--threads") && takes) {
			if (!count_arg(a, v, 1, 256, &n))
				return 2;
			opt.search.threads = (int)n;
		} else if (IS("-b", "--batch") && takes) {
			if (!count_arg(a, v, 1, 4096, &n))
				return 2;
			opt.batch = (int)n;
		} else if (!strcmp(a, "--nn-threads") && takes) {
			if (!count_arg(a, v, 1, 1024, &n))
				return 2;
			opt.nn.threads = (int)n;
		} else if (takes && (r = nn_backend_parse_flag(a, v, &opt.nn, berr, sizeof(berr))) != 0) {
			if (r < 0)
				return cli_usage_error("gtp", "%s", berr);
		} else if (!strcmp(a, "--noponder")) {
			opt.ponder = false;
			i--;
		} else if (IS("-s", "--seed") && takes) {
			if (!count_arg(a, v, 0, 0x7fffffffL, &n))
				return 2;
			opt.search.seed = (uint64_t)n;
		} else if (IS("-r", "--resign") && takes) {
			if (!cli_parse_double(v, &d) || d < 0 || d > 100)
				return cli_usage_error("gtp", "--resign takes a percentage 0..100, got '%s'", v);
			opt.resign_pct = (float)d;
		} else if (!strcmp(a, "--lagbuffer") && takes) {
			if (!cli_parse_double(v, &d) || d < 0 || d > 60)
				return cli_usage_error("gtp", "--lagbuffer takes seconds 0..60, got '%s'", v);
			opt.lag = d;
		} else if (!strcmp(a, "--virtual-loss") && takes) {
			if (!count_arg(a, v, 0, 100, &n))
				return 2;
			opt.search.virtual_loss = (int)n;
		} else if (!strcmp(a, "--memory") && takes) {
			if (!count_arg(a, v, 16, 1 << 20, &n))
				return 2;
			opt.search.max_memory = (size_t)n << 20;
		} else if (!strcmp(a, "--game") && takes) {
			if (!game_kind_from_name(v, &kind))
				return cli_usage_error("gtp", "unknown game '%s' (go or connect4)", v);
		} else if (!strcmp(a, "--size") && takes) {
			if (!cli_parse_int(v, GO_MIN_SIZE, GO_MAX_SIZE, &size))
				return cli_usage_error("gtp", "--size takes %d..%d, got '%s'",
						       GO_MIN_SIZE, GO_MAX_SIZE, v);
		} else if (!strcmp(a, "--komi") && takes) {
			if (!cli_parse_double(v, &komi))
				return cli_usage_error("gtp", "--komi takes a number, got '%s'", v);
		} else if (IS("-q", "--quiet")) {
			opt.quiet = true;
			i--;
		} else {
			return cli_usage_error("gtp", "unknown or incomplete option '%s'", a);
		}
		i++;
#undef IS
	}
	opt.game = game_params_default(kind);
	if (kind == GAME_KIND_GO) {
		opt.game.size = (int)size;
		opt.game.komi = komi;
	}
	char err[512];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	if (!e) {
		fprintf(stderr, "sente gtp: %s\n", err);
		return 1;
	}
	if (!opt.quiet) {
		if (opt.weights)
			fprintf(stderr, "sente gtp: %s, network %s, backend %s\n",
				game_kind_name(kind), opt.weights, gtp_engine_backend(e));
		else
			fprintf(stderr, "sente gtp: %s, no weights: uniform policy and neutral value "
				"(pass -w FILE for a network)\n", game_kind_name(kind));
	}
	int rc = gtp_engine_run(e, stdin, stdout);
	gtp_engine_free(e);
	return rc;
}
