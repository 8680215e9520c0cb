/* run.c: `sente run`, the whole AlphaZero loop on one machine: self-play,
 * training and evaluation in turn, with the run kept in DIR (database,
 * models, checkpoints, report). Stopped at any moment, it resumes. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/model_dir.h"
#include "cli/report.h"
#include "data/store.h"
#include "match/match.h"
#include "selfplay/arena.h"
#include "selfplay/selfplay.h"
#include "selfplay/strength.h"
#include "nn/cuda/cuda.h"
#include "train/learner.h"

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

typedef struct run_opts {
	game_params game;
	char dir[2048];
	double minutes;
	int blocks, channels;
	int parallel_games, visits, cheap_visits;
	int64_t positions_per_iter, window;
	int batch;
	double sample_ratio, lr;
	int eval_visits, eval_positions;
	uint64_t seed;
	int gate_games;        /* 0: every new network plays self-play */
	double gate_threshold; /* score a new network needs against the current one */
	int gate_visits;       /* visits per move in gating games */
	nn_backend_options nn; /* --backend, --gpus, --precision */
	bool quiet;
} run_opts;

/* State the self-play callback needs. */
typedef struct run_ctx {
	store *db;              /* the run's database */
	learner *L;             /* the learner and its window */
	int64_t new_positions;  /* recorded positions this iteration */
	int64_t games;          /* games this iteration */
	int failures;           /* store writes that failed */
} run_ctx;

static int on_game(void *ctx, const game_record *r, int64_t model_id)
{
	run_ctx *c = ctx;
	int64_t id;
	if (store_add_game(c->db, model_id, "run", r, &id) != 0) {
		fprintf(stderr, "sente run: storing a game failed: %s\n", store_errmsg(c->db));
		return ++c->failures >= 3;
	}
	learner_add_game(c->L, r);
	c->new_positions += record_full_count(r);
	c->games++;
	return 0;
}

/* store_recent_games delivers newest first; the window wants oldest
 * first, so the records are collected and added in reverse. */
typedef struct load_ctx {
	game_record *recs; /* collected copies */
	int n, cap;        /* used, allocated */
} load_ctx;

static int on_stored_game(void *ctx, int64_t game_id, const game_record *r)
{
	load_ctx *l = ctx;
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 1024;
		game_record *p = realloc(l->recs, sizeof(*p) * (size_t)cap);
		if (!p)
			return 1;
		l->recs = p;
		l->cap = cap;
	}
	uint8_t *blob = NULL;
	size_t len = 0;
	char err[64];
	if (record_encode(r, &blob, &len) == 0 &&
	    record_decode(blob, len, &l->recs[l->n], err, sizeof(err)) == 0)
		l->n++;
	free(blob);
	return 0;
}

/* Connect Four strength of the model in `net` (inference form): error
 * rates of the network alone over every position and of a search over a
 * sample, stored as metrics at `step`. */
static void measure_c4(store *db, const c4bench *bench, const nn_net *net, const run_opts *o,
		       int64_t step, bool with_search, bool quiet)
{
	char err[256];
	nn_net *copy = nn_net_clone(net);
	if (copy)
		nn_net_fold_bn(copy);
	nn_backend_options bo = nn_backend_options_default();
	nn_backend *be = copy ? nn_backend_new(&nn_backend_cpu, copy, 16, &bo, err, sizeof(err)) : NULL;
	eval_options eo = eval_options_default();
	eo.random_symmetry = 0;
	evaluator *ev = be ? eval_new(&be, 1, copy->arch.encoding, &eo, err, sizeof(err)) : NULL;
	if (!ev) {
		fprintf(stderr, "sente run: strength not measured: %s\n", err);
		goto out;
	}
	c4bench_result rn[C4BENCH_MAX_SETS], rs[C4BENCH_MAX_SETS];
	int n = c4bench_network(bench, ev, 0, rn);
	int ns = with_search ? c4bench_search(bench, ev, o->eval_visits, 1, o->eval_positions, rs) : 0;
	int tot_n = 0, tot_e = 0, tot_sn = 0, tot_se = 0;
	char name[400];
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "c4_error_net/%s", rn[i].name);
		store_add_metric(db, step, name, (double)rn[i].errors / rn[i].n);
		tot_n += rn[i].n;
		tot_e += rn[i].errors;
		if (i < ns) {
			snprintf(name, sizeof(name), "c4_error_search/%s", rs[i].name);
			store_add_metric(db, step, name, (double)rs[i].errors / rs[i].n);
			tot_sn += rs[i].n;
			tot_se += rs[i].errors;
		}
	}
	store_add_metric(db, step, "c4_error_net", (double)tot_e / tot_n);
	if (ns)
		store_add_metric(db, step, "c4_error_search", (double)tot_se / tot_sn);
	if (!quiet) {
		fprintf(stderr, "sente run: step %lld: error rate, network alone %.1f%%", (long long)step,
			100.0 * tot_e / tot_n);
		if (ns)
			fprintf(stderr, ", %d-visit search %.1f%%", o->eval_visits, 100.0 * tot_se / tot_sn);
		fprintf(stderr, "  (");
		for (int i = 0; i < n; i++)
			fprintf(stderr, "%s%s %.0f%%", i ? ", " : "", rn[i].name, 100.0 * rn[i].errors / rn[i].n);
		fprintf(stderr, ")\n");
	}
