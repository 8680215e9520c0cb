/* bench.c: `sente bench`, speed figures as JSON lines on stdout. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/game.h"
#include "nn/bench.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/mcts.h"
#include "nn/cuda/cuda.h"
#include "train/cuda/gpu_train.h"
#include "train/trainer.h"

#include <time.h>

static const char bench_help[] =
	"usage: sente bench <what> [options]\n"
	"\n"
	"Measures speed and prints one JSON line per figure.\n"
	"\n"
	"what:\n"
	"  board        random games per second on one core (Go playouts with\n"
	"               simple ko; Connect Four random games)\n"
	"  nn           network evaluations per second and GFLOP/s per batch\n"
	"               size (see 'sente bench nn --help')\n"
	"  search       playouts per second of the search from the empty board\n"
	"               (see 'sente bench search --help')\n"
	"  train        learner steps on random data: samples per second and, on\n"
	"               CUDA, model-FLOPs utilisation (see 'sente bench train --help')\n"
	"\n"
	"options for board:\n"
	"  --sizes LIST   Go board sizes, comma-separated (default 9,19)\n"
	"  --seconds S    time per figure (default 2)\n"
	"  --seed N       random seed (default 1)\n";

/* Runs Go playouts from the empty board for about `seconds`. */
static void bench_go(int size, double seconds, uint64_t seed)
{
	static go_board empty, b; /* large: keep them off the stack */
	go_init(&empty, size, 7.5);
	uint64_t rng = seed ? seed : 1;
	long games = 0, moves = 0;
	double t0 = cli_now(), t;
	do {
		for (int i = 0; i < 64; i++) {
			b = empty;
			moves += go_playout(&b, &rng);
			games++;
		}
		t = cli_now() - t0;
	} while (t < seconds);
	printf("{\"bench\":\"board\",\"game\":\"go\",\"size\":%d,\"games_per_s\":%.1f,"
	       "\"moves_per_game\":%.1f,\"moves_per_s\":%.0f}\n",
	       size, games / t, (double)moves / games, moves / t);
	fflush(stdout);
}

static uint64_t bench_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Connect Four random games through the generic interface. */
static void bench_c4(double seconds, uint64_t seed)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game g;
	int moves[GAME_MAX_ACTIONS];
	uint64_t rng = seed ? seed : 1;
	long games = 0, plies = 0;
	double t0 = cli_now(), t;
	do {
		for (int i = 0; i < 256; i++) {
			game_init(&g, &p);
			int n;
			while ((n = game_legal_moves(&g, moves)) > 0) {
				game_play(&g, moves[bench_xorshift(&rng) % (uint64_t)n]);
				plies++;
			}
			games++;
		}
		t = cli_now() - t0;
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
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--sizes") && v) {
			char buf[256];
			snprintf(buf, sizeof(buf), "%s", v);
			n_sizes = 0;
			for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
				long s;
				if (n_sizes == 16 || !cli_parse_int(tok, GO_MIN_SIZE, GO_MAX_SIZE, &s))
					return cli_usage_error("bench", "--sizes takes sizes %d..%d, got '%s'",
							       GO_MIN_SIZE, GO_MAX_SIZE, v);
				sizes[n_sizes++] = (int)s;
			}
			i++;
		} else if (!strcmp(a, "--seconds") && v) {
			if (!cli_parse_double(v, &seconds) || seconds <= 0 || seconds > 3600)
				return cli_usage_error("bench", "--seconds takes a positive number, got '%s'", v);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			if (!cli_parse_int(v, 1, 0x7fffffffL, &seed))
				return cli_usage_error("bench", "--seed takes a positive integer, got '%s'", v);
			i++;
		} else {
			return cli_usage_error("bench", "unknown or incomplete option '%s'", a);
		}
	}
	for (int i = 0; i < n_sizes; i++)
		bench_go(sizes[i], seconds, (uint64_t)seed);
	bench_c4(seconds, (uint64_t)seed);
	return 0;
}

