/* train.c: `sente train`: its options, then train_session_main
 * (train/session.h), a learner of its own on a run's database, alone or as
 * one data-parallel rank of several. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/game_desc.h"
#include "train/session.h"

static const char train_about[] =
	"Trains a run's network on the games in DIR/sente.db, as a learner of its\n"
	"own (while `sente selfplay --db DIR/sente.db` processes add games): it\n"
	"samples batches from a window of the most recent positions, exports a\n"
	"model into DIR/models (registered in the database) and writes\n"
	"DIR/checkpoints/learner.ckpt every --export-steps steps and at the end,\n"
	"and refills the window with the games added since. It resumes from the\n"
	"checkpoint; without one it starts a new network.\n"
	"\n"
	"Several processes: `mpirun -np K sente train ...` runs K data-parallel\n"
	"ranks. Each computes the gradient of 1/K of the batch, batch norm uses\n"
	"the whole batch's statistics, the gradients are averaged (MPI\n"
	"all-reduce) and every rank applies the same update: the steps are those\n"
	"of one process on the whole batch. Rank 0 alone reads the database and\n"
	"writes models, checkpoints and metrics. A checkpoint records how many\n"
	"ranks wrote it; resuming on another number works and says so.\n"
	"\n"
	"On a GPU (--backend cuda): the window lives in device memory, batches\n"
	"are drawn with cuRAND and expanded and augmented on the device, and the\n"
	"network trains in fp16 (default), bf16 or fp32 with fp32 master weights\n"
	"(fp16: dynamic loss scaling; an overflowing step is skipped and counted).\n"
	"--gpus 0,1,2,3 starts one process per GPU (NCCL all-reduce of the\n"
	"gradients, bucketed and overlapped with the backward pass); under mpirun\n"
	"each rank takes --gpus[local rank]. Batch norm then uses each rank's own\n"
	"statistics.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

/* --backend cpu|cuda into a const learner_ops * (ptr). */
static int parse_backend(const cli_opt *opt, const char *v, char *err, size_t errlen)
{
	const learner_ops *l = learner_by_name(v);
	if (!l) {
		snprintf(err, errlen, "--backend takes cpu or cuda, got '%s'", v);
		return -1;
	}
	*(const learner_ops **)opt->ptr = l;
	return 0;
}

/* --gpus LIST into the session's GPUs (ptr); it implies the CUDA learner. */
static int parse_gpus(const cli_opt *opt, const char *v, char *err, size_t errlen)
{
	train_session_options *o = opt->ptr;
	const char *p = v;
	o->n_gpus = 0;
	while (*p) {
		char *end;
		long g = strtol(p, &end, 10);
		if (end == p || g < 0 || g > 1023 || (*end && *end != ',') || o->n_gpus == NN_MAX_GPUS) {
			snprintf(err, errlen, "--gpus takes up to %d device numbers separated by commas "
				 "(e.g. 0,1,2,3), got '%s'", NN_MAX_GPUS, v);
			return -1;
		}
		o->gpus[o->n_gpus++] = (int)g;
		p = *end ? end + 1 : end;
	}
	o->learner = &learner_cuda;
	return 0;
}

/* In nn_dtype's order, which the choice's index is. */
static const char *const precisions[] = { "fp32", "fp16", "bf16", NULL };

