/* train.c: `sente train`, a learner of its own on a run's database: the
 * window of recent positions from DIR/sente.db, models exported into
 * DIR/models and registered, DIR/checkpoints/learner.ckpt. Under mpirun it
 * is one data-parallel rank of several (train/comm.h): rank 0 alone reads
 * the database and writes files and metrics; the other ranks get the games
 * from it by broadcast, so they need no access to DIR. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/model_dir.h"
#include "data/store.h"
#include "nn/backend.h"
#include "nn/cuda/cuda.h"
#include "train/comm.h"
#include "train/launch.h"
#include "train/learner.h"

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

typedef struct train_opts {
	char dir[2048];        /* the run's folder */
	int64_t steps;         /* steps of this session */
	double minutes;        /* time limit; 0 none */
	int batch;             /* global batch */
	double lr;             /* SGD learning rate */
	int64_t window;        /* positions; 0: by game */
	int export_steps;      /* steps between exports */
	int threads;           /* oneDNN threads per rank */
	game_params game;      /* a new network's game */
	int blocks, channels;  /* a new network's shape */
	uint64_t seed;         /* a new network's seed, and the trainer's */
	bool json, quiet;      /* output */
	learner_backend backend;     /* --backend */
	learner_precision precision; /* --precision (CUDA) */
	int micro_batch;       /* --micro-batch (CUDA); 0 automatic */
	int gpus[NN_MAX_GPUS]; /* --gpus */
	int n_gpus;            /* entries of gpus; 0: device 0 */
	int device;            /* this process's GPU */
} train_opts;

/* Parses argv; false with *rc (2) on a usage error. Every rank parses the
 * same argv, so every rank takes the same decision. */
