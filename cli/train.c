/* train.c: `sente train`: its options, then train_session_main
 * (train/session.h), a learner of its own on a run's database, alone or as
 * one data-parallel rank of several. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "train/session.h"

static const char train_help[] =
	"usage: sente train [options]\n"
	"\n"
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
	"statistics.\n"
	"\n"
	"options:\n"
	"  --dir DIR             the run's folder (default runs/connect4)\n"
	"  --steps N             stop after N steps (default 1000)\n"
	"  --minutes M           stop after M minutes (default: no limit)\n"
	"  --batch B             global batch, split evenly over the ranks (default 256)\n"
	"  --backend cpu|cuda    where to train (default cpu)\n"
	"  --gpus LIST           GPUs to train on, e.g. 0,1,2,3 (implies --backend cuda)\n"
	"  --precision P         CUDA arithmetic: fp16 (default), bf16 or fp32\n"
	"  --micro-batch N       CUDA: gradient accumulation over micro-batches of N\n"
	"                        (default: the whole share when it fits in memory)\n"
	"  --lr X                learning rate, SGD with Nesterov momentum (default 0.02)\n"
	"  --window N            positions sampled from (default C4 60000, Go 100000)\n"
	"  --export-steps N      model, checkpoint, metrics and window refill every N\n"
	"                        steps (default 100)\n"
	"  --threads N           oneDNN threads per rank (default: the runtime's choice)\n"
	"  --game connect4|go, --size N, --blocks B, --channels C, --seed N\n"
	"                        a new network, when DIR has no checkpoint (defaults as\n"
	"                        sente run: connect4, 9, 4, 48, 1)\n"
	"  --json                one JSON line per step on stdout (rank 0): samples/s,\n"
	"                        loss terms, seconds in data, compute and communication\n"
	"  -q, --quiet           fewer progress lines\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

/* Parses argv; false with *rc (2) on a usage error. Every rank parses the
 * same argv, so every rank takes the same decision. */
static bool parse_opts(int argc, char **argv, train_session_options *o, int *rc)
{
	long n, size = 9;
	double d;
	*o = train_session_options_default();
	o->blocks = -1;
	o->channels = -1;
	*rc = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(s) (!strcmp(a, s) && v && (i++, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) || (cli_usage_error("train", "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) ((cli_parse_double(v, &d) && d >= (lo) && d <= (hi)) || (cli_usage_error("train", "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
		if (FLAG("--dir")) {
			o->dir = v;
		} else if (FLAG("--steps")) {
			if (!INT(1, 1000000000L)) return false;
			o->steps = n;
		} else if (FLAG("--minutes")) {
			if (!REAL(0.001, 1e7)) return false;
			o->minutes = d;
		} else if (FLAG("--batch")) {
			if (!INT(2, 65536)) return false;
			o->batch = (int)n;
		} else if (FLAG("--backend")) {
			if (!strcmp(v, "cpu")) {
				o->learner = &learner_cpu;
			} else if (!strcmp(v, "cuda")) {
				o->learner = &learner_cuda;
			} else {
				cli_usage_error("train", "--backend takes cpu or cuda, got '%s'", v);
				return false;
			}
		} else if (FLAG("--gpus")) {
			const char *p = v;
			o->n_gpus = 0;
			while (*p) {
				char *end;
				long g = strtol(p, &end, 10);
				if (end == p || g < 0 || g > 1023 || (*end && *end != ',') ||
				    o->n_gpus == NN_MAX_GPUS) {
					cli_usage_error("train", "--gpus takes up to %d device numbers "
							"separated by commas (e.g. 0,1,2,3), got '%s'",
							NN_MAX_GPUS, v);
					return false;
				}
				o->gpus[o->n_gpus++] = (int)g;
				p = *end ? end + 1 : end;
			}
			o->learner = &learner_cuda;
		} else if (FLAG("--precision")) {
			if (!learner_precision_from_name(v, &o->precision)) {
				cli_usage_error("train", "--precision takes fp32, fp16 or bf16, got '%s'", v);
				return false;
			}
		} else if (FLAG("--micro-batch")) {
			if (!INT(1, 65536)) return false;
			o->micro_batch = (int)n;
		} else if (FLAG("--lr")) {
			if (!REAL(1e-6, 10)) return false;
			o->lr = d;
		} else if (FLAG("--window")) {
			if (!INT(100, 1000000000L)) return false;
			o->window = n;
		} else if (FLAG("--export-steps")) {
			if (!INT(1, 100000000L)) return false;
			o->export_steps = (int)n;
		} else if (FLAG("--threads")) {
			if (!INT(1, 1024)) return false;
			o->threads = (int)n;
		} else if (FLAG("--game")) {
			if (!game_kind_from_name(v, &o->game.kind)) {
				cli_usage_error("train", "unknown game '%s' (go or connect4)", v);
				return false;
			}
		} else if (FLAG("--size")) {
			if (!INT(GO_MIN_SIZE, GO_MAX_SIZE)) return false;
			size = n;
		} else if (FLAG("--blocks")) {
			if (!INT(1, 40)) return false;
			o->blocks = (int)n;
		} else if (FLAG("--channels")) {
			if (!INT(4, 512)) return false;
			o->channels = (int)n;
		} else if (FLAG("--seed")) {
			if (!INT(0, 0x7fffffffL)) return false;
			o->seed = (uint64_t)n;
		} else if (!strcmp(a, "--json")) {
			o->json = stdout;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else {
			cli_usage_error("train", "unknown or incomplete option '%s'", a);
			return false;
		}
#undef FLAG
#undef INT
#undef REAL
	}
	if (o->game.kind == GAME_KIND_GO) {
		o->game.size = (int)size;
		o->game.komi = 7.5;
	}
	bool small = o->game.kind == GAME_KIND_CONNECT4 || o->game.size <= 9;
	if (o->blocks < 0)
		o->blocks = small ? 4 : 6;
	if (o->channels < 0)
		o->channels = small ? 48 : 64;
	*rc = 0;
	return true;
}

int cli_train(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(train_help, stdout);
		return 0;
	}
	train_session_options o;
	int rc;
	if (!parse_opts(argc, argv, &o, &rc))
		return rc;
	o.log = stderr;
	o.stop = &stop_flag;
	/* mpirun passes Ctrl-C to every rank: all must survive it until rank
	 * 0, which alone looks at the flag, stops them at a step boundary. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return train_session_main(&o, argc, argv);
}
