/* bench.c: `sente bench`, speed figures as JSON lines on stdout. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/bench.h"
#include "nn/bench.h"
#include "nn/net.h"
#include "search/bench.h"
#include "train/bench.h"
#include "train/cuda/gpu_train.h"


static const char bench_help[] =
	"usage: sente bench <what> [options]\n"
	"\n"
	"Measures speed and prints one JSON line per figure.\n"
	"\n"
	"what:\n"
	"  board        random games per second on one core (Go playouts with\n"
	"               simple ko; Connect Four random games)\n"
	"  nn           network evaluations per second and GFLOP/s per batch size\n"
	"  search       playouts per second of the search from the empty board\n"
	"  train        learner steps on random data: samples per second and, on\n"
	"               CUDA, model-FLOPs utilisation\n"
	"\n"
	"Each has its options: 'sente bench board --help', and so on.\n";

static int bench_board(int argc, char **argv)
{
	int sizes[16] = { 9, 19 }, n_sizes = 2;
	double seconds = 2;
	long seed = 1;
	cli_int_list size_list = { .v = sizes, .cap = 16, .n = &n_sizes };
	const cli_opt opts[] = {
		CLI_OPT_CALL("--sizes", NULL, &size_list, cli_opt_int_list, "LIST",
			     "Go board sizes, comma-separated", .lo = GO_MIN_SIZE, .hi = GO_MAX_SIZE,
			     .def = "9,19"),
		CLI_OPT_REAL("--seconds", NULL, &seconds, 0, 3600, "S", "time per figure",
			     .open_lo = true),
		CLI_OPT_INT("--seed", NULL, &seed, 1, 0x7fffffffL, "N", "random seed"),
	};
	const cli_spec spec = {
		.cmd = "bench board", .usage = "[options]", .opts = opts, .n_opts = CLI_N(opts),
		.about = "Random games per second on one core: Go playouts with simple ko from\n"
			 "the empty board on each size, then Connect Four random games.\n",
	};
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	for (int i = 0; i < n_sizes; i++) {
		board_bench r = board_bench_go(sizes[i], seconds, (uint64_t)seed);
		printf("{\"bench\":\"board\",\"game\":\"go\",\"size\":%d,\"games_per_s\":%.1f,"
		       "\"moves_per_game\":%.1f,\"moves_per_s\":%.0f}\n",
		       sizes[i], r.games_per_s, r.moves_per_game, r.moves_per_s);
		fflush(stdout);
	}
	game_params c4 = game_desc_by_name("connect4")->defaults;
	board_bench r = board_bench_random(&c4, seconds, (uint64_t)seed);
	printf("{\"bench\":\"board\",\"game\":\"connect4\",\"size\":7,\"games_per_s\":%.1f,"
	       "\"moves_per_game\":%.1f,\"moves_per_s\":%.0f}\n",
	       r.games_per_s, r.moves_per_game, r.moves_per_s);
	return 0;
}

static const char nn_about[] =
	"Measures network evaluations per second on a backend and prints one JSON\n"
	"line per batch size. On CUDA the lines also carry the device, the\n"
	"achieved TFLOP/s and tc_peak_fraction: that over the device's dense peak\n"
	"(fp16: tensor cores; fp32: FMA units). Without a device, --backend cuda\n"
	"says so on stderr and measures nothing.\n";

static const char *const algo_names[] = { "auto", "direct", "winograd", NULL };

/* `sente bench nn`: the options into nn_bench_options, then nn_bench_run. */
static int bench_nn(int argc, char **argv)
{
	nn_bench_options o = nn_bench_options_default();
	game_kind kind = o.game.kind;
	long size = 19;
	cli_int_list batches = { .v = o.batches, .cap = NN_BENCH_MAX_BATCHES, .n = &o.n_batches };
	_Static_assert(sizeof(o.backend.algo) == sizeof(int), "--algo stores an int");
	const cli_opt opts[] = {
		CLI_OPT_STRING("--weights", "-w", &o.weights, "FILE",
			       "model to run (.sente, or Leela Zero v1 text/gzip); without it a random "
			       "network is built"),
		CLI_OPT_INT("--blocks", NULL, &o.blocks, 0, NN_MAX_BLOCKS, "B",
			    "random network: residual blocks"),
		CLI_OPT_INT("--channels", NULL, &o.channels, 1, NN_MAX_CHANNELS, "C",
			    "random network: channels"),
		CLI_OPT_CALL("--game", NULL, &kind, cli_opt_game, "NAME",
			     "random network: go or connect4", .def = "go"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N",
			    "random network: Go board size"),
		CLI_OPT_CALL("--batch", NULL, &batches, cli_opt_int_list, "LIST",
			     "batch sizes, comma-separated", .lo = 1, .hi = 4096, .def = "1,8,32"),
		CLI_OPT_INT("--threads", NULL, &o.backend.threads, 0, 1024, "N",
			    "compute threads; 0: the runtime's choice"),
		CLI_OPT_INT("--lanes", NULL, &o.backend.lanes, 1, 16, "N",
			    "CPU: copies of the network that split the threads, each running "
			    "batches of the given size at once in its own thread (as self-play's "
			    "--nn-lanes); evals_per_s is their sum", .def = "1"),
		CLI_OPT_NN_BACKEND(&o.backend, "cpu", "cpu, cuda or auto"),
		CLI_OPT_NN_GPUS(&o.backend, "0", "CUDA device to measure (the first of the list)"),
		CLI_OPT_NN_PRECISION(&o.backend, "fp32; fp16 on CUDA",
				     "fp32, bf16, int8 (CPU) or fp16, fp32 (CUDA); other than fp32, the "
				     "lines also carry the accuracy against an fp32 context on "
				     "--accuracy-positions positions of random play"),
		CLI_OPT_INT("--calib", NULL, &o.backend.calib_positions, 1, 1000000, "N",
			    "int8: calibration positions", .def = "256"),
		CLI_OPT_INT("--accuracy-positions", NULL, &o.accuracy_positions, 0, 100000, "N",
			    "positions for the accuracy fields"),
		CLI_OPT_CHOICE("--algo", NULL, &o.backend.algo, algo_names, "A",
			       "auto, direct or winograd (auto: timed per layer)"),
		CLI_OPT_REAL("--seconds", NULL, &o.seconds, 0, 3600, "S",
			     "measuring time per batch size", .open_lo = true),
		CLI_OPT_INT("--seed", NULL, &o.seed, 0, INT64_MAX, "N",
			    "seed of the random network and inputs"),
		CLI_OPT_FLAG("--verbose", "-v", &o.backend.verbose,
			     "describe the chosen primitives on stderr"),
	};
	const cli_spec spec = { .cmd = "bench nn", .usage = "[options]", .about = nn_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	o.game = game_params_sized(kind, (int)size, NAN);
	char err[512];
	if (nn_bench_run(&o, err, sizeof(err)) < 0) {
		fprintf(stderr, "sente bench nn: %s\n", err);
		return 1;
	}
	return 0;
}

static const char search_about[] =
	"Searches from the empty board as genmove would and prints one JSON line\n"
	"per search: playouts per second, network evaluations, mean batch size, NN\n"
	"cache hits, and raw_evals_per_s: the backends' own speed at the same\n"
	"batch (forward calls alone, measured for a second before the searches;\n"
	"on CPU lanes, every lane at once at one search thread's batch),\n"
	"with search_to_raw = playouts_per_s / raw_evals_per_s.\n";

/* search_bench_fn: one JSON line per search (ctx: the options). */
static void print_search(void *ctx, const search_bench_result *r)
{
	const search_bench_options *o = ctx;
	printf("{\"bench\":\"search\",\"backend\":\"%s\",\"precision\":\"%s\",\"gpus\":%d,"
	       "\"lanes\":%d,\"game\":\"%s\",\"size\":%d,"
	       "\"blocks\":%d,\"channels\":%d,\"threads\":%d,\"batch\":%d,\"visits\":%d,"
	       "\"playouts\":%llu,\"seconds\":%.3f,\"playouts_per_s\":%.1f,"
	       "\"evals\":%llu,\"mean_batch\":%.2f,\"cache_hits\":%llu,"
	       "\"raw_evals_per_s\":%.1f,\"search_to_raw\":%.3f}\n",
	       r->backend, nn_dtype_name(r->precision), r->gpus, r->lanes, game_kind_name(r->game.kind),
	       r->game.size, r->blocks, r->channels, o->threads, o->batch, r->visits,
	       (unsigned long long)r->playouts, r->seconds, r->playouts_per_s,
	       (unsigned long long)r->evals, r->mean_batch, (unsigned long long)r->cache_hits,
	       r->raw_evals_per_s, r->search_to_raw);
	fflush(stdout);
}

/* `sente bench search`: the options into search_bench_options, then
 * search_bench_run. */
static int bench_search(int argc, char **argv)
{
	search_bench_options o = search_bench_options_default();
	long size = 19;
	const cli_opt opts[] = {
		CLI_OPT_STRING("--weights", "-w", &o.weights, "FILE",
			       "network (.sente or Leela Zero); without one a random network of "
			       "--blocks x --channels is used"),
		CLI_OPT_INT("--blocks", NULL, &o.blocks, 0, 80, "B", "random network: residual blocks"),
		CLI_OPT_INT("--channels", NULL, &o.channels, 1, 1024, "C", "random network: channels"),
		CLI_OPT_CALL("--game", NULL, &o.game.kind, cli_opt_game, "go|connect4", "which game",
			     .def = "go"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board"),
		CLI_OPT_INT("--visits", "-v", &o.visits, 1, 1000000000, "N", "visits per search"),
		CLI_OPT_INT("--threads", "-t", &o.threads, 1, 256, "N", "search threads"),
		CLI_OPT_INT("--batch", "-b", &o.batch, 1, 4096, "N",
			    "largest network batch; each search thread gathers batch/threads leaves "
			    "per round"),
		CLI_OPT_INT("--nn-threads", NULL, &o.backend.threads, 1, 1024, "N",
			    "network compute threads", .def = "all cores"),
		CLI_OPT_INT("--nn-lanes", NULL, &o.backend.lanes, 1, 16, "N",
			    "CPU: copies of the network that split the compute threads, each "
			    "running one search thread's batch at a time", .def = "one per compute thread, at most the search threads"),
		CLI_OPT_NN_BACKEND(&o.backend, "auto", "auto, cpu or cuda"),
		CLI_OPT_NN_GPUS(&o.backend, "0", "CUDA devices, one evaluator thread each"),
		CLI_OPT_NN_PRECISION(&o.backend, "fp32 on the CPU, fp16 on CUDA",
				     "fp32/bf16/int8 (CPU), fp16/fp32 (CUDA)"),
		CLI_OPT_INT("--repeat", NULL, &o.repeat, 1, 1000, "N",
			    "searches to run, each from a fresh tree"),
		CLI_OPT_INT("--virtual-loss", NULL, &o.virtual_loss, 0, 100, "N",
			    "losses per descent in flight", .def = "1"),
	};
	const cli_spec spec = { .cmd = "bench search", .usage = "[options]", .about = search_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	o.game = game_params_sized(o.game.kind, (int)size, NAN);
	o.log = stderr;
	char err[512];
	if (search_bench_run(&o, print_search, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "sente bench search: %s\n", err);
		return 1;
	}
	return 0;
}

static const char train_about[] =
	"Times learner steps on random positions and targets; one JSON line with\n"
	"samples/s (all of a step, host upload included) and, for cuda, the\n"
	"model-FLOPs utilisation: 3 x forward FLOPs x samples/s over the device's\n"
	"fp32 peak (fp32) or tensor-core peak (fp16, bf16).\n";

static const char *const learner_names[] = { "cpu", "cuda", NULL };
static const char *const train_precisions[] = { "fp32", "fp16", "bf16", NULL };

/* The JSON line of `sente bench train`. */
static void print_train(const train_bench_options *o, const train_bench_result *r,
			const char *backend, const char *prec)
{
	printf("{\"bench\":\"train\",\"backend\":\"%s\",\"precision\":\"%s\",\"game\":\"%s\","
	       "\"board\":%d,\"blocks\":%d,\"channels\":%d,\"batch\":%d,\"steps\":%d,"
	       "\"seconds\":%.4f,\"samples_per_s\":%.2f,\"forward_flops\":%.0f,"
	       "\"loss\":%.5f", backend, prec, game_kind_name(o->game.kind), r->board, o->blocks,
	       o->channels, o->batch, o->steps, r->seconds, r->samples_per_s, r->forward_flops, r->loss);
	if (r->conv)
		printf(",\"conv\":\"%s\"", r->conv);
	if (o->own || o->score)
		printf(",\"ownership_head\":%s,\"score_head\":%s", o->own ? "true" : "false",
		       o->score ? "true" : "false");
	if (o->cuda)
		printf(",\"micro_batch\":%d,\"compute_samples_per_s\":%.2f,\"peak_tflops\":%.1f,"
		       "\"mfu\":%.4f", r->micro_batch, r->compute_samples_per_s, r->peak_tflops, r->mfu);
	printf("}\n");
	fflush(stdout);
}

/* `sente bench train`: the options into train_bench_options, then
 * train_bench_run, then one JSON line. */
static int bench_train(int argc, char **argv)
{
	train_bench_options o = train_bench_options_default();
	int backend_i = 0, prec_i = 0, size = o.game.size;
	const cli_opt opts[] = {
		CLI_OPT_CHOICE("--backend", NULL, &backend_i, learner_names, "cpu|cuda", "learner"),
		CLI_OPT_CHOICE("--precision", NULL, &prec_i, train_precisions, "fp32|fp16|bf16",
			       "compute type: cuda fp16, bf16 or fp32; cpu fp32 or bf16 (bf16 "
			       "operands for the tower's convolutions)"),
		CLI_OPT_CALL("--game", NULL, &o.game.kind, cli_opt_game, "go|connect4", "which game",
			     .def = "go"),
		CLI_OPT_INT("--blocks", NULL, &o.blocks, 0, NN_MAX_BLOCKS, "B", "tower: residual blocks"),
		CLI_OPT_INT("--channels", NULL, &o.channels, 1, NN_MAX_CHANNELS, "C", "tower: channels"),
		CLI_OPT_INT("--se-channels", NULL, &o.se_channels, 0, NN_MAX_CHANNELS, "N",
			    "squeeze-excitation blocks of this bottleneck (cpu; 0 plain)"),
		CLI_OPT_FLAG("--ownership-head", NULL, &o.own,
			     "Go: the network has the ownership head (trained at 1.5)"),
		CLI_OPT_FLAG("--score-head", NULL, &o.score,
			     "Go: the network has the score head (trained at 1)"),
		CLI_OPT_INT("--size", NULL, &size, 5, 19, "N", "Go board"),
		CLI_OPT_INT("--batch", NULL, &o.batch, 2, 8192, "N", "positions per step"),
		CLI_OPT_INT("--steps", NULL, &o.steps, 1, 1000000, "N", "timed steps after one warm-up"),
		CLI_OPT_INT("--micro-batch", NULL, &o.micro_batch, 0, 8192, "N",
			    "cuda: positions per pass", .def = "automatic"),
		CLI_OPT_INT("--threads", NULL, &o.threads, 0, 1024, "N", "cpu: oneDNN threads",
			    .def = "the runtime's"),
		CLI_OPT_INT("--device", NULL, &o.device, 0, 64, "N", "cuda device"),
		CLI_OPT_CHOICE("--algo", NULL, &o.algo, algo_names, "A",
			       "cpu: the tower's 3x3 convolutions: direct, Winograd's where "
			       "oneDNN has it, or auto (Winograd from 32 channels)"),
		CLI_OPT_STRING("--save", NULL, &o.save, "FILE",
			       "write the random network it trains (to time another framework "
			       "on the same network)"),
	};
	const cli_spec spec = { .cmd = "bench train", .usage = "[options]", .about = train_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	const char *prec = train_precisions[prec_i];
	o.cuda = backend_i == 1;
	if (!nn_dtype_from_name(prec, &o.precision) || o.precision == NN_DTYPE_INT8)
		return cli_usage_error("bench train", "--precision %s: fp32, fp16 or bf16", prec);
	if (!o.cuda && o.precision == NN_DTYPE_FP16)
		return cli_usage_error("bench train", "the cpu learner trains in fp32 or bf16, not fp16");
	o.game = game_params_sized(o.game.kind, size, NAN);
	if ((o.own || o.score) && !game_desc_from_params(&o.game)->ownership)
		return cli_usage_error("bench train", "--ownership-head and --score-head: Go only");
	train_bench_result r;
	char err[512];
	if (train_bench_run(&o, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente bench train: %s\n", err);
		return 1;
	}
	print_train(&o, &r, learner_names[backend_i], train_precisions[prec_i]);
	return 0;
}

int cli_bench(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(bench_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "board"))
		return bench_board(argc - 1, argv + 1);
	if (!strcmp(argv[1], "nn"))
		return bench_nn(argc - 1, argv + 1);
	if (!strcmp(argv[1], "search"))
		return bench_search(argc - 1, argv + 1);
	if (!strcmp(argv[1], "train"))
		return bench_train(argc - 1, argv + 1);
	return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
