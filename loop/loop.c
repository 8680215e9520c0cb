/* loop.c: the AlphaZero loop's phases (loop.h). */
#include "loop/loop.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/clock.h"
#include "engine/fileio.h"
#include "engine/game_desc.h"
#include "loop/measure.h"
#include "loop/report.h"
#include "nn/cuda/cuda.h"
#include "selfplay/selfplay.h"
#include "selfplay/strength.h"
#include "train/learner.h"
#include "train/replay.h"
#include "train/rundir.h"

struct loop {
	loop_options o;         /* as opened */
	rundir *rd;             /* it, open and locked */
	store *db;              /* its database (rd->db) */
	learner *L;             /* the learner and its window */
	nn_net *net;            /* the network the learner was made from */
	selfplay *sp;           /* the workers */
	nn_cuda_monitor *gpu;   /* the run's CUDA devices' use, or NULL */
	c4bench bench;          /* Connect Four positions, when found */
	bool have_bench;        /* bench loaded */
	bool resumed;           /* from a checkpoint */
	int64_t model_id;       /* the newest model */
	int64_t play_id;        /* the model self-play uses */
	double per_game;        /* recorded positions per game, a running estimate */
	bool fixed_window;      /* the learner refused to narrow its window */
	bool no_bn_recompute;   /* the learner refused to recompute BN statistics */
	int iteration;          /* iterations finished in this session */
	store_compute spent;    /* the run's compute so far, over its sessions */
	double t_end;           /* clock_now() when the session must end (`minutes` of wall
				 * time from loop_open, the closing work included) */
	double measure_s[2];    /* seconds the last whole Connect Four measurement took,
				 * network alone [0], network and search [1]; 0: not seen */
	double measure_first_s; /* the same for Go's games against the first network */
	double measure_total_s; /* seconds measuring in this session */
	double gate_s;          /* seconds the last gating match took; 0: none yet */
	int64_t measured_step;  /* the learner's step last measured with the search (whole or
				 * cut at the deadline) in this session; -1 none */
	progress prog;          /* the progress line on o.log (not when quiet) */
	/* The self-play phase's game callback: */
	int64_t it_positions;   /* recorded positions this iteration */
	int64_t it_games;       /* games this iteration */
	double it_entropy;      /* summed policy entropy of their full searches */
	int64_t it_entropy_n;   /* full searches summed */
	int failures;           /* store writes that failed */
	/* Finished games the store could not take yet (another process held
	 * its write lock): already in the window, stored as soon as it can,
	 * and kept in DIR/pending-games when the session ends first. */
	game_record *pending;   /* oldest first */
	int64_t *pending_model; /* the model each was played with */
	int n_pending, cap_pending;
};

/* How long self-play's writes wait for another process's lock: short, so
 * games queue instead of stalling play past the deadline. */
#define LOOP_PLAY_BUSY_MS 200
/* At the end of a session: about ten seconds more, then the games still
 * waiting go to DIR/pending-games. */
#define LOOP_CLOSE_BUSY_MS 5000

loop_options loop_options_default(const game_params *g)
{
	loop_options o;
	memset(&o, 0, sizeof(o));
	o.game = *g;
	game_run_defaults d = game_run_defaults_of(g);
	snprintf(o.dir, sizeof(o.dir), "runs/%s", game_desc_from_params(g)->name);
	o.minutes = 10;
	o.blocks = d.blocks;
	o.channels = d.channels;
	o.parallel_games = d.parallel_games;
	selfplay_options sd = selfplay_options_default(g);
	o.games_per_thread = sd.games_per_thread;
	o.own_weight = LOOP_OWN_WEIGHT_AUTO;
	o.learner_ranks = 1;
	o.visits = d.visits;
	o.cheap_visits = d.cheap_visits;
	o.positions_per_iter = 2000;
	o.window = d.window;
	o.window_min = 0;
	o.window_alpha = 0.75;
	o.window_beta = 0.4;
	o.reuse_cap = 0;
	o.bn_batches = 0;
	o.carry_games = d.carry_games;
	o.resign_pct = sd.resign_pct;
	o.no_resign_fraction = sd.no_resign_fraction;
	o.batch = 256;
	o.sample_ratio = 6;
	train_options t = train_options_default();
	o.lr = t.lr;
	o.optimizer = (int)t.optimizer;
	o.lr_schedule = (int)t.lr_schedule;
	o.lr_warmup = t.warmup_steps;
	o.lr_total_steps = 100000;
	o.lr_gamma = t.lr_gamma;
	o.lr_min = 0;
	o.weight_decay = t.weight_decay;
	o.value_q_weight = learner_options_default().value_q_weight;
	o.value_lambda = learner_options_default().value_lambda;
	o.bn_momentum = t.bn_momentum;
	o.explore = sd.explore;
	o.measure_every = 1;
	/* A 3.5-minute 9x9 run on an H100 measured for 28% of its time with
	 * measure_every 1 alone, one on 8 CPU cores for 14%: a tenth at most. */
	o.measure_share = 0.1;
	o.eval_visits = 200;
	o.eval_positions = 40;
	o.seed = 1;
	o.gate_threshold = 0.55;
	o.gate_visits = 50;
	o.nn = nn_backend_options_default();
	return o;
}

/* The self-play evaluator's largest batch: --eval-batch, or the parallel
 * games up to LOOP_EVAL_BATCH_AUTO_MAX. */
static int selfplay_batch(const loop_options *o)
{
	if (o->eval_batch > 0)
		return o->eval_batch;
	return o->parallel_games < LOOP_EVAL_BATCH_AUTO_MAX ? o->parallel_games
							    : LOOP_EVAL_BATCH_AUTO_MAX;
}

selfplay_options loop_selfplay_options(const loop_options *o)
{
	selfplay_options so = selfplay_options_default(&o->game);
	so.parallel_games = o->parallel_games;
	so.games_per_thread = o->games_per_thread;
	so.n_sizes = o->n_sizes;
	for (int i = 0; i < o->n_sizes; i++)
		so.sizes[i] = o->sizes[i];
	so.batch = selfplay_batch(o);
	so.visits = o->visits;
	so.cheap_visits = o->cheap_visits;
	so.nn = o->nn;
	so.explore = o->explore;
	so.seed = o->seed;
	so.quiet = o->quiet;
	so.carry_games = o->carry_games;
	so.resign_pct = o->resign_pct;
	so.no_resign_fraction = o->no_resign_fraction;
	return so;
}