static bool parse_opts(int argc, char **argv, train_opts *o, int *rc)
{
	long n, size = 9;
	double d;
	memset(o, 0, sizeof(*o));
	snprintf(o->dir, sizeof(o->dir), "runs/connect4");
	o->steps = 1000;
	o->batch = 256;
	o->lr = 0.02;
	o->export_steps = 100;
	o->game = game_params_default(GAME_KIND_CONNECT4);
	o->blocks = -1;
	o->channels = -1;
	o->seed = 1;
	o->precision = LEARNER_FP16;
	*rc = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(s) (!strcmp(a, s) && v && (i++, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) || (cli_usage_error("train", "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) ((cli_parse_double(v, &d) && d >= (lo) && d <= (hi)) || (cli_usage_error("train", "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
		if (FLAG("--dir")) {
			snprintf(o->dir, sizeof(o->dir), "%s", v);
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
				o->backend = LEARNER_CPU;
			} else if (!strcmp(v, "cuda")) {
				o->backend = LEARNER_CUDA;
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
			o->backend = LEARNER_CUDA;
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
			o->json = true;
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

/* ---- the window, read by rank 0 and broadcast ---------------------------- */

/* Encoded records, newest first as the store delivers them. */
typedef struct game_pack {
	uint8_t *buf;      /* u32 length + blob, repeated */
	size_t len, cap;   /* bytes used, allocated */
	int64_t last_id;   /* newest game id seen */
	int games;         /* records packed */
} game_pack;

static int pack_game(void *ctx, int64_t game_id, const game_record *r)
{
	game_pack *p = ctx;
	uint8_t *blob = NULL;
	size_t len = 0;
	if (record_encode(r, &blob, &len) != 0)
		return 0; /* skipped, as a corrupt row is */
	if (p->len + 4 + len > p->cap) {
		size_t cap = p->cap ? p->cap : 1 << 20;
		while (cap < p->len + 4 + len)
			cap *= 2;
		uint8_t *b = realloc(p->buf, cap);
		if (!b) {
			free(blob);
			return 1;
		}
		p->buf = b;
		p->cap = cap;
	}
	uint32_t l32 = (uint32_t)len;
	memcpy(p->buf + p->len, &l32, 4);
	memcpy(p->buf + p->len + 4, blob, len);
	p->len += 4 + len;
	p->games++;
	if (game_id > p->last_id)
		p->last_id = game_id;
	free(blob);
	return 0;
}

/* Rank 0 reads the games with id > *last_id (up to the window's worth)
 * and every rank adds the same records, oldest first, to its window.
 * 0, or -1 with a message (the same outcome on every rank). */
static int refill_window(comm *c, store *db, int64_t window, int64_t *last_id, learner *L,
			 int *added, char *err, size_t errlen)
{
	game_pack p = { .last_id = *last_id };
	uint64_t hdr[2] = { 0, 0 }; /* bytes, ok */
	int rc = -1;
	*added = 0;
	if (comm_rank(c) == 0) {
		int n = store_recent_games(db, window, *last_id, pack_game, &p, err, errlen);
		hdr[0] = p.len;
		hdr[1] = n >= 0;
	}
	if (comm_broadcast(c, hdr, sizeof(hdr), 0) != 0) {
		snprintf(err, errlen, "%s", comm_error(c));
		goto out;
	}
	if (!hdr[1]) {
		/* Every rank: the caller's exit is a shared one. */
		if (comm_rank(c) != 0)
			snprintf(err, errlen, "rank 0 could not read the games");
		*added = -1;
		goto out;
	}
	if (comm_rank(c) != 0 && hdr[0]) {
		p.buf = malloc(hdr[0]);
		p.len = hdr[0];
		if (!p.buf) {
			/* This rank alone: the caller aborts the job. */
			snprintf(err, errlen, "out of memory for %llu bytes of games",
				 (unsigned long long)hdr[0]);
			goto out;
		}
	}
	if (hdr[0] && comm_broadcast(c, p.buf, hdr[0], 0) != 0) {
		snprintf(err, errlen, "%s", comm_error(c));
		goto out;
	}
	/* The store delivers newest first; the window wants oldest first:
	 * index the packed records, then add them in reverse. */
	size_t count = 0;
	for (size_t off = 0; off + 4 <= p.len; count++) {
		uint32_t l;
		memcpy(&l, p.buf + off, 4);
		off += 4 + l;
	}
	size_t *at = malloc((count ? count : 1) * sizeof(*at));
	if (!at) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	count = 0;
	for (size_t off = 0; off + 4 <= p.len; count++) {
		uint32_t l;
		memcpy(&l, p.buf + off, 4);
		at[count] = off;
		off += 4 + l;
	}
	for (size_t i = count; i-- > 0;) {
		uint32_t l;
		game_record r;
		char why[128];
		memcpy(&l, p.buf + at[i], 4);
		if (record_decode(p.buf + at[i] + 4, l, &r, why, sizeof(why)) != 0)
			continue;
		if (learner_add_game(L, &r) == 0)
			(*added)++;
		record_free(&r);
	}
	free(at);
	if (comm_broadcast(c, &p.last_id, sizeof(p.last_id), 0) != 0) {
		snprintf(err, errlen, "%s", comm_error(c));
		goto out;
	}
	*last_id = p.last_id;
	rc = 0;
out:
	free(p.buf);
	return rc;
}

/* ---- the learner ------------------------------------------------------- */

/* Rank 0's set-up, broadcast to the others: the network's architecture and
 * whether rank 0 got that far. */
typedef struct setup_msg {
	int32_t ok;        /* 0: rank 0 failed, everyone stops */
	int32_t resumed;   /* 1: from the checkpoint */
	nn_arch arch;      /* the network */
} setup_msg;

static double now_s(void)
{
	return cli_now();
}

int cli_train(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(train_help, stdout);
		return 0;
	}
	train_opts o;
	int rc;
	if (!parse_opts(argc, argv, &o, &rc))
		return rc;
	rc = 1;
	char err[8192], ckpt[8192];
	comm *c = NULL;
	store *db = NULL;
	nn_net *net = NULL;
	learner *L = NULL;
	setup_msg msg;
	memset(&msg, 0, sizeof(msg));
	/* Set where every rank leaves together; other failures are this
	 * rank's alone and abort the job rather than leave the others
	 * waiting in a collective. */
	bool together = false;

	/* Processes: one per GPU. Several GPUs without mpirun: this process
	 * launches the ranks (train/launch.h) and waits; a launched rank
	 * talks NCCL only, its host traffic staged through the device. Under
	 * mpirun, MPI carries the host traffic and the NCCL id. */
	comm *nccl = NULL;
	int child = 0, c_rank = 0, c_world = 1, c_dev = 0;
	char nid[COMM_NCCL_ID_HEX] = "";
	if (o.backend == LEARNER_CUDA) {
		child = launch_child_env(&c_rank, &c_world, &c_dev, nid, err, sizeof(err));
		if (child < 0) {
			fprintf(stderr, "sente train: %s\n", err);
			return 1;
		}
		if (child == 0 && !comm_launched_by_mpi() && o.n_gpus > 1) {
			int have = nn_cuda_device_count();
			for (int i = 0; i < o.n_gpus; i++)
				if (o.gpus[i] >= have) {
					fprintf(stderr, "sente train: --gpus names GPU %d, but %d CUDA "
						"device%s visible%s\n", o.gpus[i], have,
						have == 1 ? " is" : "s are",
						nn_cuda_built() ? "" : " (this sente was built without CUDA)");
					return 1;
				}
			for (int i = 0; i < o.n_gpus; i++)
				for (int j = 0; j < i; j++)
					if (o.gpus[i] == o.gpus[j]) {
						cli_usage_error("train", "--gpus lists GPU %d twice", o.gpus[i]);
						return 2;
					}
			if (comm_nccl_unique_id(nid, err, sizeof(err)) != 0) {
				fprintf(stderr, "sente train: %s\n", err);
				return 1;
			}
			char **full = calloc((size_t)argc + 2, sizeof(*full));
			if (!full)
				return 1;
			full[0] = "sente";
			for (int i = 0; i < argc; i++)
				full[i + 1] = argv[i];
			launch_opts lopt = { .nccl_id = nid };
			if (!o.quiet)
				fprintf(stderr, "sente train: starting %d ranks, one per GPU\n", o.n_gpus);
			int lr = launch_ranks("/proc/self/exe", full, o.gpus, o.n_gpus, &lopt, err,
					      sizeof(err));
			free(full);
			if (lr != 0) {
				fprintf(stderr, "sente train: %s\n", err);
				return 1;
			}
			return 0;
		}
	}
	if (child == 1) {
		nccl = comm_new_nccl_from_id(c_rank, c_world, nid, c_dev, err, sizeof(err));
		c = nccl ? comm_new_nccl_host(nccl, err, sizeof(err)) : NULL;
		o.device = c_dev;
	} else {
		c = comm_new_world(err, sizeof(err));
	}
	if (!c) {
		fprintf(stderr, "sente train: %s\n", err);
		comm_free(nccl);
		return 1;
	}
	int rank = comm_rank(c), K = comm_size(c);
	bool lead = rank == 0;
	if (o.backend == LEARNER_CUDA && child == 0) {
		if (K > 1) {
			if (gpu_for_local_rank(o.gpus, o.n_gpus, &o.device, err, sizeof(err)) != 0 ||
			    !(nccl = comm_new_nccl(c, o.device, err, sizeof(err)))) {
				fprintf(stderr, "sente train: rank %d: %s\n", rank, err);
				goto out;
			}
		} else {
			o.device = o.n_gpus ? o.gpus[0] : 0;
		}
	}
	together = true;
	if (o.batch % K != 0) {
		if (lead)
			cli_usage_error("train", "--batch %d does not split evenly over %d ranks", o.batch,
					K);
		rc = 2;
		goto out;
	}
	int share = o.batch / K;
	if (share < 2) {
		if (lead)
			cli_usage_error("train", "--batch %d over %d ranks leaves %d position%s per rank; "
					"batch norm needs at least 2", o.batch, K, share,
					share == 1 ? "" : "s");
		rc = 2;
		goto out;
	}
	snprintf(ckpt, sizeof(ckpt), "%s/checkpoints/learner.ckpt", o.dir);
	together = false;

	/* Rank 0: the database, the network (checkpoint or new). */
	if (lead) {
		db = cli_open_run(o.dir, ckpt, sizeof(ckpt), err, sizeof(err));
		if (!db) {
			fprintf(stderr, "sente train: %s\n", err);
			goto announce;
		}
		bool resumed;
		net = cli_learner_net(ckpt, &o.game, o.blocks, o.channels, o.seed, &resumed, err,
				      sizeof(err));
		msg.resumed = resumed;
		if (!net) {
			fprintf(stderr, "sente train: %s\n", err);
			goto announce;
		}
		msg.arch = net->arch;
		msg.ok = 1;
	}
announce:
	if (comm_broadcast(c, &msg, sizeof(msg), 0) != 0) {
		fprintf(stderr, "sente train: rank %d: %s\n", rank, comm_error(c));
		goto out;
	}
	together = true;
	if (!msg.ok)
		goto out;
	together = false;
	if (!lead) {
		/* Weights come from rank 0 with the rest of the state. */
		net = nn_net_new(&msg.arch, err, sizeof(err));
		if (!net) {
			fprintf(stderr, "sente train: rank %d: %s\n", rank, err);
			goto out;
		}
	}

	bool c4 = msg.arch.game == GAME_KIND_CONNECT4;
	learner_options lo = learner_options_default();
	lo.train.batch = share;
	lo.train.lr = o.lr;
	lo.train.seed = o.seed;
	lo.train.threads = o.threads;
	lo.window = o.window > 0 ? o.window : c4 ? 60000 : 100000;
	lo.backend = o.backend;
	lo.device = o.device;
	lo.precision = o.precision;
	lo.micro_batch = o.micro_batch;
	L = learner_new(net, &lo, err, sizeof(err));
	int ok = L != NULL;
	if (!ok) {
		if (K > 1)
			fprintf(stderr, "sente train: rank %d: ", rank);
		else
			fprintf(stderr, "sente train: ");
		fprintf(stderr, "%s learner: %s%s\n", o.backend == LEARNER_CUDA ? "the GPU" : "the",
			err, o.backend == LEARNER_CUDA ? " (--backend cpu trains on the CPU)" : "");
	} else if (lead && msg.resumed && learner_checkpoint_load(L, ckpt, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente train: %s\n", err);
		ok = 0;
	}
	/* Every rank learns whether every rank is ready (a sum of flags). */
	float ready = (float)ok;
	if (comm_allreduce(c, &ready, 1, COMM_OP_SUM) != 0)
		goto out;
	if (ready != (float)K) {
		together = true;
		goto out;
	}
	learner_set_comm(L, o.backend == LEARNER_CUDA ? nccl : c);
	if (learner_broadcast(L, 0) != 0) {
		fprintf(stderr, "sente train: rank %d: %s\n", rank, learner_error(L));
		goto out;
	}
	int64_t model_id = 0;
	if (lead) {
		int64_t step0;
		char file[4096];
		int have = store_latest_model(db, &model_id, file, sizeof(file), &step0);
		if (have != 1) {
			model_id = cli_export_model(db, learner_net(L), learner_steps(L), o.dir, 0,
						    "sente train", err, sizeof(err));
			if (model_id < 0)
				fprintf(stderr, "sente train: %s\n", err);
		}
		int ck_world = learner_checkpoint_world(L);
		if (msg.resumed && ck_world != K)
			fprintf(stderr, "sente train: the checkpoint was written by %d rank%s, resuming on "
				"%d (global batch %d = %d x %d; batch norm and the gradient are the "
				"global batch's, so the steps are the same)\n",
				ck_world, ck_world == 1 ? "" : "s", K, o.batch, K, share);
	}

	/* The window. */
	int64_t window = lo.window;
	int64_t last_id = 0;
	int added = 0;
	if (refill_window(c, db, window, &last_id, L, &added, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente train: rank %d: reading the games: %s\n", rank, err);
		together = added == -1;
		goto out;
	}
	if (learner_positions(L) < o.batch) {
		together = true; /* every rank holds the same window */
		if (lead)
			fprintf(stderr, "sente train: %s holds %lld recorded positions, fewer than the "
				"batch of %d: play games first (sente selfplay --db %s/sente.db, or "
				"sente run)\n", o.dir, (long long)learner_positions(L), o.batch,
				o.dir);
		goto out;
	}
	if (lead && !o.quiet)
		fprintf(stderr, "sente train: %s in %s, network %dx%d, %s at step %lld; %d rank%s (%s), "
			"%s, batch %d (%d per rank), window %lld positions\n",
			game_kind_name(msg.arch.game), o.dir, msg.arch.blocks, msg.arch.channels,
			msg.resumed ? "resumed" : "new", (long long)learner_steps(L), K,
			K == 1 ? "" : "s", comm_name(c), learner_describe(L), o.batch, share,
			(long long)learner_positions(L));

	/* mpirun passes Ctrl-C to every rank: all must survive it until rank
	 * 0, which alone looks at the flag, stops them at a step boundary. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	bool failed = false; /* rank 0 could not write */
	double t_start = now_s(), t_end = o.minutes > 0 ? t_start + o.minutes * 60 : 0;
	double last_print = t_start;
	double sums[7] = { 0 }; /* loss, policy, value, grad norm, data, compute, comm */
	int since = 0;
	train_stats ts = { 0 };
	for (int64_t s = 0;; s++) {
		/* Rank 0 decides whether to go on; everyone hears it. */
		int32_t go = s < o.steps && !stop_flag && !(t_end > 0 && now_s() >= t_end);
		if (comm_broadcast(c, &go, sizeof(go), 0) != 0) {
			fprintf(stderr, "sente train: rank %d: %s\n", rank, comm_error(c));
			goto out;
		}
		bool last = !go;
		if (go) {
			double t0 = now_s();
			if (learner_step(L, o.batch, rank * share, &ts) != 0) {
				fprintf(stderr, "sente train: rank %d: step failed: %s\n", rank, learner_error(L));
				goto out;
			}
			double t2 = now_s();
			double data_s = ts.data_seconds, comm_s = ts.comm_seconds, compute_s = ts.compute_seconds;
			double vals[7] = { ts.loss, ts.policy_loss, ts.value_loss, ts.grad_norm, data_s,
					   compute_s, comm_s };
			for (int k = 0; k < 7; k++)
				sums[k] += vals[k];
			since++;
			if (lead && o.json) {
				printf("{\"step\":%lld,\"ranks\":%d,\"batch\":%d,\"samples_per_s\":%.1f,"
				       "\"loss\":%.5f,\"policy_loss\":%.5f,\"value_loss\":%.5f,"
				       "\"grad_norm\":%.4f,\"lr\":%.6g,\"data_s\":%.5f,\"compute_s\":%.5f,"
				       "\"comm_s\":%.5f,\"loss_scale\":%g,\"skipped_steps\":%lld}\n",
				       (long long)ts.step, K, o.batch, o.batch / (t2 - t0), ts.loss,
				       ts.policy_loss, ts.value_loss, ts.grad_norm, ts.lr, data_s, compute_s,
				       comm_s, ts.loss_scale, (long long)ts.skipped_steps);
				fflush(stdout);
			}
			if (lead && !o.quiet && !o.json && now_s() - last_print >= 10) {
				double tot = sums[4] + sums[5] + sums[6];
				fprintf(stderr, "sente train: step %lld, loss %.3f (policy %.3f, value %.3f), "
					"%.0f samples/s; data %.0f%%, compute %.0f%%, communication %.0f%%\n",
					(long long)ts.step, ts.loss, ts.policy_loss, ts.value_loss,
					since * o.batch / tot, 100 * sums[4] / tot, 100 * sums[5] / tot,
					100 * sums[6] / tot);
				last_print = now_s();
			}
		}
		bool export_now = since > 0 && (last || since >= o.export_steps);
		if (!export_now) {
			if (last)
				break;
			continue;
		}
		/* Rank 0 writes; then everyone takes the new games. */
		int64_t step = learner_steps(L);
		if (lead) {
			double tot = sums[4] + sums[5] + sums[6];
			const char *names[] = { "loss", "policy_loss", "value_loss", "grad_norm", "lr",
						"train_samples_per_s", "train_data_seconds",
						"train_compute_seconds", "train_comm_seconds", "train_ranks",
						"train_loss_scale", "train_skipped_steps" };
			double vals[] = { sums[0] / since, sums[1] / since, sums[2] / since, sums[3] / since,
					  ts.lr, since * o.batch / tot, sums[4], sums[5], sums[6], K,
					  ts.loss_scale, (double)ts.skipped_steps };
			store_add_metrics(db, step, names, vals, 12);
			int64_t id = cli_export_model(db, learner_net(L), step, o.dir, model_id, "sente train",
						      err, sizeof(err));
			if (id < 0 || learner_checkpoint_save(L, ckpt, err, sizeof(err)) != 0) {
				fprintf(stderr, "sente train: %s\n", err);
				stop_flag = 1; /* the others hear it at the next step */
				failed = true;
			} else {
				model_id = id;
			}
			if (!o.quiet)
				fprintf(stderr, "sente train: step %lld: model %lld, loss %.3f (policy %.3f, "
					"value %.3f), %.0f samples/s over %d rank%s; data %.0f%%, compute "
					"%.0f%%, communication %.0f%%\n", (long long)step, (long long)model_id,
					vals[0], vals[1], vals[2], vals[5], K, K == 1 ? "" : "s",
					100 * sums[4] / tot, 100 * sums[5] / tot, 100 * sums[6] / tot);
		}
		memset(sums, 0, sizeof(sums));
		since = 0;
		if (last)
			break;
		if (refill_window(c, db, window, &last_id, L, &added, err, sizeof(err)) != 0) {
			fprintf(stderr, "sente train: rank %d: reading the games: %s\n", rank, err);
			together = added == -1;
			goto out;
		}
	}
	if (lead)
		fprintf(stderr, "sente train: %s at step %lld; checkpoint %s\n",
			failed ? "failed" : stop_flag ? "stopped" : "done", (long long)learner_steps(L),
			ckpt);
	rc = failed ? 1 : 0;
	together = true;
out:
	if (rc != 0 && !together && c && comm_size(c) > 1)
		comm_abort(c, rc);
	learner_free(L);
	nn_net_free(net);
	store_close(db);
	comm_free(c);
	if (nccl != c)
		comm_free(nccl);
	return rc;
}
