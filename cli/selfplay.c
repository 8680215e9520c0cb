/* selfplay.c: `sente selfplay`, self-play games into the store. */
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "loop/distributed.h"

static const char selfplay_about[] =
	"Plays self-play games, many at once sharing one network evaluator, and\n"
	"stores each finished game in the database in its own transaction. The\n"
	"model is -w FILE, else the newest model registered in the database (a\n"
	"newer one is taken up between games), else a uniform policy. Ctrl-C\n"
	"stops at once; finished games are kept, unfinished ones dropped.\n"
	"\n"
	"Across machines: `mpirun -np K sente selfplay --db FILE ...`: rank 0 opens\n"
	"FILE and stores the games that ranks 1..K-1 play and send it (tagged\n"
	"rankN@host), and hands them the newest model as `sente train` registers\n"
	"it; the workers need no access to FILE.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

/* The closing JSON line: the games' totals. */
static void print_done(const selfplay_stats *st)
{
	printf("{\"selfplay\":\"done\",\"games\":%lld,\"positions\":%lld,\"moves\":%lld,"
	       "\"seconds\":%.1f,\"first_wins\":%lld,\"second_wins\":%lld,\"draws\":%lld,"
	       "\"resigned\":%lld,\"no_resign_games\":%lld,\"would_resign\":%lld,"
	       "\"false_resign\":%lld,\"evals\":%llu,\"mean_batch\":%.2f}\n",
	       (long long)st->games, (long long)st->positions, (long long)st->moves, st->seconds,
	       (long long)st->wins[0], (long long)st->wins[1], (long long)st->wins[2],
	       (long long)st->resigned, (long long)st->no_resign_games, (long long)st->would_resign,
	       (long long)st->false_resign, (unsigned long long)st->evals,
	       st->batches ? (double)st->evals / (double)st->batches : 0.0);
}

int cli_selfplay(int argc, char **argv)
{
	const char *db_path = NULL;
	long size = 9;
	double minutes = 0, komi = NAN;
	selfplay_worker_options w = selfplay_worker_options_default();
	selfplay_options *o = &w.play;
	game_params *gp = &o->game;
	o->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	const cli_opt opts[] = {
		CLI_OPT_STRING("--db", NULL, &db_path, "FILE", "the run's database (created when missing)"),
		CLI_OPT_STRING("--weights", "-w", &w.weights, "FILE",
			       "model to play with (no pick-up of newer ones)"),
		CLI_OPT_INT("--games", NULL, &w.games, 1, 1000000000, "N", "stop after N games", .def = ""),
		CLI_OPT_REAL("--minutes", NULL, &minutes, 0.001, 1e7, "M", "stop after M minutes",
			     .def = "until Ctrl-C"),
		CLI_OPT_CALL("--game", NULL, &gp->kind, cli_opt_game, "go|connect4", "which game",
			     .given = &w.game_fixed, .def = "the model's game, else connect4"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board"),
		CLI_OPT_REAL("--komi", NULL, &komi, -1000, 1000, "K", "Go komi", .def = "7.5, the game's"),
		CLI_OPT_INT("--parallel-games", NULL, &o->parallel_games, 1, 1024, "K",
			    "games at once"),
		CLI_OPT_SELFPLAY_LANES(&o->nn, &o->games_per_thread),
		CLI_OPT_INT("--visits", NULL, &o->visits, 1, 1000000, "V", "full search visits, recorded"),
		CLI_OPT_INT("--cheap-visits", NULL, &o->cheap_visits, 0, 1000000, "V",
			    "cheap search visits, not recorded; 0: every move gets the full search"),
		CLI_OPT_REAL("--full-fraction", NULL, &o->full_fraction, 0, 1, "F",
			     "chance of a full search per move"),
		CLI_OPT_INT("--temperature-moves", NULL, &o->explore.temperature_moves, 0, 10000, "N",
			    "opening moves played at temperature 1",
			    .def = "20 for Connect Four, the board size for Go"),
		CLI_OPT_INT("--temperature-end", NULL, &o->explore.temperature_end, 0, 10000, "N",
			    "ply where the temperature has fallen linearly to --temperature-floor "
			    "(at most --temperature-moves: a step)",
			    .def = "30 for Connect Four, the board size for Go"),
		CLI_OPT_REAL("--temperature-floor", NULL, &o->explore.temperature_floor, 0, 10, "T",
			     "temperature after --temperature-end (0: the most visited move)",
			     .def = "0.3 for Connect Four, 0 for Go"),
		CLI_OPT_INT("--random-opening", NULL, &o->explore.random_opening, 0, 1000, "N",
			    "each game opens with K uniformly random moves, K drawn uniformly from "
			    "0..N, played without a search and not training positions; 0: off",
			    .def = "8 for Connect Four, 0 for Go"),
		CLI_OPT_FLAG("--gumbel", NULL, &o->explore.gumbel,
			     "Gumbel root search (sequential halving over --gumbel-m sampled moves; "
			     "the improved policy as the target) instead of Dirichlet noise and the "
			     "temperature"),
		CLI_OPT_INT("--gumbel-m", NULL, &o->explore.gumbel_m, 1, 362, "M",
			    "moves the Gumbel root considers"),
		CLI_OPT_REAL("--resign", NULL, &o->resign_pct, 0, 100, "PCT",
			     "resign below at most PCT% winrate; 0 never. The threshold in use is the "
			     "one that would have resigned at most 5% of the latest no-resign games "
			     "falsely; none before 50 such games, none in the opening, and only after "
			     "three searches in a row below it"),
		CLI_OPT_REAL("--no-resign-fraction", NULL, &o->no_resign_fraction, 0, 1, "F",
			     "games that never resign, to measure false resignations"),
		CLI_OPT_INT("--batch", "-b", &o->batch, 1, 4096, "N", "largest network batch"),
		CLI_OPT_INT("--nn-threads", NULL, &o->nn.threads, 1, 1024, "N", "network compute threads",
			    .def = "all cores"),
		CLI_OPT_NN_BACKEND(&o->nn, "auto: CUDA when a device is present, else the CPU",
				   "auto, cpu or cuda"),
		CLI_OPT_NN_GPUS(&o->nn, "0", "CUDA devices, e.g. 0,1"),
		CLI_OPT_NN_PRECISION(&o->nn, "int8 on a CPU with VNNI, else fp32; fp16 on CUDA",
				     "fp32/bf16/int8 on the CPU, fp16/fp32 on CUDA"),
		CLI_OPT_STRING("--worker", NULL, &w.name, "NAME", "name stored with each game",
			       .def = "host-pid"),
		CLI_OPT_INT("--seed", "-s", &o->seed, 0, 0x7fffffffL, "N", "random seed",
			    .def = "from the clock"),
		CLI_OPT_FLAG("--json", NULL, &o->json, "progress as JSON lines on stdout"),
		CLI_OPT_FLAG("--quiet", "-q", &o->quiet, "no progress on stderr"),
	};
	const cli_spec spec = { .cmd = "selfplay", .usage = "--db FILE [options]",
				.about = selfplay_about, .opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (!db_path)
		return cli_usage_error("selfplay", "--db FILE is required");

	gp->size = (int)size;
	gp->komi = komi; /* NAN: the game's default (the worker fills it in) */
	w.seconds = minutes * 60;
	w.log = stderr;
	w.stop = &stop_flag;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	selfplay_worker_result res;
	rc = loop_selfplay_main(db_path, &w, &res);
	if (!res.started)
		return rc;
	print_done(&res.stats);
	return rc;
}