out:
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(copy);
}

/* An evaluator over its own copy of `net` (BN folded); NULL on failure. */
static evaluator *make_evaluator(const nn_net *net, nn_net **copy, nn_backend **be, char *err,
				 size_t errlen)
{
	*copy = nn_net_clone(net);
	*be = NULL;
	if (!*copy) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nn_net_fold_bn(*copy);
	nn_backend_options bo = nn_backend_options_default();
	*be = nn_backend_new(&nn_backend_cpu, *copy, 16, &bo, err, errlen);
	if (!*be)
		return NULL;
	eval_options eo = eval_options_default();
	return eval_new(be, 1, (*copy)->arch.encoding, &eo, err, errlen);
}

/* Go strength: games against the run's first network (model id 1). */
static void measure_go(store *db, const nn_net *net, const run_opts *o, int64_t step, bool quiet)
{
	char err[512], file[4096];
	nn_net *first = NULL, *c1 = NULL, *c2 = NULL;
	nn_backend *b1 = NULL, *b2 = NULL;
	evaluator *e1 = NULL, *e2 = NULL;
	if (store_model_file(db, 1, file, sizeof(file)) != 0 ||
	    !(first = nn_net_load_any(file, NULL, err, sizeof(err)))) {
		fprintf(stderr, "sente run: no first model to measure against\n");
		goto out;
	}
	e1 = make_evaluator(net, &c1, &b1, err, sizeof(err));
	e2 = e1 ? make_evaluator(first, &c2, &b2, err, sizeof(err)) : NULL;
	arena_result r;
	enum { GAMES = 10 };
	if (!e2 || arena_play(e1, e2, &o->game, GAMES, o->eval_visits / 4 + 1, o->eval_visits / 4 + 1, 4,
			      (uint64_t)step, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente run: strength not measured: %s\n", err);
		goto out;
	}
	double rate = (r.wins + 0.5 * r.draws) / r.games;
	store_add_metric(db, step, "go_winrate_vs_first", rate);
	if (!quiet)
		fprintf(stderr, "sente run: step %lld: against the first network %d-%d-%d (%.0f%%)\n",
			(long long)step, r.wins, r.losses, r.draws, rate * 100);
out:
	eval_free(e1);
	eval_free(e2);
	nn_backend_free(b1);
	nn_backend_free(b2);
	nn_net_free(c1);
	nn_net_free(c2);
	nn_net_free(first);
}

/* The last value of metric "selfplay_model": the network self-play uses
 * when gating is on. */
static int last_value(void *ctx, int64_t step, double t, double value)
{
	*(double *)ctx = value;
	return 0;
}

/* Gating: model `cand` plays the self-play model `current` (a match in
 * the run's database); true when it scores at least the threshold. */
static bool gate_passes(store *db, const run_opts *o, int64_t cand, int64_t current, int64_t step)
{
	char spec[2][32], err[1024];
	match_player pl[2];
	snprintf(spec[0], sizeof(spec[0]), "model:%lld", (long long)cand);
	snprintf(spec[1], sizeof(spec[1]), "model:%lld", (long long)current);
	for (int i = 0; i < 2; i++)
		if (match_player_parse(spec[i], db, &pl[i], err, sizeof(err)) != 0) {
			fprintf(stderr, "sente run: gating: %s\n", err);
			return false;
		}
	match_options mo = match_options_default(&o->game);
	mo.games = o->gate_games;
	mo.parallel = 2;
	mo.visits = o->gate_visits;
	mo.seed = (uint64_t)step + 1;
	mo.stop = &stop_flag;
	match_summary s;
	if (match_run(db, &pl[0], &pl[1], &mo, NULL, NULL, &s, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente run: gating match failed: %s\n", err);
		return false;
	}
	store_add_metric(db, step, "gate_score", s.elo.score);
	bool pass = s.games > 0 && s.elo.score >= o->gate_threshold;
	if (!o->quiet)
		fprintf(stderr, "sente run: gate: model %lld against %lld: %d-%d-%d (%.0f%%, Elo %+.0f "
			"[%+.0f, %+.0f]): %s\n", (long long)cand, (long long)current, s.wins, s.losses,
			s.draws, 100 * s.elo.score, s.elo.elo, s.elo.lo, s.elo.hi,
			pass ? "promoted" : "not promoted");
	return pass;
}

static bool parse_opts(int argc, char **argv, run_opts *o, int *rc)
{
	long n, size = 9;
	double d, komi = 7.5;
	bool dir_given = false;
	int given_blocks = -1, given_channels = -1, given_visits = -1, given_cheap = -1, given_par = -1;
	int64_t given_pos = -1, given_window = -1;
	int r;
	char berr[256];
	memset(o, 0, sizeof(*o));
	o->nn = nn_backend_options_default();
	o->game = game_params_default(GAME_KIND_CONNECT4);
	o->minutes = 10;
	o->batch = 256;
	o->sample_ratio = 6;
	o->lr = 0.02;
	o->eval_visits = 200;
	o->eval_positions = 40;
	o->seed = 1;
	o->gate_threshold = 0.55;
	o->gate_visits = 50;
	*rc = 2;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(s) (!strcmp(a, s) && v && (i++, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) || (cli_usage_error("run", "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) ((cli_parse_double(v, &d) && d >= (lo) && d <= (hi)) || (cli_usage_error("run", "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
		if (FLAG("--game")) {
			if (!game_kind_from_name(v, &o->game.kind)) {
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
			snprintf(o->dir, sizeof(o->dir), "%s", v);
			dir_given = true;
		} else if (FLAG("--minutes")) {
			if (!REAL(0.01, 1e7)) return false;
			o->minutes = d;
		} else if (FLAG("--blocks")) {
			if (!INT(1, 40)) return false;
			given_blocks = (int)n;
		} else if (FLAG("--channels")) {
			if (!INT(4, 512)) return false;
			given_channels = (int)n;
		} else if (FLAG("--parallel-games")) {
			if (!INT(1, 1024)) return false;
			given_par = (int)n;
		} else if (FLAG("--visits")) {
			if (!INT(2, 100000)) return false;
			given_visits = (int)n;
		} else if (FLAG("--cheap-visits")) {
			if (!INT(0, 100000)) return false;
			given_cheap = (int)n;
		} else if (FLAG("--positions")) {
			if (!INT(1, 100000000)) return false;
			given_pos = n;
		} else if (FLAG("--window")) {
			if (!INT(100, 1000000000)) return false;
			given_window = n;
		} else if (FLAG("--batch")) {
			if (!INT(1, 8192)) return false;
			o->batch = (int)n;
		} else if (FLAG("--sample-ratio")) {
			if (!REAL(0.01, 1000)) return false;
			o->sample_ratio = d;
		} else if (FLAG("--lr")) {
			if (!REAL(1e-6, 10)) return false;
			o->lr = d;
		} else if (FLAG("--eval-visits")) {
			if (!INT(1, 100000)) return false;
			o->eval_visits = (int)n;
		} else if (FLAG("--eval-positions")) {
			if (!INT(1, 100000)) return false;
			o->eval_positions = (int)n;
		} else if (FLAG("--seed")) {
			if (!INT(0, 0x7fffffffL)) return false;
			o->seed = (uint64_t)n;
		} else if (FLAG("--gate-games")) {
			if (!INT(0, 100000)) return false;
			o->gate_games = (int)n;
		} else if (FLAG("--gate-threshold")) {
			if (!REAL(0, 1)) return false;
			o->gate_threshold = d;
		} else if (FLAG("--gate-visits")) {
			if (!INT(1, 100000)) return false;
			o->gate_visits = (int)n;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (v && (r = nn_backend_parse_flag(a, v, &o->nn, berr, sizeof(berr))) != 0) {
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
	bool c4 = o->game.kind == GAME_KIND_CONNECT4;
	if (!c4) {
		o->game.size = (int)size;
		o->game.komi = komi;
		if (komi * 2 != floor(komi * 2)) {
			cli_usage_error("run", "--komi must be a multiple of 0.5");
			return false;
		}
	}
	/* Go on 9x9 and below: a smaller net and searches, many more games an
	 * hour on two cores (the first hour is about learning to count, not
	 * reading deeply). */
	bool small = c4 || o->game.size <= 9;
	o->blocks = given_blocks > 0 ? given_blocks : small ? 4 : 6;
	o->channels = given_channels > 0 ? given_channels : small ? 48 : 64;
	o->visits = given_visits > 0 ? given_visits : c4 ? 200 : 100;
	o->cheap_visits = given_cheap >= 0 ? given_cheap : c4 ? 40 : 25;
	o->parallel_games = given_par > 0 ? given_par : c4 ? 32 : 64;
	o->positions_per_iter = given_pos > 0 ? given_pos : 2000;
	o->window = given_window > 0 ? given_window : c4 ? 60000 : 100000;
	if (!dir_given)
		snprintf(o->dir, sizeof(o->dir), "runs/%s", game_kind_name(o->game.kind));
	*rc = 0;
	return true;
}

int cli_run(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(run_help, stdout);
		return 0;
	}
	run_opts o;
	int rc;
	if (!parse_opts(argc, argv, &o, &rc))
		return rc;
	rc = 1;
	char err[8192], path[8192], file[4096];
	store *db = NULL;
	learner *L = NULL;
	nn_net *net = NULL;
	selfplay *sp = NULL;
	c4bench bench = { 0 };
	bool have_bench = false;
	load_ctx loaded = { 0 };

	char ckpt[8192];
	db = cli_open_run(o.dir, ckpt, sizeof(ckpt), err, sizeof(err));
	if (!db) {
		fprintf(stderr, "sente run: %s\n", err);
		return 1;
	}

	/* The learner: from the checkpoint when there is one, else a new
	 * network (registered as the first model). */
	learner_options lo = learner_options_default();
	lo.train.batch = o.batch;
	lo.train.lr = o.lr;
	lo.train.seed = o.seed;
	lo.window = o.window;
	lo.device = o.nn.n_gpus ? o.nn.gpus[0] : 0;
	if (o.nn.precision_given)
		lo.precision = o.nn.precision == NN_DTYPE_FP16   ? LEARNER_FP16
			       : o.nn.precision == NN_DTYPE_BF16 ? LEARNER_BF16
								     : LEARNER_FP32;
	/* The GPU trains when self-play would use it: asked for, or (auto)
	 * a device is there. */
	bool want_cuda = o.nn.kind == NN_BACKEND_CUDA ||
			 (o.nn.kind == NN_BACKEND_AUTO && nn_cuda_device_count() > 0);
	int64_t model_id = 0, step = 0;
	bool resumed;
	net = cli_learner_net(ckpt, &o.game, o.blocks, o.channels, o.seed, &resumed, err,
			      sizeof(err));
	if (net && resumed && net->arch.game != o.game.kind) {
		snprintf(err, sizeof(err), "%s holds a %s run, not %s", o.dir,
			 game_kind_name(net->arch.game), game_kind_name(o.game.kind));
		nn_net_free(net);
		net = NULL;
	}
	if (net && resumed && net->arch.game == GAME_KIND_GO)
		o.game.size = net->arch.board_w;
	if (!net) {
		fprintf(stderr, "sente run: %s\n", err);
		goto out;
	}
	if (want_cuda) {
		lo.backend = LEARNER_CUDA;
		L = learner_new(net, &lo, err, sizeof(err));
		if (!L)
			fprintf(stderr, "sente run: training on the CPU: the GPU learner: %s\n", err);
	}
	if (!L) {
		lo.backend = LEARNER_CPU;
		L = learner_new(net, &lo, err, sizeof(err));
	}
	if (!L) {
		fprintf(stderr, "sente run: learner: %s\n", err);
		goto out;
	}
	if (resumed && learner_checkpoint_load(L, ckpt, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente run: %s\n", err);
		goto out;
	}
	if (store_latest_model(db, &model_id, file, sizeof(file), &step) != 1) {
		model_id = cli_export_model(db, learner_net(L), learner_steps(L), o.dir, 0, "sente run",
					    err, sizeof(err));
		if (model_id < 0) {
			fprintf(stderr, "sente run: %s\n", err);
			goto out;
		}
	}

	/* The window, refilled from the store. */
	if (store_recent_games(db, o.window, 0, on_stored_game, &loaded, err, sizeof(err)) < 0) {
		fprintf(stderr, "sente run: %s\n", err);
		goto out;
	}
	for (int i = loaded.n - 1; i >= 0; i--) {
		learner_add_game(L, &loaded.recs[i]);
		record_free(&loaded.recs[i]);
	}
	free(loaded.recs);
	loaded.recs = NULL;

	selfplay_options so = selfplay_options_default(&o.game);
	so.parallel_games = o.parallel_games;
	so.batch = o.parallel_games < 64 ? o.parallel_games : 64;
	so.visits = o.visits;
	so.cheap_visits = o.cheap_visits;
	so.nn = o.nn;
	so.seed = o.seed * 7919 + (uint64_t)learner_steps(L);
	so.progress_seconds = o.quiet ? 0 : 30;
	so.quiet = o.quiet;
	sp = selfplay_new(&so, err, sizeof(err));
	if (!sp) {
		fprintf(stderr, "sente run: %s\n", err);
		goto out;
	}
	/* The self-play network: the newest, or with gating the last one
	 * that passed its gate (recorded as the metric selfplay_model). */
	int64_t play_id = model_id;
	{
		nn_net *m = NULL;
		double last = 0;
		if (o.gate_games > 0 && store_metrics(db, "selfplay_model", last_value, &last) > 0 &&
		    (int64_t)last != model_id && store_model_file(db, (int64_t)last, file, sizeof(file)) == 0 &&
		    (m = nn_net_load_any(file, NULL, err, sizeof(err))) != NULL)
			play_id = (int64_t)last;
		else
			m = nn_net_clone(learner_net(L));
		if (!m || selfplay_set_model(sp, m, play_id, err, sizeof(err)) != 0) {
			fprintf(stderr, "sente run: %s\n", err);
			nn_net_free(m);
			goto out;
		}
		nn_net_free(m);
		if (o.gate_games > 0 && !o.quiet)
			fprintf(stderr, "sente run: gating on (%d games, %.0f%% to pass); self-play uses model %lld\n",
				o.gate_games, 100 * o.gate_threshold, (long long)play_id);
	}
	if (o.game.kind == GAME_KIND_CONNECT4) {
		char bdir[4096];
		if (c4bench_find(bdir, sizeof(bdir)) == 0 && c4bench_load(bdir, &bench, err, sizeof(err)) == 0)
			have_bench = true;
		else
			fprintf(stderr, "sente run: no Connect Four positions found (data/connect4): "
				"strength will not be measured\n");
	}

	int64_t games0, positions0;
	store_count(db, &games0, &positions0);
	char sp_what[256];
	selfplay_backend(sp, sp_what, sizeof(sp_what));
	fprintf(stderr, "sente run: %s %dx%d in %s, network %dx%d, %s at step %lld, %lld games and "
		"%lld positions stored, window %lld; %.1f minutes; self-play %s, training %s\n",
		game_kind_name(o.game.kind), o.game.kind == GAME_KIND_GO ? o.game.size : 7,
		o.game.kind == GAME_KIND_GO ? o.game.size : 6, o.dir,
		net->arch.blocks, net->arch.channels, resumed ? "resumed" : "new", (long long)learner_steps(L),
		(long long)games0, (long long)positions0, (long long)learner_positions(L), o.minutes,
		sp_what, learner_describe(L));
	if (have_bench && !resumed)
		measure_c4(db, &bench, learner_net(L), &o, 0, true, o.quiet);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	double t_end = cli_now() + o.minutes * 60;
	int iteration = 0;
	/* Recorded positions per game: a guess until games are seen. */
	double per_game = o.game.kind == GAME_KIND_CONNECT4 ? 0.25 * 22 : 0.25 * o.game.size * o.game.size;
	while (!stop_flag && cli_now() < t_end) {
		/* 1. Self-play until enough new positions. */
		/* As many games as should give the positions wanted, from the
		 * positions per game seen so far; games are never cut short. */
		run_ctx rc_ctx = { .db = db, .L = L };
		int64_t want = (int64_t)ceil(o.positions_per_iter / per_game);
		if (want < o.parallel_games)
			want = o.parallel_games;
		double t0 = cli_now();
		int64_t games = selfplay_run(sp, want, t_end - cli_now(), on_game, &rc_ctx, &stop_flag);
		if (rc_ctx.games > 0)
			per_game = 0.5 * per_game + 0.5 * (double)rc_ctx.new_positions / rc_ctx.games;
		if (games < 0 || rc_ctx.failures) {
			fprintf(stderr, "sente run: self-play failed\n");
			goto out;
		}
		double t_play = cli_now() - t0;
		if (stop_flag || learner_positions(L) < o.batch)
			continue;
		/* 2. Train on the window. */
		int steps = (int)ceil(rc_ctx.new_positions * o.sample_ratio / o.batch);
		if (steps < 1)
			steps = 1;
		double sums[4] = { 0 };
		train_stats ts = { 0 };
		t0 = cli_now();
		for (int s = 0; s < steps && !stop_flag; s++) {
			if (learner_step(L, o.batch, 0, &ts) != 0) {
				fprintf(stderr, "sente run: training step failed: %s\n", learner_error(L));
				goto out;
			}
			sums[0] += ts.loss;
			sums[1] += ts.policy_loss;
			sums[2] += ts.value_loss;
			sums[3] += ts.grad_norm;
		}
		double t_train = cli_now() - t0;
		step = learner_steps(L);
		const char *names[] = { "loss", "policy_loss", "value_loss", "grad_norm", "lr",
					"games", "positions", "selfplay_seconds", "train_seconds" };
		int64_t g_all, p_all;
		store_count(db, &g_all, &p_all);
		double vals[] = { sums[0] / steps, sums[1] / steps, sums[2] / steps, sums[3] / steps,
				  ts.lr, (double)g_all, (double)p_all, t_play, t_train };
		store_add_metrics(db, step, names, vals, 9);
		/* 3. A new model for self-play; a checkpoint to resume from. */
		nn_net *trained = learner_net(L);
		int64_t id = cli_export_model(db, trained, step, o.dir, model_id, "sente run", err,
					      sizeof(err));
		if (id < 0) {
			fprintf(stderr, "sente run: %s\n", err);
			goto out;
		}
		model_id = id;
		bool promote = o.gate_games <= 0 || gate_passes(db, &o, model_id, play_id, step);
		if (promote) {
			play_id = model_id;
			if (o.gate_games > 0)
				store_add_metric(db, step, "selfplay_model", (double)play_id);
		}
		if ((promote && selfplay_set_model(sp, trained, model_id, err, sizeof(err)) != 0) ||
		    learner_checkpoint_save(L, ckpt, err, sizeof(err)) != 0) {
			fprintf(stderr, "sente run: %s\n", err);
			goto out;
		}
		if (!o.quiet)
			fprintf(stderr, "sente run: iteration %d: %lld games (%.0f s), %d steps (%.0f s, %.0f "
				"samples/s), loss %.3f (policy %.3f, value %.3f), model %lld, self-play %lld\n",
				++iteration, (long long)games, t_play, steps, t_train,
				t_train > 0 ? steps * o.batch / t_train : 0.0, vals[0], vals[1], vals[2],
				(long long)model_id, (long long)play_id);
		/* 4. Strength; the search measurement every third iteration. */
		if (have_bench)
			measure_c4(db, &bench, trained, &o, step, iteration % 3 == 0, o.quiet);
		else if (o.game.kind == GAME_KIND_GO && iteration % 3 == 0)
			measure_go(db, trained, &o, step, o.quiet);
		snprintf(path, sizeof(path), "%s/report.html", o.dir);
		report_write(db, path, o.game.kind, err, sizeof(err));
	}
	/* The closing strength report. */
	if (have_bench && !stop_flag)
		measure_c4(db, &bench, learner_net(L), &o, learner_steps(L), true, false);
	snprintf(path, sizeof(path), "%s/report.html", o.dir);
	if (report_write(db, path, o.game.kind, err, sizeof(err)) == 0)
		fprintf(stderr, "sente run: report in %s\n", path);
	fprintf(stderr, "sente run: %s at step %lld; run again with --dir %s to continue\n",
		stop_flag ? "stopped" : "done", (long long)learner_steps(L), o.dir);
	rc = 0;
out:
	c4bench_free(&bench);
	selfplay_free(sp);
	learner_free(L);
	nn_net_free(net);
	store_close(db);
	return rc;
}
