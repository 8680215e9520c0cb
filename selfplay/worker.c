/* worker.c: self-play into a store (see worker.h). */
#include "engine/game_desc.h"
#include "selfplay/worker.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"

typedef struct worker {
	const selfplay_worker_options *o;
	store *db;            /* where games go */
	selfplay *sp;         /* to swap models */
	char name[128];       /* stored with each game */
	bool follow;          /* pick up newer models from the store */
	int64_t model_id;     /* the model in use */
	double next_poll;     /* when to look for a newer model */
	game_params game;     /* what is played */
	int failures;         /* store writes that failed */
	int taken;            /* newer models taken up */
	progress prog;        /* the progress line on the log (not when quiet) */
} worker;

static void worker_log(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void worker_log(worker *w, const char *fmt, ...)
{
	if (!w->o->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("sente selfplay: ", w->o->log);
	vfprintf(w->o->log, fmt, ap);
	va_end(ap);
	fputc('\n', w->o->log);
	fflush(w->o->log);
}

selfplay_worker_options selfplay_worker_options_default(void)
{
	selfplay_worker_options o;
	memset(&o, 0, sizeof(o));
	game_params gp = game_desc_by_name("connect4")->defaults;
	o.play = selfplay_options_default(&gp);
	/* The game's schedule, once the game is known (open_selfplay). */
	o.play.explore.temperature_moves = -1;
	o.play.explore.temperature_end = -1;
	o.play.explore.temperature_floor = -1;
	o.play.explore.cpuct = -1;
	o.play.explore.random_opening = -1;
	o.poll_seconds = 10;
	o.max_store_failures = 3;
	return o;
}

/* Loads model `id` (its file) from the store and hands it to self-play. */
static int take_model(worker *w, int64_t id, const char *file, char *err, size_t errlen)
{
	nn_expect want = { .game = (int)w->game.kind };
	nn_net *net = nn_net_load_any(file, &want, err, errlen);
	if (!net)
		return -1;
	int rc = selfplay_set_model(w->sp, net, id, err, errlen);
	nn_net_free(net);
	if (rc == 0)
		w->model_id = id;
	return rc;
}

/* Between games: a newer model registered in the store is taken up. */
static void poll_model(worker *w)
{
	int64_t latest, step;
	char file[4096], err[512];
	w->next_poll = clock_now() + w->o->poll_seconds;
	if (store_latest_model(w->db, &latest, file, sizeof(file), &step) != 1 || latest == w->model_id)
		return;
	if (take_model(w, latest, file, err, sizeof(err)) == 0) {
		w->taken++;
		worker_log(w, "now playing with model %lld (%s)", (long long)latest, file);
	} else {
		worker_log(w, "model %lld not taken: %s", (long long)latest, err);
	}
}

/* selfplay_game_fn: one transaction per game; stops the run after
 * max_store_failures failed writes. */
static int on_game(void *ctx, const game_record *r, int64_t model_id)
{
	worker *w = ctx;
	int64_t id;
	if (store_add_game(w->db, model_id, w->name, r, &id) != 0) {
		worker_log(w, "storing a game failed: %s", store_errmsg(w->db));
		return ++w->failures >= w->o->max_store_failures;
	}
	if (w->follow && clock_now() >= w->next_poll)
		poll_model(w);
	return 0;
}

/* The first model: the file, else the store's newest (then followed), else
 * none (followed: one may be registered later). *net NULL when none; file
 * (len bytes) names it. 0, or -1 with a message. */
static int open_model(worker *w, nn_net **net, char *file, size_t len, char *err, size_t errlen)
{
	const selfplay_worker_options *o = w->o;
	char why[448];
	int64_t step;
	*net = NULL;
	file[0] = '\0';
	w->follow = !o->weights;
	if (o->weights) {
		snprintf(file, len, "%s", o->weights);
		*net = nn_net_load_any(o->weights, NULL, err, errlen);
		return *net ? 0 : -1;
	}
	int64_t id = 0;
	if (store_latest_model(w->db, &id, file, len, &step) != 1)
		return 0;
	w->model_id = id;
	*net = nn_net_load_any(file, NULL, why, sizeof(why));
	if (!*net)
		snprintf(err, errlen, "model %lld: %s", (long long)w->model_id, why);
	return *net ? 0 : -1;
}

/* The game settled on from what was asked for and the model's (see
 * selfplay_worker_options.play). 0, or -1 with a message. */
static int settle_game(worker *w, const nn_net *net, char *err, size_t errlen)
{
	game_params gp = w->o->play.game;
	if (net) {
		if (w->o->game_fixed && net->arch.game != gp.kind) {
			snprintf(err, errlen, "the model plays %s, not %s",
				 game_kind_name(net->arch.game), game_kind_name(gp.kind));
			return -1;
		}
		gp = game_params_sized(net->arch.game, net->arch.board_w, gp.komi);
	}
	gp = game_params_sized(gp.kind, gp.size, gp.komi);
	w->game = gp;
	return 0;
}

/* The self-play workers on the settled game, with the first model. */
static int open_selfplay(worker *w, const nn_net *net, char *err, size_t errlen)
{
	selfplay_options so = w->o->play;
	so.game = w->game;
	so.progress = &w->prog;
	if (net)
		selfplay_take_sizes(&so, &net->arch);
	selfplay_explore_settle(&so.explore, &w->game);
	w->sp = selfplay_new(&so, err, errlen);
	if (!w->sp)
		return -1;
	return net ? selfplay_set_model(w->sp, net, w->model_id, err, errlen) : 0;
}

static void set_name(worker *w)
{
	if (w->o->name) {
		snprintf(w->name, sizeof(w->name), "%s", w->o->name);
		return;
	}
	char host[64] = "host";
	gethostname(host, sizeof(host) - 1);
	snprintf(w->name, sizeof(w->name), "%s-%d", host, (int)getpid());
}

int selfplay_worker_run(store *db, const selfplay_worker_options *o, selfplay_worker_result *out)
{
	worker w = { .o = o, .db = db };
	selfplay_worker_result res;
	memset(&res, 0, sizeof(res));
	char err[512], file[4096];
	nn_net *net = NULL;
	int rc = SELFPLAY_WORKER_FAILED;
	set_name(&w);
	/* Against --minutes and --games, whichever ends first. */
	progress_init(&w.prog, o->log && !o->play.quiet ? o->log : NULL, o->seconds, (double)o->games);
	if (open_model(&w, &net, file, sizeof(file), err, sizeof(err)) != 0 ||
	    settle_game(&w, net, err, sizeof(err)) != 0 || open_selfplay(&w, net, err, sizeof(err)) != 0) {
		worker_log(&w, "%s", err);
		goto out;
	}
	w.next_poll = clock_now() + o->poll_seconds;
	if (!o->play.quiet) {
		char what[256];
		selfplay_backend(w.sp, what, sizeof(what));
		worker_log(&w, "%s, %d games at once, %d/%d visits, backend %s, %s",
			   game_kind_name(w.game.kind), o->play.parallel_games, o->play.visits,
			   o->play.cheap_visits, net ? what : "none",
			   net ? file : "no model: uniform policy");
	}
	int64_t done = selfplay_run(w.sp, o->games, o->seconds, on_game, &w, o->stop);
	progress_clear(&w.prog);
	res.started = true;
	selfplay_get_stats(w.sp, &res.stats);
	res.game = w.game;
	res.model_id = w.model_id;
	res.models_taken = w.taken;
	res.store_failures = w.failures;
	rc = done >= 0 && w.failures == 0 ? SELFPLAY_WORKER_OK : SELFPLAY_WORKER_FAILED;
out:
	if (out)
		*out = res;
	selfplay_free(w.sp);
	nn_net_free(net);
	return rc;
}
