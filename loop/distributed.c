/* distributed.c: self-play ranks feeding rank 0 (distributed.h). */
#include "loop/distributed.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/clock.h"
#include "engine/fileio.h"
#include "engine/game_desc.h"
#include "nn/cuda/cuda.h"
#include "selfplay/selfplay.h"
#include "train/comm.h"
#include "train/launch.h"
#include "train/learner.h"

/* Message tags (distributed.h). */
enum {
	TAG_MODEL_REQ = 1,
	TAG_MODEL = 2,
	TAG_GAME = 3,
	TAG_ACK = 4,
	TAG_BYE = 5,
	TAG_STOP = 6,
};

/* A GAME message: i64 model id (little-endian), the player's name
 * (NUL-padded), then the record's blob. */
#define NAME_BYTES 64
#define GAME_HEAD (8 + NAME_BYTES)
/* Rank 0's progress line, at most this often. */
#define PROGRESS_SECONDS 30

static void put_i64(uint8_t *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}

/* Sleeps about ms milliseconds: waiting ranks poll rather than spin in
 * MPI's blocking calls, which would take a core from the learner. */
static void nap(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };
	nanosleep(&ts, NULL);
}

static void say(FILE *log, const char *who, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(FILE *log, const char *who, const char *fmt, ...)
{
	if (!log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(log, "%s: ", who);
	vfprintf(log, fmt, ap);
	va_end(ap);
	fputc('\n', log);
	fflush(log);
}

/* Waits (polling) for a message from rank 0 with tag (COMM_ANY: any);
 * its tag and size. 0, or -1. */
static int wait_from_zero(comm *c, int tag, int *tag_out, size_t *bytes)
{
	int src, rc, ms = 1;
	while ((rc = comm_probe(c, 0, tag, &src, tag_out, bytes)) == 0) {
		nap(ms);
		ms = ms < 20 ? ms + 1 : 20;
	}
	return rc < 0 ? -1 : 0;
}

/* ---- rank 0: the hub that stores the workers' games ---------------------- */

typedef struct hub_worker {
	char name[NAME_BYTES]; /* rankN@host, from its games */
	int64_t games;         /* games received */
	int64_t positions;     /* recorded positions in them */
	double first;          /* clock_now() of its first message */
	bool stop_sent;        /* STOP sent: no more ACKs */
	bool bye;              /* BYE received: it has stopped */
} hub_worker;

typedef struct hub {
	comm *c;               /* the world; workers are ranks first.. */
	int first;             /* the first worker rank (ranks below it train) */
	FILE *log;             /* progress; NULL none */
	const char *who;       /* "sente run" or "sente selfplay" */
	bool quiet;            /* fewer lines */
	hub_worker *w;         /* [size] (entries below first unused) */
	int live;              /* workers that have not said BYE */
	uint8_t *model;        /* the MODEL message: id, then the file */
	size_t model_len;      /* its bytes */
	int64_t model_id;      /* the model workers should play */
	double t0;             /* clock_now() at the start */
	double next_progress;  /* when to print the next progress line */
	int64_t games, positions, moves; /* totals received */
	int64_t wins[3];       /* first won, second won, drawn */
	int64_t game_bytes;    /* GAME message bytes received */
	int64_t models_sent;   /* MODEL messages sent with a model */
	int64_t model_bytes;   /* their bytes */
	int failures;          /* games that could not be decoded or stored */
	uint64_t evals, batches; /* the workers' network evaluations and calls,
				  * from their BYE */
} hub;

static int hub_init(hub *h, comm *c, int first, FILE *log, const char *who, bool quiet)
{
	memset(h, 0, sizeof(*h));
	h->c = c;
	h->first = first;
	h->log = log;
	h->who = who;
	h->quiet = quiet;
	h->live = comm_size(c) - first;
	h->t0 = clock_now();
	h->next_progress = h->t0 + PROGRESS_SECONDS;
	h->w = calloc((size_t)comm_size(c), sizeof(*h->w));
	h->model = calloc(1, 8);
	h->model_len = 8;
	return h->w && h->model ? 0 : -1;
}

static void hub_free(hub *h)
{
	free(h->w);
	free(h->model);
}

/* Workers play model `id` (the file; id 0 and NULL: none) from their next
 * game on. 0, or -1 with a message. */
static int hub_set_model(hub *h, int64_t id, const char *file, char *err, size_t errlen)
{
	if (id == h->model_id && h->model_len > 8)
		return 0;
	size_t len = 0;
	uint8_t *bytes = file ? fileio_slurp(file, "model", &len, err, errlen) : NULL;
	if (file && !bytes)
		return -1;
	uint8_t *m = malloc(8 + len);
	if (!m) {
		free(bytes);
		snprintf(err, errlen, "out of memory for a %zu-byte model", len);
		return -1;
	}
	put_i64(m, id);
	if (len)
		memcpy(m + 8, bytes, len);
	free(bytes);
	free(h->model);
	h->model = m;
	h->model_len = 8 + len;
	h->model_id = id;
	return 0;
}

/* Games per second of worker `i` since its first message. */
static double worker_rate(const hub *h, int i, double now)
{
	const hub_worker *w = &h->w[i];
	return w->games && now > w->first ? (double)w->games / (now - w->first) : 0.0;
}

/* One line: games/s in all and per worker, bytes per game and model. */
static void hub_progress(hub *h, const char *what)
{
	double now = clock_now(), total = 0;
	char per[1024] = "";
	size_t used = 0;
	for (int i = h->first; i < comm_size(h->c); i++) {
		double g = worker_rate(h, i, now);
		total += g;
		if (used < sizeof(per) - 1)
			used += (size_t)snprintf(per + used, sizeof(per) - used, "%s%s %.3f",
						 i > h->first ? ", " : "", h->w[i].name[0] ? h->w[i].name : "?", g);
	}
	say(h->log, h->who,
	    "%s: %lld games from %d workers, %.3f games/s in all (%s); %.0f bytes per game, "
	    "%lld models sent (%.0f bytes each)",
	    what, (long long)h->games, comm_size(h->c) - h->first, total, per,
	    h->games ? (double)h->game_bytes / (double)h->games : 0.0, (long long)h->models_sent,
	    h->models_sent ? (double)h->model_bytes / (double)h->models_sent : 0.0);
}

/* Receives and answers one message, if one is waiting: 1 handled, 0 none,
 * -1 failed (message in err). A game goes to fn (when fn is NULL, or
 * after fn asked to stop, it is dropped: the caller stores it another
 * way); *stop_asked is set when fn returns nonzero. */
static int hub_serve(hub *h, loop_game_fn fn, void *ctx, bool *stop_asked, char *err,
		     size_t errlen)
{
	int src, tag;
	size_t bytes;
	int rc = comm_probe(h->c, COMM_ANY, COMM_ANY, &src, &tag, &bytes);
	if (rc <= 0)
		goto out;
	uint8_t *buf = malloc(bytes ? bytes : 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory for a %zu-byte message", bytes);
		return -1;
	}
	hub_worker *w = &h->w[src];
	if (!w->first)
		w->first = clock_now();
	rc = comm_recv(h->c, buf, bytes, src, tag);
	if (rc == 0 && tag == TAG_MODEL_REQ) {
		rc = comm_send(h->c, h->model, h->model_len, src, TAG_MODEL);
		if (h->model_len > 8) {
			h->models_sent++;
			h->model_bytes += (int64_t)h->model_len;
		}
	} else if (rc == 0 && tag == TAG_GAME && bytes >= GAME_HEAD) {
		game_record rec;
		char why[256];
		int64_t model = (int64_t)fileio_u64(buf);
		snprintf(w->name, sizeof(w->name), "%.*s", NAME_BYTES - 1, (const char *)buf + 8);
		if (record_decode(buf + GAME_HEAD, bytes - GAME_HEAD, &rec, why, sizeof(why)) != 0) {
			say(h->log, h->who, "a game from rank %d does not decode: %s", src, why);
			h->failures++;
		} else {
			w->games++;
			w->positions += record_full_count(&rec);
			h->games++;
			h->positions += record_full_count(&rec);
			h->moves += rec.n_moves;
			h->wins[rec.result > 0 ? 0 : rec.result < 0 ? 1 : 2]++;
			h->game_bytes += (int64_t)bytes;
			if (fn && !*stop_asked && fn(ctx, &rec, model, w->name) != 0)
				*stop_asked = true;
		}
		record_free(&rec);
		if (!w->stop_sent)
			rc = comm_send(h->c, h->model, 8, src, TAG_ACK);
	} else if (rc == 0 && tag == TAG_BYE) {
		/* Its evaluations and network calls, when it sent them. */
		if (bytes >= 16) {
			h->evals += fileio_u64(buf);
			h->batches += fileio_u64(buf + 8);
		}
		w->bye = true;
		h->live--;
		if (!w->stop_sent) {
			w->stop_sent = true;
			rc = comm_send(h->c, NULL, 0, src, TAG_STOP);
		}
	} else if (rc == 0) {
		free(buf);
		snprintf(err, errlen, "rank %d sent an unknown message (tag %d, %zu bytes)", src, tag,
			 bytes);
		return -1;
	}
	free(buf);
	if (rc == 0)
		return 1;
out:
	if (rc < 0)
		snprintf(err, errlen, "%s", comm_error(h->c));
	return rc;
}

/* Serves until `games` more games have come (0: no limit), `seconds`
 * have passed (0: no limit), fn asks to stop, *stop is set, or every
 * worker has left (then *stop is set). The games delivered, or -1. */
static int64_t hub_play(hub *h, int64_t games, double seconds, loop_game_fn fn, void *ctx,
			volatile sig_atomic_t *stop, char *err, size_t errlen)
{
	double t_end = seconds > 0 ? clock_now() + seconds : 0;
	int64_t start = h->games;
	bool stop_asked = false;
	int ms = 1;
	while (!(games > 0 && h->games - start >= games) && !(t_end > 0 && clock_now() >= t_end) &&
	       !stop_asked && !(stop && *stop)) {
		if (h->live == 0) {
			say(h->log, h->who, "every self-play rank has stopped: stopping");
			if (stop)
				*stop = 1;
			break;
		}
		int rc = hub_serve(h, fn, ctx, &stop_asked, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			nap(ms);
			ms = ms < 5 ? ms + 1 : 5;
		} else {
			ms = 1;
		}
		if (!h->quiet && clock_now() >= h->next_progress) {
			h->next_progress = clock_now() + PROGRESS_SECONDS;
			hub_progress(h, "self-play");
		}
	}
	return h->games - start;
}

/* After the work: STOP to every worker, then their last games (stored
 * through fn, e.g. straight into the store) until each has said BYE. */
static int hub_drain(hub *h, loop_game_fn fn, void *ctx, char *err, size_t errlen)
{
	for (int i = h->first; i < comm_size(h->c); i++)
		if (!h->w[i].stop_sent) {
			h->w[i].stop_sent = true;
			if (comm_send(h->c, NULL, 0, i, TAG_STOP) != 0) {
				snprintf(err, errlen, "%s", comm_error(h->c));
				return -1;
			}
		}
	bool stop_asked = false;
	while (h->live > 0) {
		int rc = hub_serve(h, fn, ctx, &stop_asked, err, errlen);
		if (rc < 0)
			return -1;
		if (rc == 0)
			nap(2);
	}
	return 0;
}

/* The per-worker and total rates as metrics at `step`, for the report. */
static void hub_metrics(hub *h, store *db, int64_t step)
{
	double now = clock_now(), total = 0;
	for (int i = h->first; i < comm_size(h->c); i++) {
		char name[64];
		double g = worker_rate(h, i, now);
		total += g;
		snprintf(name, sizeof(name), "selfplay_games_per_s/rank%d", i);
		store_add_metric(db, step, name, g);
	}
	store_add_metric(db, step, "selfplay_games_per_s", total);
}

/* ---- rank 0 of `sente run`: the loop's game source ------------------------ */

typedef struct run_hub {
	hub h;
	char err[512];  /* hub_play's failure */
	int64_t seen;   /* games at the last progress line */
} run_hub;

static int64_t run_play(void *ctx, int64_t games, double seconds, loop_game_fn fn, void *fn_ctx,
			volatile sig_atomic_t *stop)
{
	run_hub *rh = ctx;
	int64_t n = hub_play(&rh->h, games, seconds, fn, fn_ctx, stop, rh->err, sizeof(rh->err));
	if (n < 0)
		say(rh->h.log, rh->h.who, "%s", rh->err);
	return n;
}

static int run_model(void *ctx, store *db, int64_t model_id, int64_t step, char *err,
		     size_t errlen)
{
	run_hub *rh = ctx;
	char file[4096];
	if (store_model_file(db, model_id, file, sizeof(file)) != 0) {
		snprintf(err, errlen, "model %lld: %s", (long long)model_id, store_errmsg(db));
		return -1;
	}
	if (hub_set_model(&rh->h, model_id, file, err, errlen) != 0)
		return -1;
	if (rh->h.games > rh->seen) {
		hub_metrics(&rh->h, db, step);
		if (!rh->h.quiet)
			hub_progress(&rh->h, "workers");
		rh->seen = rh->h.games;
	}
	return 0;
}

/* Games into a store, one transaction each: rank 0 of `sente selfplay`,
 * and of `sente run` for the games that come after its loop has closed. */
typedef struct game_sink {
	hub *h;           /* for its log */
	store *db;        /* where games go; NULL: dropped, counted as failed */
	int64_t stored;   /* games stored */
	int failures;     /* games that could not be */
	int max_failures; /* stop after this many; 0: never */
	int64_t positions, moves, wins[3]; /* of the games stored */
	int64_t limit;    /* store at most this many (--games); 0: no limit */
	int64_t dropped;  /* finished beyond the limit, not stored */
} game_sink;

static int sink_game(void *ctx, const game_record *r, int64_t model_id, const char *worker)
{
	game_sink *k = ctx;
	int64_t id;
	if (k->limit > 0 && k->stored >= k->limit) {
		k->dropped++;
		return 0;
	}
	if (k->db && store_add_game(k->db, model_id, worker, r, &id) == 0) {
		k->stored++;
		k->positions += record_full_count(r);
		k->moves += r->n_moves;
		k->wins[r->result > 0 ? 0 : r->result < 0 ? 1 : 2]++;
		return 0;
	}
	if (k->db)
		say(k->h->log, k->h->who, "storing a game failed: %s", store_errmsg(k->db));
	return ++k->failures == k->max_failures;
}

/* Rank 0 after its own work: the workers' last games into db_path. */
static int hub_finish(hub *h, const char *db_path, char *err, size_t errlen)
{
	game_sink k = { .h = h };
	char why[512];
	k.db = store_open_ex(db_path, 0, why, sizeof(why));
	if (!k.db)
		say(h->log, h->who, "%s", why);
	int rc = hub_drain(h, sink_game, &k, err, errlen);
	store_close(k.db);
	if (k.stored || k.failures)
		say(h->log, h->who, "%lld games that finished at the end stored, %d lost",
		    (long long)k.stored, k.failures);
	hub_progress(h, "done"); /* the session's rates, even when quiet */
	return rc;
}

/* ---- a worker rank ---------------------------------------------------------- */

typedef struct worker_rank {
	comm *c;                     /* the world */
	selfplay_options so;         /* the games (game settled on the first model) */
	bool game_fixed;             /* a model of another game is refused */
	selfplay *sp;                /* made on the first model */
	char name[NAME_BYTES];       /* rankN@host */
	int64_t model_id;            /* the model in use */
	bool stopped;                /* STOP received */
	int taken;                   /* models taken after the first */
	FILE *log;                   /* messages; NULL none */
	const char *who;             /* the command */
	char err[512];               /* the callback's failure */
	bool failed;                 /* a step failed */
} worker_rank;

/* Asks rank 0 for its model and plays it from the next game on (the
 * first time: settles the game and makes the workers). 0, or -1. */
static int take_model(worker_rank *k)
{
	size_t bytes;
	int tag;
	if (comm_send(k->c, NULL, 0, 0, TAG_MODEL_REQ) != 0 ||
	    wait_from_zero(k->c, TAG_MODEL, &tag, &bytes) != 0) {
		snprintf(k->err, sizeof(k->err), "%s", comm_error(k->c));
		return -1;
	}
	uint8_t *buf = malloc(bytes);
	if (!buf || comm_recv(k->c, buf, bytes, 0, TAG_MODEL) != 0 || bytes < 8) {
		snprintf(k->err, sizeof(k->err), "the model from rank 0: %s",
			 buf ? comm_error(k->c) : "out of memory");
		free(buf);
		return -1;
	}
	int64_t id = (int64_t)fileio_u64(buf);
	nn_net *net = NULL;
	int rc = -1;
	if (bytes > 8) {
		nn_expect want = { .game = k->sp ? (int)k->so.game.kind : -1 };
		net = nn_net_load_mem(buf + 8, bytes - 8, &want, k->err, sizeof(k->err));
		if (!net)
			goto out;
	}
	if (!k->sp) {
		game_params gp = k->so.game;
		if (net && k->game_fixed && net->arch.game != gp.kind) {
			snprintf(k->err, sizeof(k->err), "the model plays %s, not %s",
				 game_kind_name(net->arch.game), game_kind_name(gp.kind));
			goto out;
		}
		if (net) {
			gp = game_params_sized(net->arch.game, net->arch.board_w, gp.komi);
			selfplay_take_sizes(&k->so, &net->arch);
		}
		k->so.game = game_params_sized(gp.kind, gp.size, gp.komi);
		selfplay_explore_settle(&k->so.explore, &k->so.game);
		k->sp = selfplay_new(&k->so, k->err, sizeof(k->err));
		if (!k->sp)
			goto out;
	} else {
		k->taken++;
	}
	if (selfplay_set_model(k->sp, net, id, k->err, sizeof(k->err)) != 0)
		goto out;
	k->model_id = id;
	rc = 0;
out:
	nn_net_free(net);
	free(buf);
	return rc;
}

/* selfplay_game_fn: the game to rank 0, then its answer: go on (with a
 * newer model when it names one) or stop. */
static int worker_game(void *ctx, const game_record *r, int64_t model_id)
{
	worker_rank *k = ctx;
	uint8_t *blob = NULL, *msg = NULL;
	size_t len = 0, bytes;
	int tag, rc = 1;
	if (k->stopped || k->failed)
		return 1;
	if (record_encode(r, &blob, &len) != 0 || !(msg = calloc(1, GAME_HEAD + len))) {
		snprintf(k->err, sizeof(k->err), "out of memory for a game record");
		goto fail;
	}
	put_i64(msg, model_id);
	memcpy(msg + 8, k->name, strlen(k->name));
	memcpy(msg + GAME_HEAD, blob, len);
	uint8_t ack[8];
	if (comm_send(k->c, msg, GAME_HEAD + len, 0, TAG_GAME) != 0 ||
	    wait_from_zero(k->c, COMM_ANY, &tag, &bytes) != 0) {
		snprintf(k->err, sizeof(k->err), "%s", comm_error(k->c));
		goto fail;
	}
	if (tag == TAG_STOP) {
		comm_recv(k->c, NULL, 0, 0, TAG_STOP);
		k->stopped = true;
	} else if (tag != TAG_ACK || bytes != 8 || comm_recv(k->c, ack, 8, 0, TAG_ACK) != 0) {
		snprintf(k->err, sizeof(k->err), "rank 0 answered a game with tag %d (%zu bytes)", tag,
			 bytes);
		goto fail;
	} else {
		int64_t newest = (int64_t)fileio_u64(ack);
		rc = 0;
		/* No line per model and worker: rank 0's progress counts them. */
		if (newest != k->model_id && take_model(k) != 0)
			goto fail;
	}
	free(blob);
	free(msg);
	return rc;
fail:
	k->failed = true;
	free(blob);
	free(msg);
	return 1;
}

/* A worker rank: the first model, games until STOP (or *stop), BYE.
 * 0, or -1 (message on the log). */
static int worker_main(comm *c, const selfplay_options *so, bool game_fixed, const char *name,
		       FILE *log, const char *who, volatile sig_atomic_t *stop)
{
	worker_rank k = { .c = c, .so = *so, .game_fixed = game_fixed, .log = log, .who = who };
	char host[64] = "host", why[256];
	gethostname(host, sizeof(host) - 1);
	if (name)
		snprintf(k.name, sizeof(k.name), "%.40s-rank%d", name, comm_rank(c));
	else
		snprintf(k.name, sizeof(k.name), "rank%d@%.40s", comm_rank(c), host);
	/* Its own seed, and its GPU: --gpus[local rank], shared round robin
	 * when the machine has more ranks than GPUs; the CPU when it has none. */
	k.so.seed = so->seed * 7919 + (uint64_t)comm_rank(c) * 104729;
	nn_backend_options *nn = &k.so.nn;
	int local = 0;
	if (gpu_for_local_rank(NULL, 0, &local, why, sizeof(why)) != 0)
		local = 0;
	if (nn->kind != NN_BACKEND_CPU && nn_cuda_device_count() == 0) {
		if (nn->kind == NN_BACKEND_CUDA && log)
			say(log, who, "%s: no CUDA device here: self-play on the CPU", k.name);
		nn->kind = NN_BACKEND_CPU;
		nn->n_gpus = 0;
	} else if (nn->kind != NN_BACKEND_CPU) {
		int dev = nn->n_gpus ? nn->gpus[local % nn->n_gpus] : local % nn_cuda_device_count();
		nn->gpus[0] = dev;
		nn->n_gpus = 1;
	}
	k.so.progress_seconds = 0;
	k.so.json = false;
	k.so.quiet = true;
	int rc = -1;
	if (take_model(&k) != 0)
		goto out;
	if (log && !so->quiet) {
		char what[256];
		selfplay_backend(k.sp, what, sizeof(what));
		say(log, who, "%s (pid %d): %d games at once, %d/%d visits, %s, model %lld", k.name,
		    (int)getpid(), k.so.parallel_games, k.so.visits, k.so.cheap_visits, what,
		    (long long)k.model_id);
	}
	int64_t n = selfplay_run(k.sp, 0, 0, worker_game, &k, stop);
	if (n < 0 && !k.failed) {
		snprintf(k.err, sizeof(k.err), "self-play failed");
		k.failed = true;
	}
	rc = k.failed ? -1 : 0;
	if (log && !so->quiet) {
		selfplay_stats st;
		selfplay_get_stats(k.sp, &st);
		say(log, who, "%s: %lld games in %.0f s (%.3f games/s), %d newer models taken", k.name,
		    (long long)st.games, st.seconds, st.seconds > 0 ? st.games / st.seconds : 0.0,
		    k.taken);
	}
out:
	if (rc != 0) {
		say(log, who, "%s: %s", k.name, k.err);
		/* Rank 0 would wait for this rank's BYE: end the job. */
		comm_abort(c, 1);
	}
	/* BYE with this rank's evaluations and network calls, then rank 0's
	 * one STOP (unless it came already). */
	size_t bytes;
	int tag;
	uint8_t bye[16] = { 0 };
	if (k.sp) {
		selfplay_stats st;
		selfplay_get_stats(k.sp, &st);
		put_i64(bye, (int64_t)st.evals);
		put_i64(bye + 8, (int64_t)st.batches);
	}
	if (comm_send(c, bye, sizeof(bye), 0, TAG_BYE) != 0 ||
	    (!k.stopped && (wait_from_zero(c, TAG_STOP, &tag, &bytes) != 0 ||
			    comm_recv(c, NULL, 0, 0, TAG_STOP) != 0)))
		rc = -1;
	selfplay_free(k.sp);
	return rc;
}

/* ---- the entry points ------------------------------------------------------- */

/* The world when this process is one rank of several; NULL with *single
 * true when alone, or NULL with a message. */
static comm *open_world(bool *single, char *err, size_t errlen)
{
	*single = false;
	if (!comm_launched_by_mpi()) {
		*single = true;
		return NULL;
	}
	comm *c = comm_new_world(err, errlen);
	if (c && comm_size(c) == 1) {
		comm_free(c);
		*single = true;
		return NULL;
	}
	return c;
}

int loop_run_ranks(const loop_options *o, comm *c, comm *learners, char *err, size_t errlen)
{
	int rc = -1, first = o->learner_ranks > 1 ? o->learner_ranks : 1;
	if (first >= comm_size(c)) {
		snprintf(err, errlen, "--learner-ranks %d leaves no self-play rank among %d", first,
			 comm_size(c));
		return -1;
	}
	if (first > 1 && o->batch % first != 0) {
		snprintf(err, errlen, "--batch %d does not split evenly over --learner-ranks %d",
			 o->batch, first);
		return -1;
	}
	if (first > 1 && comm_rank(c) < first && (!learners || comm_size(learners) != first)) {
		snprintf(err, errlen, "the learner ranks' comm is missing or of the wrong size");
		return -1;
	}
	if (comm_rank(c) >= first) {
		selfplay_options so = loop_selfplay_options(o);
		rc = worker_main(c, &so, true, NULL, o->log, "sente run", o->stop);
		if (rc != 0)
			snprintf(err, errlen, "self-play rank %d failed", comm_rank(c));
		return rc;
	}
	if (comm_rank(c) != 0) {
		rc = learner_follow(learners, &learner_cpu, err, errlen);
		if (rc != 0) {
			say(o->log, "sente run", "%s", err);
			comm_abort(c, 1);
		}
		return rc;
	}
	run_hub rh;
	if (hub_init(&rh.h, c, first, o->log, "sente run", o->quiet) != 0) {
		snprintf(err, errlen, "out of memory");
		comm_abort(c, 1);
		hub_free(&rh.h);
		return -1;
	}
	rh.seen = 0;
	rh.err[0] = '\0';
	loop_game_source src = { run_play, run_model, &rh };
	loop_options lo = *o;
	lo.source = &src;
	lo.learners = first > 1 ? learners : NULL;
	if (first > 1)
		say(o->log, "sente run", "%d ranks: ranks 0-%d train (rank 0 also stores), %d play",
		    comm_size(c), first - 1, comm_size(c) - first);
	else
		say(o->log, "sente run", "%d ranks: rank 0 trains and stores, %d play", comm_size(c),
		    comm_size(c) - 1);
	rc = loop_run(&lo, err, errlen);
	if (rc != 0) {
		/* What was committed stays; the other ranks cannot go on. */
		say(o->log, "sente run", "%s", err);
		comm_abort(c, 1);
	}
	char path[4200], why[512] = "";
	snprintf(path, sizeof(path), "%s/sente.db", o->dir);
	if (hub_finish(&rh.h, path, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s", why);
		rc = -1;
	}
	hub_free(&rh.h);
	return rc;
}

int loop_run_main(const loop_options *o, char *err, size_t errlen)
{
	bool single;
	comm *c = open_world(&single, err, errlen);
	if (single) {
		if (o->learner_ranks > 1) {
			snprintf(err, errlen, "--learner-ranks %d needs mpirun (or srun) with more ranks",
				 o->learner_ranks);
			return -1;
		}
		return loop_run(o, err, errlen);
	}
	if (!c)
		return -1;
	comm *learners = NULL;
	int first = o->learner_ranks > 1 ? o->learner_ranks : 1;
	if (first > 1 && first < comm_size(c)) {
		/* Every rank takes part in the split; the workers' part is not used. */
		comm *part = comm_split(c, comm_rank(c) < first ? 0 : 1, comm_rank(c), err, errlen);
		if (!part) {
			comm_abort(c, 1);
			comm_free(c);
			return -1;
		}
		if (comm_rank(c) < first)
			learners = part;
		else
			comm_free(part);
	}
	int rc = loop_run_ranks(o, c, learners, err, errlen);
	comm_free(learners);
	comm_free(c);
	return rc;
}

/* `sente selfplay`'s rank 0: the hub and the store it fills. */
typedef struct selfplay_hub {
	hub h;
	game_sink sink; /* the database */
} selfplay_hub;

/* The model workers should play: -w FILE, else the store's newest. */
static int selfplay_model(selfplay_hub *sh, const selfplay_worker_options *o, char *err,
			  size_t errlen)
{
	int64_t id = 0, step;
	char file[4096];
	if (o->weights)
		return hub_set_model(&sh->h, 0, o->weights, err, errlen);
	if (store_latest_model(sh->sink.db, &id, file, sizeof(file), &step) != 1 || id == sh->h.model_id)
		return 0;
	if (hub_set_model(&sh->h, id, file, err, errlen) != 0)
		return -1;
	say(sh->h.log, sh->h.who, "workers play model %lld (%s) from their next game", (long long)id,
	    file);
	return 0;
}

static int selfplay_rank0(comm *c, const char *db_path, const selfplay_worker_options *o,
			  selfplay_worker_result *out)
{
	char err[512] = "";
	selfplay_hub sh = { .sink = { .h = &sh.h, .max_failures = o->max_store_failures > 0 ?
							     o->max_store_failures : 3,
				      .limit = o->games } };
	bool quiet = o->play.quiet;
	if (hub_init(&sh.h, c, 1, o->log, "sente selfplay", quiet) != 0 ||
	    !(sh.sink.db = store_open(db_path, err, sizeof(err))) ||
	    selfplay_model(&sh, o, err, sizeof(err)) != 0) {
		say(o->log, "sente selfplay", "%s", err[0] ? err : "out of memory");
		comm_abort(c, 1);
	}
	say(o->log, "sente selfplay", "%d ranks: rank 0 stores into %s, %d play", comm_size(c), db_path,
	    comm_size(c) - 1);
	double t_end = o->seconds > 0 ? clock_now() + o->seconds : 0;
	int rc = 0;
	volatile sig_atomic_t *stop = o->stop;
	while (!(stop && *stop) && !(o->games > 0 && sh.h.games >= o->games) &&
	       sh.sink.failures < sh.sink.max_failures) {
		double slice = o->poll_seconds > 0 ? o->poll_seconds : 10;
		if (t_end > 0) {
			double left = t_end - clock_now();
			if (left <= 0)
				break;
			slice = left < slice ? left : slice;
		}
		if (hub_play(&sh.h, o->games > 0 ? o->games - sh.h.games : 0, slice, sink_game, &sh.sink,
			     stop, err, sizeof(err)) < 0 ||
		    selfplay_model(&sh, o, err, sizeof(err)) != 0) {
			say(o->log, "sente selfplay", "%s", err);
			rc = -1;
			break;
		}
	}
	/* The last games go through the same store, up to --games: the
	 * workers' games under way when the last one asked for came in
	 * finish, and are not stored. */
	if (hub_drain(&sh.h, sink_game, &sh.sink, err, sizeof(err)) != 0) {
		say(o->log, "sente selfplay", "%s", err);
		rc = -1;
	}
	if (sh.sink.dropped)
		say(o->log, "sente selfplay",
		    "%lld games that finished after the %lld asked for were not stored",
		    (long long)sh.sink.dropped, (long long)o->games);
	hub_progress(&sh.h, "done");
	if (out) {
		out->started = true;
		out->stats.games = sh.sink.stored;
		out->stats.evals = sh.h.evals;
		out->stats.batches = sh.h.batches;
		out->stats.positions = sh.sink.positions;
		out->stats.moves = sh.sink.moves;
		memcpy(out->stats.wins, sh.sink.wins, sizeof(sh.sink.wins));
		out->stats.seconds = clock_now() - sh.h.t0;
		out->model_id = sh.h.model_id;
		out->store_failures = sh.sink.failures;
	}
	store_close(sh.sink.db);
	hub_free(&sh.h);
	return rc == 0 && sh.sink.failures == 0 ? SELFPLAY_WORKER_OK : SELFPLAY_WORKER_FAILED;
}

int loop_selfplay_ranks(comm *c, const char *db_path, const selfplay_worker_options *o,
			selfplay_worker_result *out)
{
	if (out)
		memset(out, 0, sizeof(*out));
	if (comm_rank(c) == 0)
		return selfplay_rank0(c, db_path, o, out);
	return worker_main(c, &o->play, o->game_fixed, o->name, o->log, "sente selfplay", o->stop) == 0
		       ? SELFPLAY_WORKER_OK
		       : SELFPLAY_WORKER_FAILED;
}

int loop_selfplay_main(const char *db_path, const selfplay_worker_options *o,
		       selfplay_worker_result *out)
{
	char err[512];
	bool single;
	if (out)
		memset(out, 0, sizeof(*out));
	comm *c = open_world(&single, err, sizeof(err));
	if (single) {
		store *db = store_open(db_path, err, sizeof(err));
		if (!db) {
			say(o->log, "sente selfplay", "%s", err);
			return SELFPLAY_WORKER_FAILED;
		}
		int rc = selfplay_worker_run(db, o, out);
		store_close(db);
		return rc;
	}
	if (!c) {
		say(o->log, "sente selfplay", "%s", err);
		return SELFPLAY_WORKER_FAILED;
	}
	int rc = loop_selfplay_ranks(c, db_path, o, out);
	comm_free(c);
	return rc;
}