int cli_train(int argc, char **argv)
{
	train_session_options o = train_session_options_default();
	long size = 9;
	bool json = false, blocks_given = false, channels_given = false, precision_given = false;
	const cli_opt opts[] = {
		CLI_OPT_STRING("--dir", NULL, &o.dir, "DIR", "the run's folder"),
		CLI_OPT_INT("--steps", NULL, &o.steps, 1, 1000000000L, "N", "stop after N steps"),
		CLI_OPT_REAL("--minutes", NULL, &o.minutes, 0.001, 1e7, "M", "stop after M minutes",
			     .def = "no limit"),
		CLI_OPT_INT("--batch", NULL, &o.batch, 2, 65536, "B",
			    "global batch, split evenly over the ranks"),
		CLI_OPT_CALL("--backend", NULL, &o.learner, parse_backend, "cpu|cuda", "where to train",
			     .def = "cpu"),
		CLI_OPT_CALL("--gpus", NULL, &o, parse_gpus, "LIST",
			     "GPUs to train on, e.g. 0,1,2,3 (implies --backend cuda)"),
		CLI_OPT_CHOICE("--precision", NULL, &o.precision, precisions, "P",
			       "the learner's arithmetic: CUDA fp16 (the default), bf16 or fp32; "
			       "the CPU bf16 (bf16 operands for the tower's convolutions, fp32 "
			       "sums and master weights; needs AVX-512 BF16, fast with AMX) or "
			       "fp32 (the default there)",
			       .given = &precision_given),
		CLI_OPT_INT("--micro-batch", NULL, &o.micro_batch, 1, 65536, "N",
			    "CUDA: gradient accumulation over micro-batches of N",
			    .def = "the whole share when it fits in memory"),
		CLI_OPT_REAL("--lr", NULL, &o.lr, 1e-6, 10, "X",
			     "learning rate, SGD with Nesterov momentum"),
		CLI_OPT_HEAD_WEIGHTS(&o.opp_weight, &o.own_weight, &o.score_weight,
				     "1.5 for a network with the head, else 0"),
		CLI_OPT_REAL("--value-q-weight", NULL, &o.value_q_weight, 0, 1, "L",
			     "value target (1-L) z + L q: z the game's result, q the search's root "
			     "value recorded for the position"),
		CLI_OPT_REAL("--value-lambda", NULL, &o.value_lambda, 0, 1, "X",
			     "z above becomes the lambda-return of the root values recorded after "
			     "the position (TD(lambda)); 1: the result"),
		CLI_OPT_FLAG("--value-cut", NULL, &o.value_cut,
			     "the return above stops at the first exploring move after the position: "
			     "the search's root value there stands for the rest of the game"),
		CLI_OPT_INT("--window", NULL, &o.window, 100, 1000000000L, "N",
			    "positions sampled from", .def = "C4 150000, Go 100000"),
		CLI_OPT_INT("--export-steps", NULL, &o.export_steps, 1, 100000000L, "N",
			    "model, checkpoint, metrics and window refill every N steps"),
		CLI_OPT_INT("--threads", NULL, &o.threads, 1, 1024, "N", "oneDNN threads per rank",
			    .def = "the runtime's choice"),
		CLI_OPT_CALL("--game", NULL, &o.game.kind, cli_opt_game, "go|connect4",
			     "a new network's game, when DIR has no checkpoint", .def = "connect4"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N",
			    "a new Go network's board"),
		CLI_OPT_INT("--blocks", NULL, &o.blocks, 1, 40, "B", "a new network's residual blocks",
			    .given = &blocks_given, .def = "4 on Connect Four and 9x9 Go, else 6"),
		CLI_OPT_INT("--channels", NULL, &o.channels, 4, 512, "C", "a new network's channels",
			    .given = &channels_given, .def = "48 on Connect Four and 9x9 Go, else 64"),
		CLI_OPT_SE_CHANNELS(&o.se_channels),
		CLI_OPT_INT("--seed", NULL, &o.seed, 0, 0x7fffffffL, "N",
			    "a new network's seed, and the trainer's"),
		CLI_OPT_FLAG("--json", NULL, &json,
			     "one JSON line per step on stdout (rank 0): samples/s, loss terms, "
			     "seconds in data, compute and communication"),
		CLI_OPT_FLAG("--quiet", "-q", &o.quiet, "fewer progress lines"),
	};
	const cli_spec spec = { .cmd = "train", .usage = "[options]", .about = train_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	/* Every rank parses the same argv, so every rank takes the same
	 * decision. */
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (precision_given && o.learner == &learner_cpu && o.precision == NN_DTYPE_FP16)
		return cli_usage_error("train", "--precision fp16 is for the GPU learner; the CPU "
				       "learner trains in fp32 or bf16");
	const game_desc *desc = game_desc_by_kind(o.game.kind);
	o.game = desc->defaults;
	if (desc->has_size)
		o.game.size = (int)size;
	game_run_defaults d = game_run_defaults_of(&o.game);
	if (!blocks_given)
		o.blocks = d.blocks;
	if (!channels_given)
		o.channels = d.channels;
	o.json = json ? stdout : NULL;
	o.log = stderr;
	o.stop = &stop_flag;
	/* mpirun passes Ctrl-C to every rank: all must survive it until rank
	 * 0, which alone looks at the flag, stops them at a step boundary. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return train_session_main(&o, argc, argv);
}
