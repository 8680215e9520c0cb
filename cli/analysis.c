/* analysis.c: `sente analysis`, KataGo's JSON analysis engine on
 * stdin/stdout (gtp/analysis.h). */
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "gtp/analysis.h"

static const char analysis_about[] =
	"Speaks KataGo's JSON analysis protocol (KataGo's docs/Analysis_Engine.md) on\n"
	"standard input and output, for KaTrain and analysis tools: one JSON query per\n"
	"line, one JSON answer per analysed turn, as each finishes (possibly out of\n"
	"order); errors and warnings as KataGo words them; diagnostics on standard\n"
	"error. The analysis threads search several positions at once through one\n"
	"shared network evaluator, so that the turns of a game sent together fill its\n"
	"batches. When the input ends, what is queued is answered, then it exits.\n"
	"KataGo's command line as KaTrain writes it (-model FILE -config FILE\n"
	"-analysis-threads N) is accepted; sente reads no config file.\n";

int cli_analysis(int argc, char **argv)
{
	analysis_options opt = analysis_options_default();
	long cache_mb = (long)(opt.cache_bytes >> 20), memory_mb = (long)(opt.tree_bytes >> 20);
	const char *config = NULL;
	const cli_opt opts[] = {
		CLI_OPT_STRING("--model", "-model", &opt.weights, "FILE",
			       "network: a .sente model or Leela Zero weights; it fixes the game and "
			       "board size. Without one, any Go size from the game's cheap prior and "
			       "a neutral value (weak; for trying the protocol)", .def = "none"),
		CLI_OPT_STRING("--weights", "-w", &opt.weights, "FILE", "the same as --model",
			       .def = ""),
		CLI_OPT_INT("--threads", "-analysis-threads", &opt.threads, 1, 256, "N",
			    "analysis threads: positions searched at once"),
		CLI_OPT_INT("--search-threads", NULL, &opt.search_threads, 1, 64, "N",
			    "search threads per position"),
		CLI_OPT_INT("--visits", "-v", &opt.max_visits, 1, 100000000, "N",
			    "maxVisits of a query that gives none"),
		CLI_OPT_INT("--batch", "-b", &opt.batch, 1, 4096, "N",
			    "largest network batch, shared by all positions"),
		CLI_OPT_INT("--nn-threads", NULL, &opt.nn.threads, 1, 1024, "N",
			    "network compute threads", .def = "all cores"),
		CLI_OPT_NN_BACKEND(&opt.nn, "auto: CUDA when a device is present, else the CPU",
				   "auto, cpu or cuda; cuda falls back to the CPU with a message when "
				   "no device can be used"),
		CLI_OPT_NN_GPUS(&opt.nn, "0", "CUDA devices, e.g. 0,1: one evaluator thread each"),
		CLI_OPT_NN_PRECISION(&opt.nn, "fp32 on the CPU, fp16 on CUDA",
				     "fp32, bf16 or int8 on the CPU; fp16 or fp32 on CUDA"),
		CLI_OPT_INT("--cache", NULL, &cache_mb, 0, 1 << 20, "MB",
			    "network cache shared by all positions (clear_cache empties it)"),
		CLI_OPT_INT("--memory", NULL, &memory_mb, 16, 1 << 20, "MB",
			    "search tree memory of each analysis thread"),
		CLI_OPT_INT("--score-playouts", NULL, &opt.score_playouts, 0, 100000, "N",
			    "random playouts behind a position's scoreLead and ownership estimate "
			    "where the network lacks the score or ownership head (each move's: a "
			    "quarter); 0 leaves score and ownership out"),
		CLI_OPT_INT("--seed", "-s", &opt.seed, 0, 0x7fffffffL, "N", "random seed"),
		CLI_OPT_STRING("--config", "-config", &config, "FILE",
			       "KataGo's config file: accepted for KataGo's command line, not read",
			       .def = "none"),
		CLI_OPT_FLAG("--quiet", "-q", &opt.quiet, "nothing on standard error"),
	};
	const cli_spec spec = { .cmd = "analysis", .usage = "[options]", .about = analysis_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	opt.cache_bytes = (size_t)cache_mb << 20;
	opt.tree_bytes = (size_t)memory_mb << 20;
	char err[512];
	analysis_engine *a = analysis_engine_new(&opt, stdout, err, sizeof(err));
	if (!a) {
		fprintf(stderr, "sente analysis: %s\n", err);
		return 1;
	}
	if (!opt.quiet) {
		if (config)
			fprintf(stderr, "sente analysis: %s not read (sente takes its settings from "
				"its flags; see sente analysis --help)\n", config);
		fprintf(stderr, "sente analysis: %s, network %s, backend %s, %d analysis threads\n",
			analysis_engine_game(a), opt.weights ? opt.weights : "none (cheap prior)",
			analysis_engine_backend(a), opt.threads);
		fprintf(stderr, "Started, ready to begin handling requests\n");
	}
	rc = analysis_engine_run(a, STDIN_FILENO) == 0 ? 0 : 1;
	if (!opt.quiet) {
		analysis_stats s;
		analysis_engine_get_stats(a, &s);
		fprintf(stderr, "sente analysis: %llu queries, %llu turns answered, %llu errors, "
			"%llu warnings; network: %llu evaluations in %llu batches (mean batch %.1f), "
			"%llu cache hits\n", (unsigned long long)s.queries, (unsigned long long)s.turns,
			(unsigned long long)s.errors, (unsigned long long)s.warnings,
			(unsigned long long)s.eval.evals, (unsigned long long)s.eval.batches,
			s.eval.batches ? (double)s.eval.evals / (double)s.eval.batches : 0.0,
			(unsigned long long)s.eval.cache_hits);
	}
	analysis_engine_free(a);
	return rc;
}