void loop_config_text(const loop_options *o, char *buf, size_t len)
{
	const selfplay_explore *x = &o->explore;
	char drops[16 * TRAIN_MAX_LR_STEPS + 8] = "none";
	char sizes[8 * SELFPLAY_MAX_SIZES + 8] = "";
	for (int k = 0, at = 0; k < o->n_sizes; k++)
		at += snprintf(sizes + at, sizeof(sizes) - (size_t)at, "%s%d", k ? "," : "",
			       o->sizes[k]);
	if (!o->n_sizes)
		snprintf(sizes, sizeof(sizes), "%d", o->game.size);
	char per[16] = "auto", lanes[16] = "auto";
	if (o->games_per_thread > 0)
		snprintf(per, sizeof(per), "%d", o->games_per_thread);
	if (o->nn.lanes > 0)
		snprintf(lanes, sizeof(lanes), "%d", o->nn.lanes);
	for (int k = 0, at = 0; k < o->n_lr_drops; k++)
		at += snprintf(drops + at, sizeof(drops) - (size_t)at, "%s%d", k ? "," : "",
			       o->lr_drops[k]);
	snprintf(buf, len,
		 "game %s\nblocks %d\nchannels %d\nparallel-games %d\ngames-per-thread %s\nnn-lanes %s\n"
		 "eval-batch %d\nvisits %d\ncheap-visits %d\npositions %lld\nwindow %lld\nbatch %d\nsample-ratio %g\n"
		 "lr %g\ntemperature %g\ntemperature-moves %d\ntemperature-end %d\n"
		 "temperature-floor %g\ncpuct %g\nfpu %g\nfpu-root %g\nfpu-root-noise %g\n"
		 "noise-alpha %g\nnoise-eps %g\nvalue-q-weight %g\nvalue-lambda %g\nvalue-cut %d\n"
		 "eval-visits %d\n"
		 "eval-positions %d\nseed %llu\ngate-games %d\ngate-threshold %g\n"
		 "gate-visits %d\nminutes %g\noptimizer %s\nlr-schedule %s\nlr-warmup %lld\n"
		 "lr-total-steps %lld\nlr-gamma %g\nlr-min %g\nweight-decay %g\n"
		 "bn-momentum %g\nlr-drops %s\nwindow-min %lld\nwindow-alpha %g\n"
		 "window-beta %g\nreuse-cap %g\nbn-batches %d\nforced-playouts %g\nrandom-opening %d\n"
		 "gumbel %d\ngumbel-m %d\nmeasure-every %d\nmeasure-share %g\nopp-weight %g\n"
		 "own-weight %g\nscore-weight %g\nlearner-ranks %d\nsizes %s\nse-channels %d\n"
		 "carry-games %d\ntrain-precision %s\nresign %g\nno-resign-fraction %g\n",
		 game_desc_from_params(&o->game)->name, o->blocks, o->channels, o->parallel_games,
		 per, lanes, selfplay_batch(o), o->visits, o->cheap_visits,
		 (long long)o->positions_per_iter, (long long)o->window,
		 o->batch, o->sample_ratio, o->lr, x->temperature, x->temperature_moves,
		 x->temperature_end, x->temperature_floor, x->cpuct, x->fpu_reduction, x->fpu_root,
		 x->fpu_root_noise, x->noise_alpha_sum, x->noise_eps, o->value_q_weight,
		 o->value_lambda, o->value_cut,
		 o->eval_visits, o->eval_positions, (unsigned long long)o->seed, o->gate_games,
		 o->gate_threshold, o->gate_visits, o->minutes,
		 o->optimizer == TRAIN_OPTIMIZER_ADAMW ? "adamw" : "sgd",
		 o->lr_schedule == TRAIN_LR_SCHEDULE_COSINE ? "cosine"
		 : o->lr_schedule == TRAIN_LR_SCHEDULE_STEP ? "step"
							     : "constant",
		 (long long)o->lr_warmup, (long long)o->lr_total_steps, o->lr_gamma, o->lr_min,
		 o->weight_decay, o->bn_momentum, drops, (long long)o->window_min, o->window_alpha,
		 o->window_beta, o->reuse_cap, o->bn_batches, x->forced_k, x->random_opening,
		 (int)x->gumbel, x->gumbel_m, o->measure_every, o->measure_share, o->opp_weight,
		 o->own_weight, o->score_weight, o->learner_ranks > 1 ? o->learner_ranks : 1,
		 sizes, o->se_channels, (int)o->carry_games,
		 o->train_precision_given ? nn_dtype_name(o->train_precision) : "default",
		 (double)o->resign_pct, o->no_resign_fraction);
}

/* " with the X, Y and Z heads" for the optional heads of a, or "". */
static const char *heads_text(const nn_arch *a, char *buf, size_t len)
{
	const char *name[3] = { "opponent-reply", "ownership", "score" };
	int on[3] = { a->opp_policy, a->ownership, a->score }, n = on[0] + on[1] + on[2], k = 0;
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < 3 && at < len; i++) {
		if (!on[i])
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%s%s", k == 0 ? " with the " :
								 k == n - 1 ? " and " : ", ",
				       name[i]);
		k++;
	}
	if (n && at < len)
		snprintf(buf + at, len - at, " head%s", n > 1 ? "s" : "");
	return buf;
}

