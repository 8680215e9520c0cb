/* bench.c: `sente bench`, speed figures as JSON lines on stdout. */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/clock.h"
#include "engine/rng.h"
#include "engine/game.h"
#include "nn/bench.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/mcts.h"
#include "nn/cuda/cuda.h"
#include "train/cuda/gpu_train.h"
#include "train/trainer.h"


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

/* Runs Go playouts from the empty board for about `seconds`. */
static void bench_go(int size, double seconds, uint64_t seed)
{
	static go_board empty, b; /* large: keep them off the stack */
	go_init(&empty, size, 7.5);
	uint64_t rng = seed ? seed : 1;
	long games = 0, moves = 0;
	double t0 = clock_now(), t;
	do {
		for (int i = 0; i < 64; i++) {
			b = empty;
			moves += go_playout(&b, &rng);
			games++;
		}
		t = clock_now() - t0;
	} while (t < seconds);
	printf("{\"bench\":\"board\",\"game\":\"go\",\"size\":%d,\"games_per_s\":%.1f,"
	       "\"moves_per_game\":%.1f,\"moves_per_s\":%.0f}\n",
	       size, games / t, (double)moves / games, moves / t);
	fflush(stdout);
}

/* Connect Four random games through the generic interface. */
static void bench_c4(double seconds, uint64_t seed)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game g;
	int moves[GAME_MAX_ACTIONS];
	uint64_t rng = seed ? seed : 1;
	long games = 0, plies = 0;
	double t0 = clock_now(), t;
	do {
		for (int i = 0; i < 256; i++) {
			game_init(&g, &p);
			int n;
			while ((n = game_legal_moves(&g, moves)) > 0) {
				game_play(&g, moves[rng_next(&rng) % (uint64_t)n]);
				plies++;
			}
			games++;
		}
		t = clock_now() - t0;
	} while (t < seconds);
	printf("{\"bench\":\"board\",\"game\":\"connect4\",\"size\":7,\"games_per_s\":%.1f,"
	       "\"moves_per_game\":%.1f}\n", games / t, (double)plies / games);
	fflush(stdout);
}

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
	for (int i = 0; i < n_sizes; i++)
		bench_go(sizes[i], seconds, (uint64_t)seed);
	bench_c4(seconds, (uint64_t)seed);
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
	o.game = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		o.game.size = (int)size;
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
	"batch (forward calls alone, measured for a second before the searches),\n"
	"with search_to_raw = playouts_per_s / raw_evals_per_s.\n";

/* Forward calls per second of the backends at `batch`, all of them at once
 * (one thread each), over about `seconds`. */
typedef struct raw_arg {
	nn_backend *be;  /* the backend this thread drives */
	int batch;       /* positions per call */
	double seconds;  /* how long */
	const float *planes; /* [batch] inputs */
	long calls;      /* out: forward calls made */
	double took;     /* out: seconds */
	int failed;      /* out: a forward failed */
} raw_arg;

static void *raw_main(void *p)
{
	raw_arg *r = p;
	size_t np = (size_t)r->be->arch.policy_outputs * r->batch;
	float *pol = malloc(sizeof(float) * np), *val = malloc(sizeof(float) * r->batch);
	if (!pol || !val) {
		r->failed = 1;
	} else {
		nn_backend_forward(r->be, r->batch, r->planes, pol, val, NULL); /* warm up */
		double t0 = clock_now();
		do {
			r->failed |= nn_backend_forward(r->be, r->batch, r->planes, pol, val, NULL) < 0;
			r->calls++;
			r->took = clock_now() - t0;
		} while (r->took < r->seconds && !r->failed);
	}
	free(pol);
	free(val);
	return NULL;
}

static double raw_evals_per_s(const nn_backend_set *bs, int batch, double seconds)
{
	const nn_arch *a = &bs->be[0]->arch;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	float *planes = calloc(in_n * (size_t)batch, sizeof(float));
	raw_arg args[NN_MAX_GPUS];
	pthread_t th[NN_MAX_GPUS];
	double total = 0;
	if (!planes)
		return 0;
	for (size_t i = 0; i < in_n * (size_t)batch; i++)
		planes[i] = (float)((i * 2654435761u) >> 31 & 1);
	int started = 0;
	for (int i = 0; i < bs->n; i++) {
		args[i] = (raw_arg){ .be = bs->be[i], .batch = batch, .seconds = seconds, .planes = planes };
		if (pthread_create(&th[i], NULL, raw_main, &args[i]) != 0)
			break;
		started++;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		if (!args[i].failed && args[i].took > 0)
			total += args[i].calls * (double)batch / args[i].took;
	}
	free(planes);
	return total;
}

