/* run.c: `sente run`: its options, then loop_run (loop/loop.h), the whole
 * AlphaZero loop on one machine. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "loop/loop.h"

static const char run_help[] =
	"usage: sente run [options]\n"
	"\n"
	"Runs the AlphaZero loop on this machine: self-play games with the newest\n"
	"network, training on a window of recent positions, a new network, its\n"
	"strength, and again, until --minutes have passed or Ctrl-C. Everything\n"
	"is kept in DIR: sente.db (games, models, metrics), models/*.sente,\n"
	"checkpoints/, report.html. Run it again on the same DIR to continue.\n"
	"\n"
	"Strength is measured as it goes: for Connect Four, the error rate on\n"
	"positions labelled by a perfect solver (the network alone, and a search\n"
	"of --eval-visits visits); for Go, games against the first network.\n"
	"\n"
	"options (defaults are for 2 CPU cores):\n"
	"  --game connect4|go    what to learn (default connect4)\n"
	"  --size N, --komi K    Go board and komi (default 9, 7.5: no draws)\n"
	"  --dir DIR             the run's folder (default runs/GAME)\n"
	"  --minutes M           stop after M minutes of this session (default 10)\n"
	"  --blocks B            residual blocks of a new network (C4 4, Go 9x9 4,\n"
	"                        larger Go 6)\n"
	"  --channels C          channels of a new network (C4 48, Go 9x9 48, larger\n"
	"                        Go 64)\n"
	"  --parallel-games K    self-play games at once (C4 32, Go 64)\n"
	"  --visits V            full search visits (C4 200, Go 100)\n"
	"  --cheap-visits V      cheap search visits (C4 40, Go 25; 0 = off)\n"
	"  --positions N         new recorded positions per iteration (default 2000)\n"
	"  --window N            positions the learner samples from (C4 60000, Go 100000)\n"
	"  --batch N             training batch (default 256)\n"
	"  --sample-ratio R      training samples per new position (default 6)\n"
	"  --lr X                learning rate, SGD with Nesterov momentum (default 0.02)\n"
	"  --eval-visits V       search visits when measuring strength (default 200)\n"
	"  --eval-positions N    positions per set for the search measurement (default 40)\n"
	"  --seed N              seed of the first network (default 1)\n"
	"  --gate-games N        gating: a new network plays N games against the\n"
	"                        self-play network and replaces it only if it scores\n"
	"                        at least --gate-threshold (default 0: always\n"
	"                        replace it, as AlphaZero)\n"
	"  --gate-threshold F    score needed to pass the gate (default 0.55)\n"
	"  --gate-visits V       visits per move in gating games (default 50)\n"
	"  --backend B           auto, cpu or cuda: where self-play and training run\n"
	"                        (default auto: the GPU when one is usable, sharing\n"
	"                        it between the two phases)\n"
	"  --gpus LIST           GPUs for self-play (one evaluator each); training\n"
	"                        uses the first\n"
	"  --precision P         fp32, fp16, bf16 (GPU; default fp16), int8 (CPU\n"
	"                        self-play; training stays fp32)\n"
	"  -q, --quiet           fewer progress lines\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

/* Parses argv into *o (the game's defaults where a flag is not given);
 * false with *rc (2) on a usage error. */