static void say(loop *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What a resumed run tells of an optional head and its --FLAG-weight w:
 * a weight for a head the network lacks is not used, a head without a
 * weight stays untrained. */
static void head_note(loop *r, const char *head, const char *flag, int has, double w)
{
	if (r->resumed && w > 0 && !has)
		say(r, "--%s-weight is not used: the run's network has no %s head (it shapes new "
		       "runs only)", flag, head);
	if (has && !(w > 0) && !r->o.quiet)
		say(r, "the run's network has the %s head, which --%s-weight 0 (the default) "
		       "leaves untrained: give the weight it was started with", head, flag);
}

static void say(loop *r, const char *fmt, ...)
{
	if (!r->o.log)
		return;
	progress_clear(&r->prog);
	va_list ap;
	va_start(ap, fmt);
	fputs("sente run: ", r->o.log);
	vfprintf(r->o.log, fmt, ap);
	va_end(ap);
	fputc('\n', r->o.log);
	fflush(r->o.log);
}

static bool stopped(const loop *r)
{
	return r->o.stop && *r->o.stop;
}

/* Seconds the closing work needs: its measurement as long as the last
 * one took (none seen: nothing kept back) and a margin for the report. */
static double closing_seconds(const loop *r)
{
	bool measures = r->have_bench && r->o.measure_every > 0;
	return (measures ? (r->measure_s[1] ? r->measure_s[1] : r->measure_s[0]) : 0) + 2;
}

/* When self-play and training must stop: the session's end less what the
 * closing work needs. */
static double compute_end(const loop *r)
{
	return r->t_end - closing_seconds(r);
}

double loop_seconds_left(const loop *r)
{
	return compute_end(r) - clock_now();
}

int64_t loop_step(const loop *r) { return learner_steps(r->L); }
int64_t loop_positions(const loop *r) { return learner_positions(r->L); }
int64_t loop_selfplay_model(const loop *r) { return r->play_id; }
bool loop_resumed(const loop *r) { return r->resumed; }

/* A compute phase's cost into the run's account: wall seconds since t0,
 * CPU seconds since cpu0, and self-play's evaluations, games and
 * positions since `before` (NULL: none, the phase played no games). */
static void charge(loop *r, double t0, double cpu0, const selfplay_stats *before)
{
	double wall = clock_now() - t0;
	r->spent.seconds += wall;
	r->spent.cpu_seconds += clock_cpu() - cpu0;
	if (before) {
		selfplay_stats now;
		selfplay_get_stats(r->sp, &now);
		r->spent.evals += (int64_t)(now.evals - before->evals);
		r->spent.games += now.games - before->games;
		r->spent.positions += now.positions - before->positions;
	}
}

/* The last value of metric "selfplay_model": the network self-play uses
 * when gating is on. */
static int last_value(void *ctx, int64_t step, double t, double value)
{
	*(double *)ctx = value;
	return 0;
}

/* Whether the learner is to run on the GPU: asked for, or auto and a
 * device is there. */
static bool wants_cuda(const loop_options *o)
{
	return o->nn.kind == NN_BACKEND_CUDA ||
	       (o->nn.kind == NN_BACKEND_AUTO && nn_cuda_device_count() > 0);
}

/* The learner: on the GPU when self-play would use it (asked for, or
 * auto and a device is there) and it starts, else on the CPU. */
static learner *open_learner(loop *r, char *err, size_t errlen)
{
	const loop_options *o = &r->o;
	learner_options lo = learner_options_default();
	lo.train.batch = o->batch;
	lo.train.lr = o->lr;
	lo.train.opp_weight = o->opp_weight;
	lo.train.own_weight = o->own_weight;
	lo.train.score_weight = o->score_weight;
	lo.train.optimizer = (train_optimizer)o->optimizer;
	lo.train.lr_schedule = (train_lr_schedule)o->lr_schedule;
	lo.train.warmup_steps = o->lr_warmup;
	lo.train.lr_total_steps = o->lr_total_steps;
	lo.train.lr_gamma = o->lr_gamma;
	lo.train.lr_min = o->lr_min;
	lo.train.weight_decay = o->weight_decay;
	lo.train.bn_momentum = o->bn_momentum;
	lo.train.n_lr_steps = o->n_lr_drops;
	for (int k = 0; k < o->n_lr_drops; k++)
		lo.train.lr_steps[k] = o->lr_drops[k];
	lo.train.seed = o->seed;
	lo.window = o->window;
	lo.reuse_cap = o->reuse_cap;
	lo.value_q_weight = (float)o->value_q_weight;
	lo.value_lambda = (float)o->value_lambda;
	lo.value_cut = o->value_cut != 0;
	lo.device = o->nn.n_gpus ? o->nn.gpus[0] : 0;
	/* The learner's arithmetic: --train-precision, else --precision unless
	 * it is int8 (self-play's on the CPU), else the learner's default. */
	bool told = o->train_precision_given ||
		    (o->nn.precision_given && o->nn.precision != NN_DTYPE_INT8);
	if (told)
		lo.precision = o->train_precision_given ? o->train_precision : o->nn.precision;
	bool want_cuda = wants_cuda(o);
	int ranks = o->learners ? comm_size(o->learners) : 1;
	if (ranks > 1) {
		/* Data parallel: each learner rank trains its share of the
		 * batch (learner_lead), on the CPU. */
		lo.train.batch = o->batch / ranks;
		if (want_cuda)
			say(r, "training on the CPU: %d learner ranks train there (several GPU ranks: "
			       "mpirun -np L sente train beside sente selfplay)", ranks);
		want_cuda = false;
	}
	learner *L = NULL;
	if (want_cuda) {
		L = learner_new(&learner_cuda, r->net, &lo, err, errlen);
		if (!L)
			say(r, "training on the CPU: the GPU learner: %s", err);
		if (L && o->reuse_cap > 0)
			say(r, "--reuse-cap is not used: the GPU learner has no reuse cap");
	}
	if (!L && o->train_precision_given && o->train_precision == NN_DTYPE_FP16) {
		snprintf(err, errlen, "--train-precision fp16 is for the GPU learner; the CPU "
			 "learner trains in fp32 or bf16");
		return NULL;
	}
	if (!L) {
		/* The CPU learner: bf16 on AMX unless told otherwise; it learned
		 * more per CPU minute there (docs/LEARNING.md, "The bf16 learner
		 * on 9x9 Go"). */
		if (!told)
			lo.precision = trainer_bf16_fast() ? NN_DTYPE_BF16 : NN_DTYPE_FP32;
		L = learner_new(&learner_cpu, r->net, &lo, err, errlen);
	}
	if (L && ranks > 1 && learner_lead(L, o->learners, &lo, err, errlen) != 0) {
		learner_free(L);
		return NULL;
	}
	return L;
}

/* The growing window: the learner's window for the run's positions so
 * far (every position stored), never below a batch; nothing with a fixed
 * window. */
static void size_window(loop *r)
{
	if (r->o.window_min <= 0 || r->fixed_window)
		return;
	int64_t games, seen;
	store_count(r->db, &games, &seen);
	int64_t w = replay_window_size(seen, r->o.window_min, r->o.window_alpha, r->o.window_beta,
				       r->o.window);
	if (w < r->o.batch)
		w = r->o.batch;
	if (learner_set_window(r->L, w) != 0) {
		say(r, "--window-min is not used: %s", learner_error(r->L));
		r->fixed_window = true;
	}
}

/* Self-play's model: the newest, or with gating the last one that passed
 * its gate (recorded as the metric selfplay_model). */
static int open_selfplay_model(loop *r, char *err, size_t errlen)
{
	char file[4096];
	nn_net *m = NULL;
	double last = 0;
	r->play_id = r->model_id;
	if (r->o.gate_games > 0 && store_metrics(r->db, "selfplay_model", last_value, &last) > 0 &&
	    (int64_t)last != r->model_id &&
	    store_model_file(r->db, (int64_t)last, file, sizeof(file)) == 0 &&
	    (m = nn_net_load_any(file, NULL, err, errlen)) != NULL)
		r->play_id = (int64_t)last;
	else
		m = nn_net_clone(learner_net(r->L));
	int rc = -1;
	if (!m)
		snprintf(err, errlen, "out of memory");
	else if (!r->sp || selfplay_set_model(r->sp, m, r->play_id, err, errlen) == 0)
		rc = 0;
	nn_net_free(m);
	if (rc == 0 && r->o.gate_games > 0 && !r->o.quiet)
		say(r, "gating on (%d games, %.0f%% to pass); self-play uses model %lld",
		    r->o.gate_games, 100 * r->o.gate_threshold, (long long)r->play_id);
	return rc;
}

/* Stores the waiting games, oldest first, until one fails. */
static void flush_pending(loop *r)
{
	int done = 0;
	int64_t id;
	while (done < r->n_pending &&
	       store_add_game(r->db, r->pending_model[done], "run", &r->pending[done], &id) == 0)
		record_free(&r->pending[done++]);
	if (done) {
		size_t left = (size_t)(r->n_pending - done);
		memmove(r->pending, r->pending + done, sizeof(*r->pending) * left);
		memmove(r->pending_model, r->pending_model + done, sizeof(*r->pending_model) * left);
		r->n_pending -= done;
	}
}

/* Queues a copy of a finished game the store could not take. 0, or -1. */
static int keep_pending(loop *r, const game_record *rec, int64_t model_id)
{
	if (r->n_pending == r->cap_pending) {
		int cap = r->cap_pending ? 2 * r->cap_pending : 64;
		game_record *p = realloc(r->pending, sizeof(*p) * (size_t)cap);
		if (p)
			r->pending = p;
		int64_t *m = realloc(r->pending_model, sizeof(*m) * (size_t)cap);
		if (m)
			r->pending_model = m;
		if (!p || !m)
			return -1;
		r->cap_pending = cap;
	}
	if (record_copy(&r->pending[r->n_pending], rec) != 0)
		return -1;
	r->pending_model[r->n_pending] = model_id;
	r->n_pending++;
	return 0;
}

static void pending_path(const loop *r, char *path, size_t len)
{
	snprintf(path, len, "%s/pending-games", r->o.dir);
}

/* The games still waiting when the session ends: into DIR/pending-games
 * (per game: u32 blob length, i64 model id, the record's blob; written
 * atomically with a CRC), for the next session to store. */
static void spill_pending(loop *r)
{
	char path[4200], err[512];
	if (!r->n_pending)
		return;
	pending_path(r, path, sizeof(path));
	fileio_writer w;
	if (fileio_begin(&w, path, err, sizeof(err)) != 0) {
		say(r, "%d finished games lost: %s", r->n_pending, err);
		return;
	}
	for (int i = 0; i < r->n_pending; i++) {
		uint8_t *blob = NULL;
		size_t len = 0;
		if (record_encode(&r->pending[i], &blob, &len) != 0)
			continue;
		uint32_t l32 = (uint32_t)len;
		int64_t model = r->pending_model[i];
		fileio_put(&w, &l32, 4);
		fileio_put(&w, &model, 8);
		fileio_put(&w, blob, len);
		free(blob);
	}
	if (fileio_commit(&w, err, sizeof(err)) != 0)
		say(r, "%d finished games lost: %s", r->n_pending, err);
	else
		say(r, "the database stayed locked by another process: %d finished games kept in %s, "
		       "stored when the run resumes", r->n_pending, path);
}

/* The end of a session, closed or failed: writes wait a bounded time from
 * now on, and the games still waiting are stored or kept in the file. */
static void end_session_writes(loop *r)
{
	store_set_patience(r->db, LOOP_CLOSE_BUSY_MS, 1);
	flush_pending(r);
	spill_pending(r);
}

/* A previous session's DIR/pending-games into the store; the file goes
 * once every game in it is stored. 0, or -1 with a message. */
static int import_pending(loop *r, char *err, size_t errlen)
{
	char path[4200];
	pending_path(r, path, sizeof(path));
	if (access(path, F_OK) != 0)
		return 0;
	size_t len;
	uint8_t *b = fileio_slurp(path, "pending games", &len, err, errlen);
	if (!b)
		return -1;
	int rc = -1, stored = 0, bad = 0;
	if (len < 4 || fileio_crc(b, len - 4) != fileio_u32(b + len - 4)) {
		snprintf(err, errlen, "%s is damaged (checksum); move it away to go on", path);
		goto out;
	}
	size_t end = len - 4; /* before the CRC */
	for (size_t off = 0; off + 12 <= end;) {
		uint32_t l = fileio_u32(b + off);
		int64_t model = (int64_t)fileio_u64(b + off + 4);
		if (l > end - off - 12)
			break;
		game_record rec;
		char why[128];
		int64_t id;
		if (record_decode(b + off + 12, l, &rec, why, sizeof(why)) != 0) {
			bad++;
		} else if (store_add_game(r->db, model, "run", &rec, &id) != 0) {
			snprintf(err, errlen, "storing the games kept in %s: %s", path, store_errmsg(r->db));
			record_free(&rec);
			goto out;
		} else {
			stored++;
		}
		record_free(&rec);
		off += 12 + l;
	}
	unlink(path);
	say(r, "stored %d finished games kept by the last session%s", stored,
	    bad ? " (some did not decode)" : "");
	rc = 0;
out:
	free(b);
	return rc;
}

/* Frees what the run holds, with no closing work. */
static void loop_free(loop *r)
{
	for (int i = 0; i < r->n_pending; i++)
		record_free(&r->pending[i]);
	free(r->pending);
	free(r->pending_model);
	c4bench_free(&r->bench);
	selfplay_free(r->sp);
	nn_cuda_monitor_stop(r->gpu);
	learner_free(r->L);
	nn_net_free(r->net);
	rundir_close(r->rd);
	free(r);
}

/* loop_measure_c4 at `step`, timed for the estimates of closing_seconds,
 * with the progress line saying so. */
static void measure_c4(loop *r, int64_t step, bool with_search, double deadline, bool quiet)
{
	progress_phase(&r->prog, "measuring strength at step %lld (%s)", (long long)step,
		       with_search ? "network and search" : "network");
	double t0 = clock_now(), net_s = 0;
	int rc = loop_measure_c4(r->db, &r->bench, learner_net(r->L), r->o.eval_visits,
				 r->o.eval_positions, step, with_search, deadline, r->o.stop, r->o.log,
				 &r->prog, quiet, &net_s);
	double t = clock_now() - t0;
	if (rc >= 0)
		r->measure_s[0] = net_s;
	if (rc >= 0 && with_search)
		r->measured_step = step;
	if (rc == 0 && with_search)
		r->measure_s[1] = t;
	r->measure_total_s += t;
	if (rc >= 0)
		store_add_metric(r->db, step, "measure_seconds", t);
}

loop *loop_open(const loop_options *o, char *err, size_t errlen)
{
	loop *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->o = *o;
	r->t_end = clock_now() + o->minutes * 60;
	r->measured_step = -1;
	progress_init(&r->prog, o->log && !o->quiet ? o->log : NULL, o->minutes * 60, 0);
	r->rd = rundir_open(r->o.dir, err, errlen);
	if (!r->rd)
		goto fail;
	r->db = r->rd->db;
	/* --own-weight auto: a new Go network has the ownership head, on
	 * either learner. */
	bool own_auto = o->own_weight < 0;
	bool own_new = own_auto ? game_desc_from_params(&o->game)->ownership != NULL
				: o->own_weight > 0;
	int heads = (o->opp_weight > 0 ? NN_HEAD_OPP : 0) | (own_new ? NN_HEAD_OWN : 0) |
		    (o->score_weight > 0 ? NN_HEAD_SCORE : 0);
	/* --sizes: one network for several boards, its frame the largest. */
	uint32_t sizes = 0;
	game_params frame = o->game;
	for (int i = 0; i < o->n_sizes; i++) {
		sizes |= 1u << o->sizes[i];
		frame.size = i == 0 || o->sizes[i] > frame.size ? o->sizes[i] : frame.size;
	}
	r->net = rundir_learner_net(r->rd, &frame, o->blocks, o->channels, o->se_channels, heads,
				    o->n_sizes > 1 ? sizes : 0, o->seed, &r->resumed, err, errlen);
	if (r->net && own_auto)
		r->o.own_weight = r->net->arch.ownership ? LOOP_OWN_WEIGHT : 0;
	if (r->net && r->resumed && r->net->arch.game != o->game.kind) {
		snprintf(err, errlen, "%s holds a %s run, not %s", r->o.dir,
			 game_kind_name(r->net->arch.game), game_kind_name(o->game.kind));
		goto fail;
	}
	if (r->net) {
		const nn_arch *a = &r->net->arch;
		head_note(r, "opponent-reply", "opp", a->opp_policy, o->opp_weight);
		head_note(r, "ownership", "own", a->ownership, r->o.own_weight);
		head_note(r, "score", "score", a->score, o->score_weight);
	}
	if (!r->net)
		goto fail;
	const game_desc *desc = game_desc_from_params(&o->game);
	if (desc->has_size)
		r->o.game.size = r->net->arch.board_w; /* the frame of several sizes */
	/* The sizes are the network's (a resumed run keeps its own). */
	uint32_t net_sizes = r->net->arch.sizes;
	if (r->resumed && o->n_sizes && net_sizes != sizes)
		say(r, "--sizes is not used: the run's network plays the sizes it was made for");
	r->o.n_sizes = nn_arch_size_list(&r->net->arch, r->o.sizes, SELFPLAY_MAX_SIZES);
	char config[4096];
	loop_config_text(&r->o, config, sizeof(config));
	if (store_set_meta(r->db, LOOP_CONFIG_KEY, config) != 0) {
		snprintf(err, errlen, "storing the configuration: %s", store_errmsg(r->db));
		goto fail;
	}
	r->L = open_learner(r, err, errlen);
	if (!r->L) {
		char why[2048];
		snprintf(why, sizeof(why), "learner: %s", err);
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	if (r->resumed && learner_checkpoint_load(r->L, r->rd->ckpt, err, errlen) != 0)
		goto fail;
	if (rundir_first_model(r->rd, r->L, &r->model_id, "sente run", err, errlen) != 0 ||
	    import_pending(r, err, errlen) != 0)
		goto fail;
	/* The compute account goes on from the newest model's (none: a run
	 * from before the account, counted from here). */
	if (store_model_compute(r->db, r->model_id, &r->spent) < 0)
		memset(&r->spent, 0, sizeof(r->spent));
	int64_t last_id = 0;
	int added;
	if (learner_refill(r->L, r->db, NULL, o->window, &last_id, &added, err, errlen) != 0)
		goto fail;
	size_window(r);

	selfplay_options so = loop_selfplay_options(&r->o);
	so.seed = o->seed * 7919 + (uint64_t)learner_steps(r->L);
	/* Self-play's figures go on the run's progress line. */
	so.progress_seconds = 0;
	so.progress = &r->prog;
	so.quiet = o->quiet || !o->log;
	/* Games from elsewhere: no workers here. */
	r->sp = o->source ? NULL : selfplay_new(&so, err, errlen);
	if ((!r->sp && !o->source) || open_selfplay_model(r, err, errlen) != 0 ||
	    (o->source && o->source->model(o->source->ctx, r->db, r->play_id, learner_steps(r->L), err,
					   errlen) != 0))
		goto fail;
	if (desc->solved_positions) {
		char bdir[4096], why[512];
		if (c4bench_find(bdir, sizeof(bdir)) == 0 &&
		    c4bench_load(bdir, &r->bench, why, sizeof(why)) == 0)
			r->have_bench = true;
		else
			say(r, "no Connect Four positions found (data/connect4): strength will not be "
			       "measured");
	}
	/* On CUDA devices, how busy they are (sampled every second). */
	if (o->nn.kind != NN_BACKEND_CPU && nn_cuda_device_count() > 0) {
		int dev0 = 0;
		char why[512];
		r->gpu = nn_cuda_monitor_start(o->nn.n_gpus ? o->nn.gpus : &dev0,
					       o->nn.n_gpus ? o->nn.n_gpus : 1, 1.0, why, sizeof(why));
		if (!r->gpu)
			say(r, "GPU utilisation and memory are not recorded: %s", why);
	}
	/* Recorded positions per game: a guess until games are seen. */
	r->per_game = game_run_defaults_of(&r->o.game).positions_per_game;

	int64_t games0, positions0;
	store_count(r->db, &games0, &positions0);
	char sp_what[256] = "on other ranks";
	if (r->sp)
		selfplay_backend(r->sp, sp_what, sizeof(sp_what));
	game_numbers gn = game_numbers_of(&r->o.game);
	char heads_buf[96], board[128];
	if (r->net->arch.sizes)
		nn_arch_sizes_text(&r->net->arch, board, sizeof(board));
	else
		snprintf(board, sizeof(board), "%dx%d", gn.width, gn.height);
	char se[48] = "";
	if (r->net->arch.blocks && r->net->arch.block_kind[0] == NN_BLOCK_SE)
		snprintf(se, sizeof(se), " (squeeze-excitation %d)", r->net->arch.se_channels);
	say(r, "%s %s in %s, network %dx%d%s%s, %s at step %lld, %lld games and %lld positions "
	       "stored, window %lld; %g minutes; self-play %s, training %s",
	    desc->name, board, r->o.dir, r->net->arch.blocks, r->net->arch.channels, se,
	    heads_text(&r->net->arch, heads_buf, sizeof(heads_buf)),
	    r->resumed ? "resumed" : "new",
	    (long long)learner_steps(r->L), (long long)games0, (long long)positions0,
	    (long long)learner_positions(r->L), o->minutes, sp_what, learner_describe(r->L));
	/* A new run's strength at step 0, in at most a quarter of the session
	 * (the search part is left out when it does not fit). */
	if (r->have_bench && !r->resumed && o->measure_every > 0)
		measure_c4(r, 0, true, clock_now() + 0.25 * (r->t_end - clock_now()), o->quiet);
	return r;
fail:
	loop_free(r);
	return NULL;
}

/* A game source's callback: the game into the store (one transaction,
 * with who played it) and the window. */
static int on_source_game(void *ctx, const game_record *rec, int64_t model_id, const char *worker)
{
	loop *r = ctx;
	int64_t id;
	flush_pending(r);
	if (r->n_pending || store_add_game(r->db, model_id, worker, rec, &id) != 0) {
		/* Another process holds the lock (a long `sente db vacuum`):
		 * the game waits, self-play goes on. */
		if (!(r->n_pending || store_last_busy(r->db)) || keep_pending(r, rec, model_id) != 0) {
			say(r, "storing a game failed: %s", store_errmsg(r->db));
			return ++r->failures >= 3;
		}
	}
	learner_add_game(r->L, rec);
	int n_entropy;
	r->it_entropy += record_policy_entropy(rec, &n_entropy);
	r->it_entropy_n += n_entropy;
	r->it_positions += record_full_count(rec);
	r->it_games++;
	return 0;
}

/* Self-play's callback: games of this process. */
static int on_game(void *ctx, const game_record *rec, int64_t model_id)
{
	return on_source_game(ctx, rec, model_id, "run");
}

int loop_selfplay(loop *r, loop_iteration *it, char *err, size_t errlen)
{
	memset(it, 0, sizeof(*it));
	it->number = r->iteration + 1;
	r->it_positions = r->it_games = r->it_entropy_n = 0;
	r->it_entropy = 0;
	r->failures = 0;
	/* As many games as should give the positions wanted, from the
	 * positions per game seen so far; games are never cut short (with
	 * carry_games those under way when the iteration has its positions
	 * go on in the next). */
	int64_t want = (int64_t)ceil(r->o.positions_per_iter / r->per_game);
	if (want < r->o.parallel_games)
		want = r->o.parallel_games;
	double t0 = clock_now(), cpu0 = clock_cpu();
	selfplay_stats before;
	if (r->sp)
		selfplay_get_stats(r->sp, &before);
	/* A growing window keeps every game while they come, then is cut to
	 * its size for the positions seen (size_window below). */
	if (r->o.window_min > 0 && !r->fixed_window)
		learner_set_window(r->L, r->o.window);
	/* Never past the session's end (0 would mean no limit). */
	double left = loop_seconds_left(r);
	if (left < 0.001)
		left = 0.001;
	/* A game source (MPI ranks) logs its own progress lines meanwhile. */
	if (r->o.source)
		progress_clear(&r->prog);
	else
		progress_phase(&r->prog, "iteration %d self-play", it->number);
	store_set_patience(r->db, LOOP_PLAY_BUSY_MS, 0);
	const loop_game_source *src = r->o.source;
	int64_t games = src ? src->play(src->ctx, want, left, on_source_game, r, r->o.stop)
			    : selfplay_run(r->sp, want, left, on_game, r, r->o.stop);
	/* Carried games: the first to finish are the short ones (the long
	 * ones go on into the next iteration), so an iteration may have its
	 * games before its positions; it plays on for those missing. */
	while (!src && r->o.carry_games && games >= 0 && !stopped(r) &&
	       r->it_positions < r->o.positions_per_iter && (left = loop_seconds_left(r)) > 0.001) {
		int64_t more = (int64_t)ceil((r->o.positions_per_iter - r->it_positions) / r->per_game);
		int64_t g = selfplay_run(r->sp, more > 1 ? more : 1, left, on_game, r, r->o.stop);
		games = g < 0 ? g : games + g;
	}
	flush_pending(r);
	/* Games from a source (MPI ranks) count their games and positions
	 * here; their evaluations are the ranks' own and are not counted. */
	charge(r, t0, cpu0, r->sp ? &before : NULL);
	if (!r->sp) {
		r->spent.games += r->it_games;
		r->spent.positions += r->it_positions;
	}
	store_set_patience(r->db, STORE_BUSY_TIMEOUT_MS, STORE_BUSY_RETRIES);
	if (r->it_games > 0)
		r->per_game = 0.5 * r->per_game + 0.5 * (double)r->it_positions / r->it_games;
	it->games = games;
	it->new_positions = r->it_positions;
	it->selfplay_seconds = clock_now() - t0;
	it->policy_entropy = r->it_entropy_n ? r->it_entropy / (double)r->it_entropy_n : NAN;
	it->false_resign_rate = NAN;
	if (r->sp) {
		selfplay_stats now;
		selfplay_get_stats(r->sp, &now);
		double evals = (double)(now.evals - before.evals);
		uint64_t batches = now.batches - before.batches, requests = now.requests - before.requests;
		it->evals_per_s = it->selfplay_seconds > 0 ? evals / it->selfplay_seconds : 0;
		it->mean_batch = batches ? evals / (double)batches : 0;
		it->cache_hit_rate =
			requests ? (double)(now.cache_hits - before.cache_hits) / (double)requests : 0;
		it->would_resign = now.would_resign;
		if (now.would_resign > 0)
			it->false_resign_rate = (double)now.false_resign / (double)now.would_resign;
		it->resign_threshold = selfplay_resign_threshold(r->sp);
	}
	if (games < 0 || r->failures) {
		snprintf(err, errlen, "self-play failed");
		return -1;
	}
	size_window(r);
	it->window = learner_positions(r->L);
	if (stopped(r) || learner_positions(r->L) < r->o.batch)
		return 1;
	return 0;
}

int loop_train(loop *r, loop_iteration *it, char *err, size_t errlen)
{
	int steps = (int)ceil(it->new_positions * r->o.sample_ratio / r->o.batch);
	if (steps < 1)
		steps = 1;
	double sums[7] = { 0 };
	train_stats ts = { 0 };
	/* Training leaves time for the gating match that follows it. */
	double t0 = clock_now(), cpu0 = clock_cpu(), end = compute_end(r) - r->gate_s;
	progress_phase(&r->prog, "iteration %d training", it->number);
	int s;
	/* At least one step, then none that would end (at the mean step's
	 * length) past the session's compute: the positions left untrained
	 * are trained on in the next session. */
	for (s = 0; s < steps && !stopped(r) &&
		    (s == 0 || clock_now() + (clock_now() - t0) / s < end);
	     s++) {
		int rc = learner_step(r->L, r->o.batch, 0, &ts);
		if (rc == LEARNER_USED_UP) {
			it->used_up = true;
			break;
		}
		if (rc != 0) {
			snprintf(err, errlen, "training step failed: %s", learner_error(r->L));
			return -1;
		}
		sums[0] += ts.loss;
		sums[1] += ts.policy_loss;
		sums[2] += ts.value_loss;
		sums[3] += ts.grad_norm;
		sums[4] += ts.opp_loss;
		sums[5] += ts.own_loss;
		sums[6] += ts.score_loss;
		double dt = clock_now() - t0;
		progress_update(&r->prog, 0, false, "step %lld (%d of %d)  loss %.3f  %.0f samples/s",
				(long long)ts.step, s + 1, steps, sums[0] / (s + 1),
				dt > 0 ? (s + 1) * r->o.batch / dt : 0.0);
	}
	/* The statistics the exported network will normalise with, from the
	 * window (counted as training). */
	if (s > 0 && r->o.bn_batches > 0 && !r->no_bn_recompute &&
	    learner_positions(r->L) >= r->o.batch &&
	    learner_recompute_bn(r->L, r->o.bn_batches) != 0) {
		say(r, "--bn-batches is not used: %s", learner_error(r->L));
		r->no_bn_recompute = true;
	}
	it->train_seconds = clock_now() - t0;
	charge(r, t0, cpu0, NULL);
	it->window = learner_positions(r->L);
	it->steps = s;
	int n = s > 0 ? s : 1;
	it->loss = sums[0] / n;
	it->policy_loss = sums[1] / n;
	it->value_loss = sums[2] / n;
	it->grad_norm = sums[3] / n;
	it->opp_loss = r->net->arch.opp_policy && s > 0 ? sums[4] / n : NAN;
	it->own_loss = r->net->arch.ownership && s > 0 ? sums[5] / n : NAN;
	it->score_loss = r->net->arch.score && s > 0 ? sums[6] / n : NAN;
	it->lr = ts.lr;
	it->step = learner_steps(r->L);
	return 0;
}

int loop_export(loop *r, loop_iteration *it, char *err, size_t errlen)
{
	int64_t g_all, p_all;
	store_count(r->db, &g_all, &p_all);
	/* The iteration's figures, in one transaction; those it has no value
	 * for are left out (NaN). The evaluator's and the resignation check's
	 * only when self-play ran here. */
	const char *names[] = { "loss", "policy_loss", "value_loss", "grad_norm", "lr",
				"games", "positions", "selfplay_seconds", "train_seconds",
				"policy_entropy", "evals_per_s", "mean_batch", "cache_hit_rate",
				"false_resign_rate", "resign_threshold", "train_samples_per_s",
				"gpu_util_percent", "gpu_memory_mib", "opp_loss", "own_loss",
				"score_loss" };
	double gpu_util = NAN, gpu_mem = NAN;
	if (r->gpu && nn_cuda_monitor_take(r->gpu, &gpu_util, &gpu_mem) != 0)
		gpu_util = gpu_mem = NAN;
	double vals[] = { it->loss, it->policy_loss, it->value_loss, it->grad_norm, it->lr,
			  (double)g_all, (double)p_all, it->selfplay_seconds, it->train_seconds,
			  it->policy_entropy, r->sp ? it->evals_per_s : NAN,
			  r->sp ? it->mean_batch : NAN, r->sp ? it->cache_hit_rate : NAN,
			  it->false_resign_rate, r->sp ? it->resign_threshold : NAN,
			  it->train_seconds > 0 ? it->steps * r->o.batch / it->train_seconds : NAN,
			  gpu_util, gpu_mem, it->opp_loss, it->own_loss, it->score_loss };
	enum { N_FIGURES = sizeof(vals) / sizeof(vals[0]) };
	const char *use_names[N_FIGURES];
	double use_vals[N_FIGURES];
	int m = 0;
	for (int i = 0; i < N_FIGURES; i++)
		if (!isnan(vals[i])) {
			use_names[m] = names[i];
			use_vals[m++] = vals[i];
		}
	store_add_metrics(r->db, it->step, use_names, use_vals, m);
	/* A checkpoint to resume from; a new model for self-play. */
	if (rundir_save_compute(r->rd, r->L, &r->model_id, "sente run", &r->spent, err, errlen) != 0)
		return -1;
	it->model_id = r->model_id;
	nn_net *trained = learner_net(r->L);
	loop_gate gate = {
		.games = r->o.gate_games,
		.threshold = r->o.gate_threshold,
		.visits = r->o.gate_visits,
		.stop = r->o.stop,
	};
	double g0 = clock_now();
	if (r->o.gate_games > 0)
		progress_phase(&r->prog, "iteration %d gating (%d games)", it->number, r->o.gate_games);
	bool promote = r->o.gate_games <= 0 ||
		       loop_gate_passes(r->db, &r->o.game, &gate, r->model_id, r->play_id, it->step,
					r->o.log, &r->prog, r->o.quiet);
	if (r->o.gate_games > 0)
		r->gate_s = clock_now() - g0;
	if (promote)
		r->play_id = r->model_id;
	/* Every gate's outcome, so a resumed run takes the model that
	 * passed last, not a newer one that failed. */
	if (r->o.gate_games > 0)
		store_add_metric(r->db, it->step, "selfplay_model", (double)r->play_id);
	it->promoted = promote;
	if (promote && r->sp && selfplay_set_model(r->sp, trained, r->model_id, err, errlen) != 0)
		return -1;
	const loop_game_source *src = r->o.source;
	if (src && src->model(src->ctx, r->db, r->play_id, it->step, err, errlen) != 0)
		return -1;
	r->iteration = it->number;
	if (!r->o.quiet) {
		char reply[120] = "";
		size_t at = 0;
		if (!isnan(it->opp_loss))
			at += (size_t)snprintf(reply, sizeof(reply), ", reply %.3f", it->opp_loss);
		if (!isnan(it->own_loss))
			at += (size_t)snprintf(reply + at, sizeof(reply) - at, ", ownership %.3f",
					       it->own_loss);
		if (!isnan(it->score_loss))
			snprintf(reply + at, sizeof(reply) - at, ", score %.3f", it->score_loss);
		say(r, "iteration %d: %lld games (%.0f s), %d steps%s (%.0f s, %.0f samples/s), window "
		       "%lld, loss %.3f (policy %.3f, value %.3f%s), model %lld, self-play %lld",
		    it->number, (long long)it->games, it->selfplay_seconds, it->steps,
		    it->used_up ? " (reuse cap)" : "", it->train_seconds,
		    it->train_seconds > 0 ? it->steps * r->o.batch / it->train_seconds : 0.0,
		    (long long)it->window, it->loss, it->policy_loss, it->value_loss, reply,
		    (long long)r->model_id, (long long)r->play_id);
	}
	return 0;
}

/* Go's measurement needs this much time left when its length is not
 * known yet. */
#define LOOP_FIRST_MEASURE_MIN_S 30

void loop_measure(loop *r, const loop_iteration *it)
{
	nn_net *trained = learner_net(r->L);
	int every = r->o.measure_every;
	/* Stopped: the checkpoint is written and what is left must be quick
	 * (mpirun sends SIGKILL a second after its SIGTERM). */
	if (!trained || every <= 0 || it->number % every != 0 || stopped(r))
		return;
	/* The search measurement every third time; none that would run past
	 * the time left (the closing one measures the last network). */
	bool third = (it->number / every) % 3 == 0;
	double left = loop_seconds_left(r);
	/* Over its share of the session's time so far: skipped (the closing
	 * measurement still runs). */
	double elapsed = clock_now() - (r->t_end - r->o.minutes * 60);
	if (r->o.measure_share < 1 && r->measure_total_s > r->o.measure_share * elapsed)
		return;
	if (r->have_bench) {
		if (left <= 0)
			return;
		if (third && r->measure_s[1] > left)
			third = false;
		if (!third && r->measure_s[0] > left)
			return;
		measure_c4(r, it->step, third, compute_end(r), r->o.quiet);
	} else if (third) {
		if (left < (r->measure_first_s ? r->measure_first_s : LOOP_FIRST_MEASURE_MIN_S))
			return;
		progress_phase(&r->prog, "measuring strength at step %lld (games against the first "
			       "network)", (long long)it->step);
		double t0 = clock_now();
		loop_measure_first(r->db, trained, &r->o.game, r->o.eval_visits, it->step, r->o.log,
				   &r->prog, r->o.quiet);
		r->measure_first_s = clock_now() - t0;
		r->measure_total_s += r->measure_first_s;
		store_add_metric(r->db, it->step, "measure_seconds", r->measure_first_s);
	}
}

int loop_report(loop *r, char *err, size_t errlen)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/report.html", r->o.dir);
	return report_write(r->db, path, game_desc_from_params(&r->o.game)->name, err, errlen);
}

void loop_close(loop *r)
{
	if (!r)
		return;
	char err[1024], path[8192];
	/* Every write of the closing work waits a bounded time for another
	 * process's lock: the session ends about on time. */
	end_session_writes(r);
	/* The closing measurement, its search part only up to the session's
	 * end (less a second for the report). */
	if (r->have_bench && !stopped(r) && r->o.measure_every > 0 &&
	    r->measured_step != learner_steps(r->L))
		measure_c4(r, learner_steps(r->L), true, r->t_end - 1, false);
	progress_clear(&r->prog);
	snprintf(path, sizeof(path), "%s/report.html", r->o.dir);
	if (loop_report(r, err, sizeof(err)) == 0)
		say(r, "report in %s", path);
	say(r, "%s at step %lld; run again with --dir %s to continue",
	    stopped(r) ? "stopped" : "done", (long long)learner_steps(r->L), r->o.dir);
	loop_free(r);
}

int loop_run(const loop_options *o, char *err, size_t errlen)
{
	loop *r = loop_open(o, err, errlen);
	if (!r)
		return -1;
	int rc = 0;
	/* An iteration only with a second or more to go. */
	while (!stopped(r) && loop_seconds_left(r) > 1) {
		loop_iteration it;
		int sp = loop_selfplay(r, &it, err, errlen);
		if (sp < 0) {
			rc = -1;
			break;
		}
		if (sp > 0)
			continue;
		if (loop_train(r, &it, err, errlen) != 0 || loop_export(r, &it, err, errlen) != 0) {
			rc = -1;
			break;
		}
		loop_measure(r, &it);
		char why[512];
		loop_report(r, why, sizeof(why));
	}
	if (rc != 0) {
		/* The failure's message is the caller's to print; what was
		 * committed stays, and the run resumes from the checkpoint. */
		end_session_writes(r);
		loop_free(r);
		return -1;
	}
	loop_close(r);
	return 0;
}