static int bench_search(int argc, char **argv)
{
	const char *weights = NULL;
	long blocks = 6, channels = 64, size = 19, visits = 3200, threads = 2, batch = 16,
	     nn_threads = 0, repeat = 2, vloss = -1;
	game_kind kind = GAME_KIND_GO;
	nn_backend_options bo = nn_backend_options_default();
	const cli_opt opts[] = {
		CLI_OPT_STRING("--weights", "-w", &weights, "FILE",
			       "network (.sente or Leela Zero); without one a random network of "
			       "--blocks x --channels is used"),
		CLI_OPT_INT("--blocks", NULL, &blocks, 0, 80, "B", "random network: residual blocks"),
		CLI_OPT_INT("--channels", NULL, &channels, 1, 1024, "C", "random network: channels"),
		CLI_OPT_CALL("--game", NULL, &kind, cli_opt_game, "go|connect4", "which game",
			     .def = "go"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board"),
		CLI_OPT_INT("--visits", "-v", &visits, 1, 1000000000, "N", "visits per search"),
		CLI_OPT_INT("--threads", "-t", &threads, 1, 256, "N", "search threads"),
		CLI_OPT_INT("--batch", "-b", &batch, 1, 4096, "N",
			    "largest network batch; each search thread gathers batch/threads leaves "
			    "per round"),
		CLI_OPT_INT("--nn-threads", NULL, &nn_threads, 1, 1024, "N", "network compute threads",
			    .def = "all cores"),
		CLI_OPT_NN_BACKEND(&bo, "auto", "auto, cpu or cuda"),
		CLI_OPT_NN_GPUS(&bo, "0", "CUDA devices, one evaluator thread each"),
		CLI_OPT_NN_PRECISION(&bo, "fp32 on the CPU, fp16 on CUDA",
				     "fp32/bf16/int8 (CPU), fp16/fp32 (CUDA)"),
		CLI_OPT_INT("--repeat", NULL, &repeat, 1, 1000, "N",
			    "searches to run, each from a fresh tree"),
		CLI_OPT_INT("--virtual-loss", NULL, &vloss, 0, 100, "N",
			    "losses per descent in flight", .def = "1"),
	};
	const cli_spec spec = { .cmd = "bench search", .usage = "[options]", .about = search_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	char err[512];
	game_params gp = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		gp.size = (int)size;
	nn_net *net = NULL;
	if (weights) {
		nn_expect want = { .game = (int)kind };
		net = nn_net_load_any(weights, &want, err, sizeof(err));
		if (!net) {
			fprintf(stderr, "sente bench search: %s\n", err);
			return 1;
		}
		if (kind == GAME_KIND_GO)
			gp.size = net->arch.board_w;
	} else {
		nn_arch a = nn_arch_default(&gp, (int)blocks, (int)channels);
		net = nn_net_new(&a, err, sizeof(err));
		if (!net) {
			fprintf(stderr, "sente bench search: %s\n", err);
			return 1;
		}
		nn_net_init_random(net, 1);
	}
	nn_net_fold_bn(net);
	bo.threads = (int)nn_threads;
	nn_backend_set bs;
	if (nn_backend_set_open(&bs, net, (int)batch, &bo, err, sizeof(err)) < 0) {
		fprintf(stderr, "sente bench search: backend: %s\n", err);
		nn_net_free(net);
		return 1;
	}
	fprintf(stderr, "sente bench search: backend %s\n", bs.what);
	double raw = raw_evals_per_s(&bs, (int)batch, 1.0);
	eval_options eo = eval_options_default();
	eo.max_batch = (int)batch;
	rc = 0;
	for (long r = 0; r < repeat; r++) {
		/* A fresh evaluator each time: its cache must not carry over. */
		evaluator *ev = eval_new(bs.be, bs.n, net->arch.encoding, &eo, err, sizeof(err));
		mcts_options mo = mcts_options_default();
		mo.threads = (int)threads;
		mo.max_visits = (int)visits;
		mo.gather = batch > threads ? (int)(batch / threads) : 1;
		if (vloss >= 0)
			mo.virtual_loss = (int)vloss;
		mcts *m = ev ? mcts_new(ev, &mo, err, sizeof(err)) : NULL;
		if (!m) {
			fprintf(stderr, "sente bench search: %s\n", err);
			eval_free(ev);
			rc = 1;
			break;
		}
		static game g;
		game_init(&g, &gp);
		mcts_set_position(m, &g);
		mcts_search(m);
		mcts_stats st;
		eval_stats es;
		mcts_get_stats(m, &st);
		eval_get_stats(ev, &es);
		double pps = st.seconds > 0 ? st.playouts / st.seconds : 0.0;
		printf("{\"bench\":\"search\",\"backend\":\"%s\",\"precision\":\"%s\",\"gpus\":%d,"
		       "\"game\":\"%s\",\"size\":%d,"
		       "\"blocks\":%d,\"channels\":%d,\"threads\":%ld,\"batch\":%ld,\"visits\":%d,"
		       "\"playouts\":%llu,\"seconds\":%.3f,\"playouts_per_s\":%.1f,"
		       "\"evals\":%llu,\"mean_batch\":%.2f,\"cache_hits\":%llu,"
		       "\"raw_evals_per_s\":%.1f,\"search_to_raw\":%.3f}\n",
		       bs.be[0]->ops->name, nn_dtype_name(bs.precision),
		       bs.be[0]->ops == &nn_backend_cpu ? 0 : bs.n,
		       game_kind_name(kind), gp.size, net->arch.blocks, net->arch.channels, threads,
		       batch, mcts_root_visits(m), (unsigned long long)st.playouts, st.seconds, pps,
		       (unsigned long long)es.evals,
		       es.batches ? (double)es.evals / es.batches : 0.0,
		       (unsigned long long)es.cache_hits, raw, raw > 0 ? pps / raw : 0.0);
		fflush(stdout);
		mcts_free(m);
		eval_free(ev);
	}
	nn_backend_set_close(&bs);
	nn_net_free(net);
	return rc;
}

static const char train_about[] =
	"Times learner steps on random positions and targets; one JSON line with\n"
	"samples/s (all of a step, host upload included) and, for cuda, the\n"
	"model-FLOPs utilisation: 3 x forward FLOPs x samples/s over the device's\n"
	"fp32 peak (fp32) or tensor-core peak (fp16, bf16).\n";

static const char *const learner_names[] = { "cpu", "cuda", NULL };
static const char *const train_precisions[] = { "fp32", "fp16", "bf16", NULL };

/* Random planes (0/1), policy distributions, values and WDL targets. */
static void bench_fill_batch(train_batch *b, uint64_t seed)
{
	uint64_t s = seed;
	for (int i = 0; i < b->cap; i++) {
		for (int k = 0; k < b->in_size; k++)
			b->planes[(size_t)i * b->in_size + k] = (float)(rng_next(&s) & 1);
		double sum = 0;
		float *p = b->policy + (size_t)i * b->n_actions;
		for (int a = 0; a < b->n_actions; a++)
			sum += p[a] = (float)(rng_next(&s) % 1000) + 1.0f;
		for (int a = 0; a < b->n_actions; a++)
			p[a] = (float)(p[a] / sum);
		b->value[i] = (float)((int)(rng_next(&s) % 3) - 1);
		if (b->wdl) {
			float z = b->value[i];
			b->wdl[3 * i] = z > 0 ? z : 0;
			b->wdl[3 * i + 1] = 1 - (z < 0 ? -z : z);
			b->wdl[3 * i + 2] = z < 0 ? -z : 0;
		}
	}
	b->n = b->cap;
}

static int bench_train(int argc, char **argv)
{
	int backend_i = 0, prec_i = 0;
	game_kind kind = GAME_KIND_GO;
	int blocks = 6, channels = 64, size = 9, batch = 64, steps = 10, micro = 0, threads = 0;
	int device = 0, rc = 0;
	const cli_opt opts[] = {
		CLI_OPT_CHOICE("--backend", NULL, &backend_i, learner_names, "cpu|cuda", "learner"),
		CLI_OPT_CHOICE("--precision", NULL, &prec_i, train_precisions, "fp32|fp16|bf16",
			       "cuda compute type"),
		CLI_OPT_CALL("--game", NULL, &kind, cli_opt_game, "go|connect4", "which game",
			     .def = "go"),
		CLI_OPT_INT("--blocks", NULL, &blocks, 0, NN_MAX_BLOCKS, "B", "tower: residual blocks"),
		CLI_OPT_INT("--channels", NULL, &channels, 1, NN_MAX_CHANNELS, "C", "tower: channels"),
		CLI_OPT_INT("--size", NULL, &size, 5, 19, "N", "Go board"),
		CLI_OPT_INT("--batch", NULL, &batch, 2, 8192, "N", "positions per step"),
		CLI_OPT_INT("--steps", NULL, &steps, 1, 1000000, "N", "timed steps after one warm-up"),
		CLI_OPT_INT("--micro-batch", NULL, &micro, 0, 8192, "N", "cuda: positions per pass",
			    .def = "automatic"),
		CLI_OPT_INT("--threads", NULL, &threads, 0, 1024, "N", "cpu: oneDNN threads",
			    .def = "the runtime's"),
		CLI_OPT_INT("--device", NULL, &device, 0, 64, "N", "cuda device"),
	};
	const cli_spec spec = { .cmd = "bench train", .usage = "[options]", .about = train_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	const char *backend = learner_names[backend_i], *prec = train_precisions[prec_i];
	int cuda = backend_i == 1;
	gpu_train_options g = gpu_train_options_default();
	if (!nn_dtype_from_name(prec, &g.precision) || g.precision == NN_DTYPE_INT8)
		return cli_usage_error("bench train", "--precision %s: fp32, fp16 or bf16", prec);
	if (!cuda && g.precision != NN_DTYPE_FP32)
		return cli_usage_error("bench train", "the cpu learner trains in fp32 only");
	if (cuda && nn_cuda_device_count() == 0) {
		fprintf(stderr, "sente bench train: no CUDA device (built with CUDA: %s, GPU trainer: "
			"%s): %s; use --backend cpu\n", nn_cuda_built() ? "yes" : "no",
			gpu_train_built() ? "yes" : "no", nn_cuda_probe_error());
		return 1;
	}
	g.device = device;
	g.micro_batch = micro;
	game_params gp = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		gp.size = size;
	nn_arch arch = nn_arch_default(&gp, blocks, channels);
	char err[512];
	nn_net *net = nn_net_new(&arch, err, sizeof(err));
	train_batch *b = NULL;
	trainer *ct = NULL;
	gpu_trainer *gt = NULL;
	if (!net) {
		fprintf(stderr, "sente bench train: %s\n", err);
		return 1;
	}
	nn_net_init_random(net, 1);
	train_options o = train_options_default();
	o.batch = batch;
	o.threads = threads;
	b = train_batch_new(&arch, batch, arch.value_outputs == 3);
	if (!b) {
		fprintf(stderr, "sente bench train: out of memory\n");
		rc = 1;
		goto out;
	}
	bench_fill_batch(b, 7);
	if (cuda)
		gt = gpu_trainer_new(net, &o, &g, err, sizeof(err));
	else
		ct = trainer_new(net, &o, err, sizeof(err));
	if (!gt && !ct) {
		fprintf(stderr, "sente bench train: %s\n", err);
		rc = 1;
		goto out;
	}
	double t0 = 0, compute = 0;
	train_stats st;
	for (int s = 0; s <= steps; s++) {
		if (s == 1)
			t0 = clock_now(); /* the first step warms up */
		int r = gt ? gpu_trainer_step_host(gt, b, &st) : trainer_step(ct, b, &st);
		if (r < 0) {
			fprintf(stderr, "sente bench train: %s\n",
				gt ? gpu_trainer_error(gt) : trainer_error(ct));
			rc = 1;
			goto out;
		}
		if (s >= 1)
			compute += gt ? st.compute_seconds : 0;
	}
	double secs = clock_now() - t0, sps = secs > 0 ? (double)batch * steps / secs : 0;
	double flops = gpu_train_forward_flops(&arch);
	printf("{\"bench\":\"train\",\"backend\":\"%s\",\"precision\":\"%s\",\"game\":\"%s\","
	       "\"board\":%d,\"blocks\":%d,\"channels\":%d,\"batch\":%d,\"steps\":%d,"
	       "\"seconds\":%.4f,\"samples_per_s\":%.2f,\"forward_flops\":%.0f,"
	       "\"loss\":%.5f", backend, prec, game_kind_name(kind), arch.board_w, blocks,
	       channels, batch, steps, secs, sps, flops, st.loss);
	if (gt) {
		double peak = nn_cuda_peak_tflops(device, g.precision == NN_DTYPE_FP32) * 1e12;
		double csps = compute > 0 ? (double)batch * steps / compute : 0;
		printf(",\"micro_batch\":%d,\"compute_samples_per_s\":%.2f,\"peak_tflops\":%.1f,"
		       "\"mfu\":%.4f", gpu_trainer_micro_batch(gt), csps, peak / 1e12,
		       peak > 0 ? 3.0 * flops * sps / peak : 0.0);
	}
	printf("}\n");
	fflush(stdout);
out:
	gpu_trainer_free(gt);
	trainer_free(ct);
	train_batch_free(b);
	nn_net_free(net);
	return rc;
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
