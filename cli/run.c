/* run.c: `sente run`: its options, then loop_run (loop/loop.h), the whole
 * AlphaZero loop on one machine. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/game_desc.h"
#include "loop/distributed.h"

static const char run_about[] =
	"Runs the AlphaZero loop on this machine: self-play games with the newest\n"
	"network, training on a window of recent positions, a new network, its\n"
	"strength, and again, until --minutes have passed (wall time, measuring\n"
	"and the closing measurement included: self-play and training stop early\n"
	"enough for them) or Ctrl-C. A progress line shows the time left and what\n"
	"is under way (rewritten in place on a terminal, a line every 15 s when\n"
	"piped). Everything is kept in DIR: sente.db (games, models, metrics),\n"
	"models/*.sente, checkpoints/, report.html; `sente serve --dir DIR` shows\n"
	"it live. Run it again on the same DIR to continue.\n"
	"\n"
	"Strength is measured as it goes: for Connect Four, the error rate on\n"
	"positions labelled by a perfect solver (the network alone, and a search\n"
	"of --eval-visits visits); for Go, games against the first network\n"
	"(--measure-every 0 turns it off; `sente eval` measures every saved\n"
	"model afterwards, against the run's compute).\n"
	"Defaults are for 2 CPU cores.\n"
	"\n"
	"Across machines: `mpirun -np K sente run --dir DIR ...` (or srun): rank 0\n"
	"owns DIR and trains; ranks 1..K-1 play self-play games (each on its own\n"
	"cores, or the GPU of --gpus that its local rank picks) and send them to\n"
	"rank 0, which stores each with the rank and host that played it. The\n"
	"workers take every new model between games; rank 0 sets the pace so that\n"
	"--sample-ratio holds. A rank that dies ends the job; run the same command\n"
	"again to resume.\n";

/* In train_optimizer's and train_lr_schedule's orders. */
static const char *const optimizers[] = { "sgd", "adamw", NULL };
static const char *const schedules[] = { "constant", "step", "cosine", NULL };

/* --train-precision P into the loop_options at o->ptr. */
static int parse_train_precision(const cli_opt *opt, const char *v, char *err, size_t errlen)
{
	loop_options *o = opt->ptr;
	nn_dtype t;
	if (!nn_dtype_from_name(v, &t) || t == NN_DTYPE_INT8) {
		snprintf(err, errlen, "%s %s: fp32, bf16 or fp16 (fp16 on the GPU only)", opt->name,
			 v);
		return -1;
	}
	o->train_precision = t;
	o->train_precision_given = true;
	return 0;
}

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