static const char search_help[] =
	"usage: sente bench search [options]\n"
	"\n"
	"Searches from the empty board as genmove would and prints one JSON line\n"
	"per search: playouts per second, network evaluations, mean batch size, NN\n"
	"cache hits, and raw_evals_per_s: the backends' own speed at the same\n"
	"batch (forward calls alone, measured for a second before the searches),\n"
	"with search_to_raw = playouts_per_s / raw_evals_per_s.\n"
	"\n"
	"options:\n"
	"  -w, --weights FILE  network (.sente or Leela Zero); without one a random\n"
	"                      network of --blocks x --channels is used\n"
	"  --blocks B, --channels C   random network shape (default 6 x 64)\n"
	"  --game go|connect4  (default go)    --size N   Go board (default 19)\n"
	"  -v, --visits N      visits per search (default 3200)\n"
	"  -t, --threads N     search threads (default 2)\n"
	"  -b, --batch N       largest network batch (default 16); each search thread\n"
	"                      gathers batch/threads leaves per round\n"
	"  --nn-threads N      network compute threads (default: all cores)\n"
	"  --backend B         auto, cpu or cuda (default auto)\n"
	"  --gpus LIST         CUDA devices, one evaluator thread each (default 0)\n"
	"  --precision P       fp32/bf16/int8 (CPU), fp16/fp32 (CUDA, default fp16)\n"
	"  --repeat N          searches to run, each from a fresh tree (default 2)\n"
	"  --virtual-loss N    losses per descent in flight (default 1)\n";

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
		double t0 = cli_now();
		do {
			r->failed |= nn_backend_forward(r->be, r->batch, r->planes, pol, val, NULL) < 0;
			r->calls++;
			r->took = cli_now() - t0;
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
	long blocks = 6, channels = 64, size = 19, visits = 3200, threads = 2, batch = 0,
	     nn_threads = 0, repeat = 2, vloss = -1;
	game_kind kind = GAME_KIND_GO;
	nn_backend_options bo = nn_backend_options_default();
	char berr[256];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		long *target = NULL, lo = 1, hi = 1000000000;
		int r = v ? nn_backend_parse_flag(a, v, &bo, berr, sizeof(berr)) : 0;
		if (r < 0)
			return cli_usage_error("bench", "%s", berr);
		if (r > 0) {
			i++;
			continue;
		}
		if ((!strcmp(a, "-w") || !strcmp(a, "--weights")) && v) {
			weights = v;
			i++;
			continue;
		} else if (!strcmp(a, "--game") && v) {
			if (!game_kind_from_name(v, &kind))
				return cli_usage_error("bench", "unknown game '%s'", v);
			i++;
			continue;
		}
		if (!strcmp(a, "--blocks")) target = &blocks, hi = 80, lo = 0;
		else if (!strcmp(a, "--channels")) target = &channels, hi = 1024;
		else if (!strcmp(a, "--size")) target = &size, lo = GO_MIN_SIZE, hi = GO_MAX_SIZE;
		else if (!strcmp(a, "-v") || !strcmp(a, "--visits")) target = &visits;
		else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) target = &threads, hi = 256;
		else if (!strcmp(a, "-b") || !strcmp(a, "--batch")) target = &batch, hi = 4096;
		else if (!strcmp(a, "--nn-threads")) target = &nn_threads, hi = 1024;
		else if (!strcmp(a, "--repeat")) target = &repeat, hi = 1000;
		else if (!strcmp(a, "--virtual-loss")) target = &vloss, lo = 0, hi = 100;
		if (!target || !v)
			return cli_usage_error("bench", "unknown or incomplete option '%s'", a);
		if (!cli_parse_int(v, lo, hi, target))
			return cli_usage_error("bench", "%s takes an integer %ld..%ld, got '%s'", a, lo, hi, v);
		i++;
	}
	if (batch == 0)
		batch = 16;
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
	int rc = 0;
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

static const char train_help[] =
	"usage: sente bench train [options]\n"
	"\n"
	"Times learner steps on random positions and targets; one JSON line with\n"
	"samples/s (all of a step, host upload included) and, for cuda, the\n"
	"model-FLOPs utilisation: 3 x forward FLOPs x samples/s over the device's\n"
	"fp32 peak (fp32) or tensor-core peak (fp16, bf16).\n"
	"\n"
	"  --backend cpu|cuda          learner (default cpu)\n"
	"  --precision fp32|fp16|bf16  cuda compute type (default fp32)\n"
	"  --game go|connect4          (default go)\n"
	"  --blocks B --channels C     tower (default 6 x 64)\n"
	"  --size N                    Go board (default 9)\n"
	"  --batch N                   positions per step (default 64)\n"
	"  --steps N                   timed steps after one warm-up (default 10)\n"
	"  --micro-batch N             cuda: positions per pass (default automatic)\n"
	"  --threads N                 cpu: oneDNN threads (default the runtime's)\n"
	"  --device N                  cuda device (default 0)\n";

