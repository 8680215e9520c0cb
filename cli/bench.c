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
	"  --repeat N          searches to run, each from a fresh tree (default 2)\n";

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
	     nn_threads = 0, repeat = 2;
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
		       bs.be[0]->ops->name, nn_precision_name(bs.precision),
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
	return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