int cli_run(int argc, char **argv)
{
	game_params gp = game_desc_by_name("connect4")->defaults;
	loop_options o = loop_options_default(&gp);
	long size = 9;
	double komi = 7.5;
	/* Defaults that depend on the game: taken from its loop defaults
	 * after the parse, unless given. */
	bool dir_given = false, blocks_given = false, channels_given = false, par_given = false;
	bool visits_given = false, cheap_given = false, window_given = false;
	bool tmoves_given = false, tend_given = false, tfloor_given = false, carry_given = false;
	bool sched_given = false, drops_given = false, cpuct_given = false, ropen_given = false;
	cli_int_list drops = { .v = o.lr_drops, .cap = TRAIN_MAX_LR_STEPS, .n = &o.n_lr_drops };
	cli_int_list sizes = { .v = o.sizes, .cap = SELFPLAY_MAX_SIZES, .n = &o.n_sizes };
	const cli_opt opts[] = {
		CLI_OPT_CALL("--game", NULL, &gp.kind, cli_opt_game, "go|connect4", "what to learn",
			     .def = "connect4"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board"),
		CLI_OPT_REAL("--komi", NULL, &komi, -1000, 1000, "K",
			     "Go komi, a multiple of 0.5 (7.5: no draws)"),
		CLI_OPT_BUF("--dir", NULL, o.dir, "DIR", "the run's folder", .given = &dir_given,
			    .def = "runs/GAME"),
		CLI_OPT_REAL("--minutes", NULL, &o.minutes, 0.01, 1e7, "M",
			     "stop after M minutes of wall time in this session, measurements included"),
		CLI_OPT_INT("--blocks", NULL, &o.blocks, 1, 40, "B", "residual blocks of a new network",
			    .given = &blocks_given, .def = "C4 4, Go 9x9 4, larger Go 6"),
		CLI_OPT_INT("--channels", NULL, &o.channels, 4, 512, "C", "channels of a new network",
			    .given = &channels_given, .def = "C4 48, Go 9x9 48, larger Go 64"),
		CLI_OPT_SE_CHANNELS(&o.se_channels),
		CLI_OPT_INT("--parallel-games", NULL, &o.parallel_games, 1, 1024, "K",
			    "self-play games at once", .given = &par_given, .def = "C4 32, Go 64"),
		CLI_OPT_SELFPLAY_LANES(&o.nn, &o.games_per_thread),
		CLI_OPT_CALL("--sizes", NULL, &sizes, cli_opt_int_list, "LIST",
			     "Go: one network for these board sizes (e.g. 9,13), each self-play "
			     "game on one of them; the network's frame is the largest (both "
			     "learners; the GPU's not yet run on a device)",
			     .lo = 5, .hi = 19, .def = "--size alone"),
		CLI_OPT_INT("--learner-ranks", NULL, &o.learner_ranks, 1, 256, "L",
			    "under mpirun: ranks 0..L-1 train (CPU, data parallel, the batch split "
			    "evenly), the others play"),
		CLI_OPT_INT("--eval-batch", NULL, &o.eval_batch, 1, 4096, "N",
			    "the self-play evaluator's largest batch (a GPU may want more than "
			    "64: bench/results/gpu-2026-11-27-cf9090c.md)",
			    .def = "the parallel games, at most 64"),
		CLI_OPT_INT("--visits", NULL, &o.visits, 2, 100000, "V", "full search visits",
			    .given = &visits_given, .def = "C4 200, Go 100"),
		CLI_OPT_INT("--cheap-visits", NULL, &o.cheap_visits, 0, 100000, "V",
			    "cheap search visits (0 = off)", .given = &cheap_given,
			    .def = "C4 40, Go 25"),
		CLI_OPT_INT("--positions", NULL, &o.positions_per_iter, 1, 100000000, "N",
			    "new recorded positions per iteration"),
		CLI_OPT_INT("--window", NULL, &o.window, 100, 1000000000, "N",
			    "positions the learner samples from", .given = &window_given,
			    .def = "C4 150000, Go 100000"),
		CLI_OPT_INT("--window-min", NULL, &o.window_min, 0, 1000000000, "N",
			    "growing window (KataGo's): N positions until the run has seen N, then "
			    "N + beta N ((seen/N)^alpha - 1) / alpha, at most --window; 0: always "
			    "--window (CPU learner)"),
		CLI_OPT_REAL("--window-alpha", NULL, &o.window_alpha, 0.01, 1, "A",
			     "the growing window's exponent"),
		CLI_OPT_REAL("--window-beta", NULL, &o.window_beta, 0, 10, "B",
			     "the growing window's first growth per new position"),
		CLI_OPT_REAL("--reuse-cap", NULL, &o.reuse_cap, 0, 1000, "R",
			     "the oldest positions leave the window once drawn R times on average "
			     "(training pauses for new games when all have); 0: no cap (CPU "
			     "learner)"),
		CLI_OPT_FLAG("--carry-games", NULL, &o.carry_games,
			     "self-play games under way when an iteration has its positions go on "
			     "in the next, with the new network, instead of every game being played "
			     "out (fuller batches: docs/LEARNING.md)",
			     .def = "Go on, C4 off", .given = &carry_given),
		CLI_OPT_FLAG_OFF("--no-carry-games", NULL, &o.carry_games,
				 "every iteration plays all its games out", .given = &carry_given),
		CLI_OPT_REAL("--resign", NULL, &o.resign_pct, 0, 100, "PCT",
			     "self-play resigns below at most PCT% winrate (the threshold "
			     "calibrated on the no-resign games, as in sente selfplay); 0 never"),
		CLI_OPT_REAL("--no-resign-fraction", NULL, &o.no_resign_fraction, 0, 1, "F",
			     "self-play games that never resign, to calibrate the threshold"),
		CLI_OPT_INT("--batch", NULL, &o.batch, 1, 8192, "N", "training batch"),
		CLI_OPT_REAL("--sample-ratio", NULL, &o.sample_ratio, 0.01, 1000, "R",
			     "training samples per new position"),
		CLI_OPT_REAL("--lr", NULL, &o.lr, 1e-6, 10, "X", "base learning rate"),
		CLI_OPT_INT("--measure-every", NULL, &o.measure_every, 0, 1000000, "N",
			    "measure strength every N iterations (the search every third time), "
			    "at the start and at the end; 0: never (it takes part of --minutes, not of "
			    "the compute the run records)"),
		CLI_OPT_REAL("--measure-share", NULL, &o.measure_share, 0, 1, "F",
			     "skip a due measurement while measuring has taken more than F of the "
			     "session's time so far (the first and the closing one always run); 1: "
			     "never skip"),
		CLI_OPT_CHOICE("--optimizer", NULL, &o.optimizer, optimizers, "O",
			       "sgd (Nesterov momentum 0.9, L2) or adamw", .def = "sgd"),
		CLI_OPT_CHOICE("--lr-schedule", NULL, &o.lr_schedule, schedules, "S",
			       "constant; step (times --lr-gamma at each of --lr-drops); cosine "
			       "(to --lr-min over --lr-total-steps)", .given = &sched_given,
			       .def = "constant; step when --lr-drops is given"),
		CLI_OPT_INT("--lr-warmup", NULL, &o.lr_warmup, 0, 1000000000L, "N",
			    "linear warm-up of the learning rate from 0 over N steps"),
		CLI_OPT_CALL("--lr-drops", NULL, &drops, cli_opt_int_list, "LIST",
			     "steps at which the step schedule drops the rate", .lo = 1,
			     .hi = 1000000000L, .given = &drops_given, .def = "none"),
		CLI_OPT_REAL("--lr-gamma", NULL, &o.lr_gamma, 0, 1, "G", "factor per drop"),
		CLI_OPT_INT("--lr-total-steps", NULL, &o.lr_total_steps, 1, 1000000000L, "N",
			    "length of the cosine schedule"),
		CLI_OPT_REAL("--lr-min", NULL, &o.lr_min, 0, 10, "X", "the cosine's final rate"),
		CLI_OPT_HEAD_WEIGHTS(&o.opp_weight, &o.own_weight, &o.score_weight,
				     "Go 1.5, else 0; a network with the head 1.5"),
		CLI_OPT_REAL("--weight-decay", NULL, &o.weight_decay, 0, 1, "W",
			     "L2 coefficient (sgd) or decoupled decay rate (adamw)"),
		CLI_OPT_REAL("--bn-momentum", NULL, &o.bn_momentum, 1e-6, 1, "M",
			     "batch-norm running-statistics update rate"),
		CLI_OPT_INT("--bn-batches", NULL, &o.bn_batches, 0, 10000, "N",
			    "after each iteration's training, the batch-norm statistics recomputed "
			    "from N batches of the window (the network exported normalises with "
			    "statistics of its own weights); 0: the momentum's alone (CPU learner)"),
		CLI_OPT_REAL("--temperature", NULL, &o.explore.temperature, 0, 10, "T",
			     "self-play temperature of the opening moves"),
		CLI_OPT_INT("--temperature-moves", NULL, &o.explore.temperature_moves, 0, 100000, "N",
			    "plies played at --temperature", .given = &tmoves_given,
			    .def = "C4 20, Go the board size"),
		CLI_OPT_INT("--temperature-end", NULL, &o.explore.temperature_end, 0, 100000, "N",
			    "ply where the temperature has fallen linearly to --temperature-floor "
			    "(at most --temperature-moves: a step)", .given = &tend_given,
			    .def = "C4 30, Go the board size"),
		CLI_OPT_REAL("--temperature-floor", NULL, &o.explore.temperature_floor, 0, 10, "T",
			     "temperature after --temperature-end (0: the most visited move)",
			     .given = &tfloor_given, .def = "C4 0.3, Go 0"),
		CLI_OPT_REAL("--cpuct", NULL, &o.explore.cpuct, 0.01, 100, "C",
			     "self-play PUCT exploration constant", .given = &cpuct_given,
			     .def = "C4 2, Go 1.1"),
		CLI_OPT_REAL("--fpu", NULL, &o.explore.fpu_reduction, 0, 10, "F",
			     "self-play FPU reduction below the root"),
		CLI_OPT_REAL("--fpu-root", NULL, &o.explore.fpu_root, 0, 10, "F",
			     "FPU reduction at the root of cheap (noise-free) searches"),
		CLI_OPT_REAL("--fpu-root-noise", NULL, &o.explore.fpu_root_noise, 0, 10, "F",
			     "FPU reduction at the root of full searches, under Dirichlet noise"),
		CLI_OPT_REAL("--noise-alpha", NULL, &o.explore.noise_alpha_sum, 0.001, 1000, "A",
			     "Dirichlet alpha times the number of legal moves"),
		CLI_OPT_REAL("--noise-eps", NULL, &o.explore.noise_eps, 0, 1, "E",
			     "weight of the Dirichlet noise at the root"),
		CLI_OPT_REAL("--forced-playouts", NULL, &o.explore.forced_k, 0, 100, "K",
			     "KataGo's forced playouts in full searches: a root child of prior P "
			     "gets at least sqrt(K P N) of N visits, taken out of the policy target "
			     "and of the move's draw again (policy target pruning); KataGo uses 2; "
			     "0: off"),
		CLI_OPT_INT("--random-opening", NULL, &o.explore.random_opening, 0, 1000, "N",
			    "each self-play game opens with K uniformly random moves, K drawn "
			    "uniformly from 0..N, played without a search and not training "
			    "positions, so that self-play meets openings its network would never "
			    "choose; 0: off", .given = &ropen_given, .def = "C4 8, Go 0"),
		CLI_OPT_FLAG("--gumbel", NULL, &o.explore.gumbel,
			     "Gumbel root search in self-play (sequential halving over --gumbel-m "
			     "sampled moves; the improved policy as the target) instead of Dirichlet "
			     "noise and the temperature"),
		CLI_OPT_INT("--gumbel-m", NULL, &o.explore.gumbel_m, 1, 362, "M",
			    "moves the Gumbel root considers"),
		CLI_OPT_REAL("--value-q-weight", NULL, &o.value_q_weight, 0, 1, "L",
			     "value target (1-L) z + L q: z the game's result, q the search's root "
			     "value recorded for the position; 0: the result alone"),
		CLI_OPT_REAL("--value-lambda", NULL, &o.value_lambda, 0, 1, "X",
			     "z above becomes the lambda-return of the root values recorded after "
			     "the position (TD(lambda)): the searches a few moves on weigh more "
			     "than a result that later exploring moves decided; 1: the result"),
		CLI_OPT_FLAG("--value-cut", NULL, &o.value_cut,
			     "the return above stops at the first exploring move after the position "
			     "(one the temperature chose over the search's most visited): the "
			     "search's root value there stands for the rest of the game (Watkins' "
			     "Q(lambda))"),
		CLI_OPT_INT("--eval-visits", NULL, &o.eval_visits, 1, 100000, "V",
			    "search visits when measuring strength"),
		CLI_OPT_INT("--eval-positions", NULL, &o.eval_positions, 1, 100000, "N",
			    "positions per set for the search measurement"),
		CLI_OPT_INT("--seed", NULL, &o.seed, 0, 0x7fffffffL, "N", "seed of the first network"),
		CLI_OPT_INT("--gate-games", NULL, &o.gate_games, 0, 100000, "N",
			    "gating: a new network plays N games against the self-play network and "
			    "replaces it only if it scores at least --gate-threshold (0: always "
			    "replace it, as AlphaZero)"),
		CLI_OPT_REAL("--gate-threshold", NULL, &o.gate_threshold, 0, 1, "F",
			     "score needed to pass the gate"),
		CLI_OPT_INT("--gate-visits", NULL, &o.gate_visits, 1, 100000, "V",
			    "visits per move in gating games"),
		CLI_OPT_NN_BACKEND(&o.nn, "auto: the GPU when one is usable, sharing it between "
				   "the two phases", "auto, cpu or cuda: where self-play and training run"),
		CLI_OPT_NN_GPUS(&o.nn, "0", "GPUs for self-play (one evaluator each); training uses "
				"the first"),
		CLI_OPT_NN_PRECISION(&o.nn, "self-play int8 on a CPU with VNNI, else fp32; fp16 on "
				     "the GPU",
				     "fp32, fp16 (GPU), bf16, int8 (CPU self-play); the learner "
				     "takes it unless --train-precision is given (CPU: bf16, "
				     "else fp32)"),
		CLI_OPT_CALL("--train-precision", NULL, &o, parse_train_precision, "P",
			     "the learner's arithmetic: CPU fp32 or bf16 (bf16 operands for the "
			     "tower's convolutions, fp32 sums and master weights; needs AVX-512 "
			     "BF16, fast with AMX); GPU fp16, bf16 or fp32",
			     .def = "CPU bf16 with AMX, else fp32; GPU --precision's, else fp16"),
		CLI_OPT_FLAG("--quiet", "-q", &o.quiet, "fewer progress lines"),
	};
	const cli_spec spec = { .cmd = "run", .usage = "[options]", .about = run_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	gp = game_desc_by_kind(gp.kind)->defaults;
	if (game_desc_by_kind(gp.kind)->has_size)
		gp.size = (int)size;
	if (o.n_sizes > 0) {
		if (!game_desc_by_kind(gp.kind)->has_go_board)
			return cli_usage_error("run", "--sizes is for Go");
		/* The network's frame, and the defaults of its size. */
		gp.size = 0;
		for (int i = 0; i < o.n_sizes; i++)
			gp.size = o.sizes[i] > gp.size ? o.sizes[i] : gp.size;
	}
	if (game_desc_by_kind(gp.kind)->has_komi) {
		gp.komi = komi;
		if (komi * 2 != floor(komi * 2))
			return cli_usage_error("run", "--komi must be a multiple of 0.5");
	}
	const loop_options d = loop_options_default(&gp);
	o.game = gp;
	if (!dir_given)
		snprintf(o.dir, sizeof(o.dir), "%s", d.dir);
	if (!blocks_given)
		o.blocks = d.blocks;
	if (!channels_given)
		o.channels = d.channels;
	if (!par_given)
		o.parallel_games = d.parallel_games;
	if (!visits_given)
		o.visits = d.visits;
	if (!cheap_given)
		o.cheap_visits = d.cheap_visits;
	if (!window_given)
		o.window = d.window;
	if (!tmoves_given)
		o.explore.temperature_moves = d.explore.temperature_moves;
	if (!tend_given)
		o.explore.temperature_end = d.explore.temperature_end;
	if (!tfloor_given)
		o.explore.temperature_floor = d.explore.temperature_floor;
	if (!cpuct_given)
		o.explore.cpuct = d.explore.cpuct;
	if (!ropen_given)
		o.explore.random_opening = d.explore.random_opening;
	if (!carry_given)
		o.carry_games = d.carry_games;
	/* Drops without a schedule ask for the step schedule; the constant
	 * default would ignore them. */
	if (drops_given && !sched_given)
		o.lr_schedule = (int)TRAIN_LR_SCHEDULE_STEP;

	o.log = stderr;
	o.stop = &stop_flag;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	char err[8192];
	if (loop_run_main(&o, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente run: %s\n", err);
		return 1;
	}
	return 0;
}
