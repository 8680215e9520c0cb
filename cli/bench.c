/* bench.c: `sente bench`, speed figures as JSON lines on stdout. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/game.h"
#include "nn/bench.h"

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
	return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
