/* eval.c: `sente eval`: its options, then harness_eval or harness_compare
 * (loop/harness.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "loop/harness.h"

static const char eval_about[] =
	"Measures the saved models of a run afterwards (about 24 spread over its\n"
	"compute, or --every), outside its timed minutes, and sets each against\n"
	"the compute the run had spent to reach it (self-play and training: wall\n"
	"seconds, the process's CPU seconds, network evaluations; measurement,\n"
	"reports and gating are not counted).\n"
	"\n"
	"Connect Four: the error rate on each solver-labelled set of data/connect4,\n"
	"the network alone and a --visits search, on every position (or on\n"
	"--positions of each set). Go: --games games against GNU Go at --gnugo-level,\n"
	"which also scores them. Results are kept in DIR/sente.db: running the\n"
	"command again measures only what is missing (Ctrl-C loses at most the\n"
	"model in progress). The table goes to stdout, --csv FILE writes it as\n"
	"CSV, and DIR/report.html gains a chart.\n"
	"\n"
	"Connect Four with --precision bf16 or int8: the network runs at that\n"
	"precision of the CPU backend, as self-play's would (int8 calibrated the\n"
	"same way), and its results are kept as their own methods (net@int8,\n"
	"search-v200@int8) beside the fp32 ones.\n"
	"\n"
	"With --compare, the runs given (DIR, or LABEL=DIR; a folder named\n"
	"NAME-sN is labelled NAME) are set side by side at equal compute, --at\n"
	"minutes: the mean and the range over the runs of each label.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

int cli_eval(int argc, char **argv)
{
	harness_options o = harness_options_default();
	harness_compare_options co = { .part = "all" };
	bool compare = false;
	int axis = HARNESS_AXIS_CPU, prec = 0;
	static const char *const axes[] = { "cpu", "wall", NULL };
	/* What the CPU backend runs (fp16 is CUDA's). */
	static const char *const precisions[] = { "fp32", "bf16", "int8", NULL };
	cli_int_list models = { .v = o.models, .cap = HARNESS_MAX_LIST, .n = &o.n_models };
	cli_int_list at = { .v = co.at, .cap = HARNESS_MAX_LIST, .n = &co.n_at };
	co.at[0] = 10;
	co.at[1] = 20;
	co.at[2] = 30;
	co.n_at = 3;
	const cli_opt opts[] = {
		CLI_OPT_BUF("--dir", NULL, o.dir, "DIR", "the run to measure", .def = ""),
		CLI_OPT_CALL("--models", NULL, &models, cli_opt_int_list, "LIST",
			     "only these model ids, comma-separated", .lo = 1, .hi = 0x7fffffff,
			     .def = "all"),
		CLI_OPT_REAL("--every", NULL, &o.every, 0, 1e7, "M",
			     "a model about every M minutes of compute, with the first and the "
			     "last (0: every model)",
			     .def = "the run's compute in 24 steps"),
		CLI_OPT_INT("--visits", NULL, &o.visits, 1, 100000, "V",
			    "search visits per position (Connect Four) or per move (Go)"),
		CLI_OPT_INT("--positions", NULL, &o.positions, 0, 100000, "N",
			    "Connect Four: positions of each set for the search, spread over it "
			    "(0: all)", .def = "all"),
		CLI_OPT_FLAG("--net-only", NULL, &o.net_only,
			     "Connect Four: the network alone, no search"),
		CLI_OPT_CHOICE("--precision", NULL, &prec, precisions, "fp32|bf16|int8",
			       "Connect Four: the network's arithmetic on the CPU (bf16 needs "
			       "AVX-512 BF16); another than fp32 is stored as its own method, "
			       "e.g. net@int8", .def = "fp32"),
		CLI_OPT_INT("--gnugo-level", NULL, &o.gnugo_level, 0, 10, "L", "Go: GNU Go's level"),
		CLI_OPT_INT("--games", NULL, &o.games, 2, 100000, "N", "Go: games against GNU Go per model"),
		CLI_OPT_BUF("--gnugo", NULL, o.gnugo, "PATH", "Go: GNU Go's program"),
		CLI_OPT_CHOICE("--axis", NULL, &axis, axes, "cpu|wall",
			       "the compute axis of --every, --at and the chart: the CPU seconds of "
			       "the run's process (fair on a shared machine) or wall seconds",
			       .def = "cpu"),
		CLI_OPT_BUF("--csv", NULL, o.csv, "FILE", "also write the table as CSV", .def = ""),
		CLI_OPT_REAL("--regress", NULL, &o.regress_minutes, 0, 1e7, "M",
			     "list the models worse, beyond two standard errors, than the model "
			     "measured M minutes of compute before them (0: no list)"),
		CLI_OPT_FLAG("--compare", NULL, &compare,
			     "compare the runs given as arguments (DIR or LABEL=DIR) at equal compute"),
		CLI_OPT_CALL("--at", NULL, &at, cli_opt_int_list, "LIST",
			     "--compare: compute points, minutes, comma-separated", .lo = 0,
			     .hi = 10000000, .def = "10,20,30"),
		CLI_OPT_STRING("--part", NULL, &co.part, "SET",
			       "--compare: a position set's name, or all", .def = "all"),
		CLI_OPT_FLAG("--quiet", "-q", &o.quiet, "no progress lines"),
	};
	int n_pos = 0;
	const cli_spec spec = {
		.cmd = "eval", .usage = "--dir DIR [options]\n       sente eval --compare DIR... [options]",
		.about = eval_about, .opts = opts, .n_opts = CLI_N(opts),
		.pos = co.runs, .pos_max = HARNESS_MAX_RUNS, .pos_n = &n_pos,
	};
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	o.axis = co.axis = (harness_axis)axis;
	if (!nn_dtype_from_name(precisions[prec], &o.precision))
		return cli_usage_error("eval", "--precision %s: fp32, bf16 or int8", precisions[prec]);
	char err[8192];
	if (compare) {
		if (n_pos < 1)
			return cli_usage_error("eval", "--compare needs the runs' folders");
		co.n_runs = n_pos;
		co.out = stdout;
		snprintf(co.csv, sizeof(co.csv), "%s", o.csv);
		if (harness_compare(&co, err, sizeof(err)) != 0) {
			fprintf(stderr, "sente eval: %s\n", err);
			return 1;
		}
		return 0;
	}
	if (n_pos > 0)
		return cli_usage_error("eval", "unexpected argument '%s' (the run is --dir DIR; "
				       "several runs: --compare)", co.runs[0]);
	if (!o.dir[0])
		return cli_usage_error("eval", "give the run's folder: --dir DIR");
	o.log = stdout;
	o.stop = &stop_flag;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (harness_eval(&o, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente eval: %s\n", err);
		return 1;
	}
	return 0;
}