static double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Random planes (0/1), policy distributions, values and WDL targets. */
static void bench_fill_batch(train_batch *b, uint64_t seed)
{
	uint64_t s = seed;
	for (int i = 0; i < b->cap; i++) {
		for (int k = 0; k < b->in_size; k++)
			b->planes[(size_t)i * b->in_size + k] = (float)(bench_xorshift(&s) & 1);
		double sum = 0;
		float *p = b->policy + (size_t)i * b->n_actions;
		for (int a = 0; a < b->n_actions; a++)
			sum += p[a] = (float)(bench_xorshift(&s) % 1000) + 1.0f;
		for (int a = 0; a < b->n_actions; a++)
			p[a] = (float)(p[a] / sum);
		b->value[i] = (float)((int)(bench_xorshift(&s) % 3) - 1);
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
	const char *backend = "cpu", *prec = "fp32", *game_name = "go";
	int blocks = 6, channels = 64, size = 9, batch = 64, steps = 10, micro = 0, threads = 0;
	int device = 0, rc = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int *target = NULL, lo = 1, hi = 1 << 20;
		if (!strcmp(a, "--backend") && v) {
			backend = v, i++;
			continue;
		} else if (!strcmp(a, "--precision") && v) {
			prec = v, i++;
			continue;
		} else if (!strcmp(a, "--game") && v) {
			game_name = v, i++;
			continue;
		}
		if (!strcmp(a, "--blocks")) target = &blocks, lo = 0, hi = NN_MAX_BLOCKS;
		else if (!strcmp(a, "--channels")) target = &channels, hi = NN_MAX_CHANNELS;
		else if (!strcmp(a, "--size")) target = &size, lo = 5, hi = 19;
		else if (!strcmp(a, "--batch")) target = &batch, lo = 2, hi = 8192;
		else if (!strcmp(a, "--steps")) target = &steps, hi = 1000000;
		else if (!strcmp(a, "--micro-batch")) target = &micro, lo = 0, hi = 8192;
		else if (!strcmp(a, "--threads")) target = &threads, lo = 0, hi = 1024;
		else if (!strcmp(a, "--device")) target = &device, lo = 0, hi = 64;
		if (!target || !v)
			return cli_usage_error("bench train", "unknown or incomplete option '%s'", a);
		char *end;
		long x = strtol(v, &end, 10);
		if (*end || x < lo || x > hi)
			return cli_usage_error("bench train", "%s %s: expected %d..%d", a, v, lo, hi);
		*target = (int)x;
		i++;
	}
	int cuda = !strcmp(backend, "cuda");
	gpu_train_options g = gpu_train_options_default();
	if (!cuda && strcmp(backend, "cpu"))
		return cli_usage_error("bench train", "--backend %s: cpu or cuda", backend);
	if (!nn_dtype_from_name(prec, &g.precision) || g.precision == NN_DTYPE_INT8)
		return cli_usage_error("bench train", "--precision %s: fp32, fp16 or bf16", prec);
	if (!cuda && g.precision != NN_DTYPE_FP32)
		return cli_usage_error("bench train", "the cpu learner trains in fp32 only");
	game_kind kind;
	if (!strcmp(game_name, "go")) kind = GAME_KIND_GO;
	else if (!strcmp(game_name, "connect4")) kind = GAME_KIND_CONNECT4;
	else return cli_usage_error("bench train", "--game %s: go or connect4", game_name);
	if (cuda && nn_cuda_device_count() == 0) {
		fprintf(stderr, "sente bench train: no CUDA device (built with CUDA: %s, GPU trainer: "
			"%s); use --backend cpu\n", nn_cuda_built() ? "yes" : "no",
			gpu_train_built() ? "yes" : "no");
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
			t0 = bench_now(); /* the first step warms up */
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
	double secs = bench_now() - t0, sps = secs > 0 ? (double)batch * steps / secs : 0;
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
		return cli_wants_help(argc - 1, argv + 1) ? (fputs(bench_help, stdout), 0)
							  : bench_board(argc - 1, argv + 1);
	if (!strcmp(argv[1], "nn"))
		return nn_bench_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "search"))
		return cli_wants_help(argc - 1, argv + 1) ? (fputs(search_help, stdout), 0)
							  : bench_search(argc - 1, argv + 1);
	if (!strcmp(argv[1], "train"))
		return cli_wants_help(argc - 1, argv + 1) ? (fputs(train_help, stdout), 0)
							  : bench_train(argc - 1, argv + 1);
	return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