static bool parse_opts(int argc, char **argv, loop_options *o, int *rc)
{
	long n, size = 9;
	double d, komi = 7.5;
	const char *dir = NULL;
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	/* Flags whose default depends on the game: -1 until given. */
	long blocks = -1, channels = -1, visits = -1, cheap = -1, par = -1, pos = -1, window = -1;
	long batch = -1, eval_visits = -1, eval_positions = -1, seed = -1, gate_games = -1;
	long gate_visits = -1;
	double minutes = -1, ratio = -1, lr = -1, gate_threshold = -1;
	bool quiet = false;
	nn_backend_options nn = nn_backend_options_default();
	int r;
	char berr[256];
	*rc = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(s) (!strcmp(a, s) && v && (i++, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) || (cli_usage_error("run", "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) ((cli_parse_double(v, &d) && d >= (lo) && d <= (hi)) || (cli_usage_error("run", "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
		if (FLAG("--game")) {
			if (!game_kind_from_name(v, &gp.kind)) {
				cli_usage_error("run", "unknown game '%s' (go or connect4)", v);
				return false;
			}
		} else if (FLAG("--size")) {
			if (!INT(GO_MIN_SIZE, GO_MAX_SIZE)) return false;
			size = n;
		} else if (FLAG("--komi")) {
			if (!REAL(-1000, 1000)) return false;
			komi = d;
		} else if (FLAG("--dir")) {
			dir = v;
		} else if (FLAG("--minutes")) {
			if (!REAL(0.01, 1e7)) return false;
			minutes = d;
		} else if (FLAG("--blocks")) {
			if (!INT(1, 40)) return false;
			blocks = n;
		} else if (FLAG("--channels")) {
			if (!INT(4, 512)) return false;
			channels = n;
		} else if (FLAG("--parallel-games")) {
			if (!INT(1, 1024)) return false;
			par = n;
		} else if (FLAG("--visits")) {
			if (!INT(2, 100000)) return false;
			visits = n;
		} else if (FLAG("--cheap-visits")) {
			if (!INT(0, 100000)) return false;
			cheap = n;
		} else if (FLAG("--positions")) {
			if (!INT(1, 100000000)) return false;
			pos = n;
		} else if (FLAG("--window")) {
			if (!INT(100, 1000000000)) return false;
			window = n;
		} else if (FLAG("--batch")) {
			if (!INT(1, 8192)) return false;
			batch = n;
		} else if (FLAG("--sample-ratio")) {
			if (!REAL(0.01, 1000)) return false;
			ratio = d;
		} else if (FLAG("--lr")) {
			if (!REAL(1e-6, 10)) return false;
			lr = d;
		} else if (FLAG("--eval-visits")) {
			if (!INT(1, 100000)) return false;
			eval_visits = n;
		} else if (FLAG("--eval-positions")) {
			if (!INT(1, 100000)) return false;
			eval_positions = n;
		} else if (FLAG("--seed")) {
			if (!INT(0, 0x7fffffffL)) return false;
			seed = n;
		} else if (FLAG("--gate-games")) {
			if (!INT(0, 100000)) return false;
			gate_games = n;
		} else if (FLAG("--gate-threshold")) {
			if (!REAL(0, 1)) return false;
			gate_threshold = d;
		} else if (FLAG("--gate-visits")) {
			if (!INT(1, 100000)) return false;
			gate_visits = n;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else if (v && (r = nn_backend_parse_flag(a, v, &nn, berr, sizeof(berr))) != 0) {
			if (r < 0) {
				cli_usage_error("run", "%s", berr);
				return false;
			}
			i++;
		} else {
			cli_usage_error("run", "unknown or incomplete option '%s'", a);
			return false;
		}
#undef FLAG
#undef INT
#undef REAL
	}
	if (gp.kind != GAME_KIND_CONNECT4) {
		gp.size = (int)size;
		gp.komi = komi;
		if (komi * 2 != floor(komi * 2)) {
			cli_usage_error("run", "--komi must be a multiple of 0.5");
			return false;
		}
	}
	*o = loop_options_default(&gp);
#define GIVEN(x, field) if ((x) >= 0) o->field = (x)
	GIVEN(minutes, minutes);
	GIVEN(blocks, blocks);
	GIVEN(channels, channels);
	GIVEN(par, parallel_games);
	GIVEN(visits, visits);
	GIVEN(cheap, cheap_visits);
	GIVEN(pos, positions_per_iter);
	GIVEN(window, window);
	GIVEN(batch, batch);
	GIVEN(ratio, sample_ratio);
	GIVEN(lr, lr);
	GIVEN(eval_visits, eval_visits);
	GIVEN(eval_positions, eval_positions);
	GIVEN(seed, seed);
	GIVEN(gate_games, gate_games);
	GIVEN(gate_threshold, gate_threshold);
	GIVEN(gate_visits, gate_visits);
#undef GIVEN
	if (dir)
		o->dir = dir;
	o->nn = nn;
	o->quiet = quiet;
	*rc = 0;
	return true;
}

int cli_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(run_help, stdout);
		return 0;
	}
	loop_options o;
	int rc;
	if (!parse_opts(argc, argv, &o, &rc))
		return rc;
	o.log = stderr;
	o.stop = &stop_flag;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	char err[8192];
	if (loop_run(&o, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente run: %s\n", err);
		return 1;
	}
	return 0;
}
