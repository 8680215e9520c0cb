/* harness.c: the honest harness (harness.h). */
#include "loop/harness.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/fileio.h"
#include "engine/game_desc.h"
#include "loop/measure.h"
#include "loop/report.h"
#include "match/match.h"
#include "nn/net.h"
#include "selfplay/strength.h"

/* ---- a run's models, compute and evaluations -------------------------------- */

typedef struct hmodel {
	int64_t id;        /* models.id */
	int64_t step;      /* learner step */
	char file[4096];   /* the model file */
	store_compute c;   /* compute to reach it; cpu_seconds NAN when unknown */
} hmodel;

typedef struct hrow {
	int64_t model_id;  /* the model */
	char method[64];   /* as stored */
	char part[32];     /* a set's name, or "all" */
	int n;             /* positions or games */
	double value;      /* error rate or win rate */
} hrow;

typedef struct hrun {
	hmodel *m;         /* by id */
	int nm, capm;
	hrow *r;           /* by model, then method */
	int nr, capr;
} hrun;

static void hrun_free(hrun *h)
{
	free(h->m);
	free(h->r);
	memset(h, 0, sizeof(*h));
}

/* Grows *p (elements of `size`) to hold one more. 0, or -1. */
static int grow(void **p, int n, int *cap, size_t size)
{
	if (n < *cap)
		return 0;
	int c = *cap ? 2 * *cap : 64;
	void *q = realloc(*p, size * (size_t)c);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int on_model(void *ctx, const store_model *m)
{
	hrun *h = ctx;
	if (grow((void **)&h->m, h->nm, &h->capm, sizeof(*h->m)) != 0)
		return 1;
	hmodel *x = &h->m[h->nm++];
	memset(x, 0, sizeof(*x));
	x->id = m->id;
	x->step = m->train_step;
	snprintf(x->file, sizeof(x->file), "%s", m->file);
	return 0;
}

static int on_row(void *ctx, const store_evaluation *e)
{
	hrun *h = ctx;
	if (grow((void **)&h->r, h->nr, &h->capr, sizeof(*h->r)) != 0)
		return 1;
	hrow *x = &h->r[h->nr++];
	x->model_id = e->model_id;
	snprintf(x->method, sizeof(x->method), "%s", e->method);
	snprintf(x->part, sizeof(x->part), "%s", e->part);
	x->n = e->n;
	x->value = e->value;
	return 0;
}

/* Self-play and training seconds by step, as the loop's metrics give
 * them: the compute of models registered before model_compute existed. */
typedef struct hsum {
	int64_t step[2][1 << 14]; /* a metric's steps ... */
	double v[2][1 << 14];     /* ... and values */
	int n[2];
	int which;                /* the metric being read */
} hsum;

static int on_sum(void *ctx, int64_t step, double t, double value)
{
	hsum *s = ctx;
	int w = s->which;
	if (s->n[w] == (int)(sizeof(s->v[w]) / sizeof(s->v[w][0])))
		return 1;
	s->step[w][s->n[w]] = step;
	s->v[w][s->n[w]++] = value;
	return 0;
}

/* A model's compute from the metrics: the self-play and training seconds
 * of every iteration up to its step; CPU seconds and evaluations unknown. */
static void compute_from_metrics(const hsum *s, hmodel *m)
{
	m->c.seconds = 0;
	for (int w = 0; w < 2; w++)
		for (int i = 0; i < s->n[w]; i++)
			if (s->step[w][i] <= m->step)
				m->c.seconds += s->v[w][i];
	m->c.cpu_seconds = NAN;
	m->c.evals = -1;
}

/* A run's models with their compute, and its evaluations. 0, or -1. */
static int hrun_load(store *db, hrun *h, char *err, size_t errlen)
{
	memset(h, 0, sizeof(*h));
	hsum *sum = NULL;
	if (store_list_models(db, on_model, h) < 0 || store_evaluations(db, 0, NULL, on_row, h) < 0) {
		snprintf(err, errlen, "%s", store_errmsg(db));
		goto fail;
	}
	for (int i = 0; i < h->nm; i++) {
		int have = store_model_compute(db, h->m[i].id, &h->m[i].c);
		if (have < 0) {
			snprintf(err, errlen, "%s", store_errmsg(db));
			goto fail;
		}
		if (have)
			continue;
		if (!sum) {
			sum = calloc(1, sizeof(*sum));
			if (!sum) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			const char *names[2] = { "selfplay_seconds", "train_seconds" };
			for (sum->which = 0; sum->which < 2; sum->which++)
				store_metrics(db, names[sum->which], on_sum, sum);
		}
		compute_from_metrics(sum, &h->m[i]);
	}
	free(sum);
	return 0;
fail:
	free(sum);
	hrun_free(h);
	return -1;
}

/* A model's place on the axis, in seconds (NAN: unknown). */
static double axis_seconds(const hmodel *m, harness_axis axis)
{
	return axis == HARNESS_AXIS_CPU ? m->c.cpu_seconds : m->c.seconds;
}

/* The row of model `id`, method and part, or NULL. */
static const hrow *find_row(const hrun *h, int64_t id, const char *method, const char *part)
{
	for (int i = 0; i < h->nr; i++)
		if (h->r[i].model_id == id && !strcmp(h->r[i].method, method) &&
		    !strcmp(h->r[i].part, part))
			return &h->r[i];
	return NULL;
}

/* The distinct methods of a run's rows, in first-seen order. */
static int methods_of(const hrun *h, char (*out)[64], int max)
{
	int n = 0;
	for (int i = 0; i < h->nr; i++) {
		int k;
		for (k = 0; k < n && strcmp(out[k], h->r[i].method); k++)
			;
		if (k == n && n < max)
			snprintf(out[n++], 64, "%s", h->r[i].method);
	}
	return n;
}

/* ---- measuring ------------------------------------------------------------ */

harness_options harness_options_default(void)
{
	harness_options o;
	memset(&o, 0, sizeof(o));
	o.visits = 200;
	o.positions = 0;
	o.every = -1;
	o.axis = HARNESS_AXIS_CPU;
	o.gnugo_level = 1;
	o.games = 20;
	o.regress_minutes = 20;
	snprintf(o.gnugo, sizeof(o.gnugo), "gnugo");
	return o;
}

static void say(const harness_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const harness_options *o, const char *fmt, ...)
{
	if (!o->log || o->quiet)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("sente eval: ", o->log);
	vfprintf(o->log, fmt, ap);
	va_end(ap);
	fputc('\n', o->log);
	fflush(o->log);
}

static bool stopped(const harness_options *o)
{
	return o->stop && *o->stop;
}

/* GNU Go's program: `name` when it holds a '/', else found on PATH or in
 * /usr/games. 0, or -1 with a message. */
static int find_gnugo(const char *name, char *path, size_t len, char *err, size_t errlen)
{
	if (strchr(name, '/')) {
		snprintf(path, len, "%s", name);
		if (access(path, X_OK) == 0)
			return 0;
	} else {
		const char *env = getenv("PATH");
		char dirs[8192];
		snprintf(dirs, sizeof(dirs), "%s:/usr/games", env ? env : "/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			snprintf(path, len, "%s/%s", d, name);
			if (access(path, X_OK) == 0)
				return 0;
		}
	}
	snprintf(err, errlen, "GNU Go ('%s') was not found: a Go run is measured against it "
		 "(apt-get install gnugo, or --gnugo PATH)", name);
	return -1;
}

/* What one model's measurement needs besides the model. */
typedef struct hctx {
	const harness_options *o;
	store *db;
	const game_desc *desc;  /* the run's game */
	c4bench bench;          /* Connect Four positions */
	bool have_bench;        /* loaded */
	char gnugo[4096];       /* Go: the program */
	char method[2][64];     /* the methods measured */
	int n_methods;
} hctx;

static bool measured(const hctx *c, const hrun *h, int64_t id)
{
	for (int k = 0; k < c->n_methods; k++)
		if (!find_row(h, id, c->method[k], "all"))
			return false;
	return true;
}

/* Stores one method's rows: a row per set and the total. */
static int store_c4(hctx *c, int64_t id, const char *method, const c4bench_result *r, int n,
		    double seconds, double *total)
{
	store_evaluation e[C4BENCH_MAX_SETS + 1];
	int all_n = 0, all_e = 0;
	for (int i = 0; i < n; i++) {
		e[i] = (store_evaluation){ .model_id = id, .method = method, .part = r[i].name,
					   .n = r[i].n, .score = r[i].errors,
					   .value = r[i].n ? (double)r[i].errors / r[i].n : 0,
					   .seconds = seconds };
		all_n += r[i].n;
		all_e += r[i].errors;
	}
	*total = all_n ? (double)all_e / all_n : 0;
	e[n] = (store_evaluation){ .model_id = id, .method = method, .part = "all", .n = all_n,
				   .score = all_e, .value = *total, .seconds = seconds };
	return store_add_evaluations(c->db, e, n + 1);
}

/* Connect Four: the error rates of model m, network alone and searched,
 * those not yet stored. Progress text into `line`. 0, 1 when a signal
 * stopped it, or -1. */
static int measure_c4(hctx *c, const hrun *h, const hmodel *m, char *line, size_t len, char *err,
		      size_t errlen)
{
	const harness_options *o = c->o;
	nn_net *net = NULL, *copy = NULL;
	nn_backend *be = NULL;
	evaluator *ev = NULL;
	int rc = -1;
	size_t used = 0;
	line[0] = 0;
	if (!(net = nn_net_load_any(m->file, NULL, err, errlen)))
		goto out;
	eval_options eo = eval_options_default();
	eo.random_symmetry = 0;
	nn_backend_options bo = nn_backend_options_default();
	bo.precision = o->precision;
	if (!(ev = loop_measure_evaluator(net, &eo, &bo, &copy, &be, err, errlen)))
		goto out;
	for (int k = 0; k < c->n_methods; k++) {
		const hrow *done = find_row(h, m->id, c->method[k], "all");
		double total, t0 = clock_now();
		if (done) {
			total = done->value;
		} else {
			c4bench_result r[C4BENCH_MAX_SETS];
			int n = k == 0 ? c4bench_network(&c->bench, ev, 0, o->stop, r)
				       : c4bench_search(&c->bench, ev, o->visits, 1, o->positions, 0,
							o->stop, r);
			if (n == C4BENCH_CUT_SHORT) {
				rc = 1; /* stopped: the rest on the next run */
				goto out;
			}
			if (n < 0) {
				snprintf(err, errlen, "the search could not start");
				goto out;
			}
			if (store_c4(c, m->id, c->method[k], r, n, clock_now() - t0, &total) != 0) {
				snprintf(err, errlen, "%s", store_errmsg(c->db));
				goto out;
			}
		}
		used += (size_t)snprintf(line + used, used < len ? len - used : 0, "%s%s %.1f%%",
					 k ? ", " : "", k ? "search" : "network", 100 * total);
		if (used >= len)
			used = len - 1;
	}
	rc = 0;
out:
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(copy);
	nn_net_free(net);
	return rc;
}

/* Go: model m against GNU Go (a match stored in the run's database, so a
 * stopped one resumes). 0, or -1. */
static int measure_go(hctx *c, const hmodel *m, char *line, size_t len, char *err, size_t errlen)
{
	const harness_options *o = c->o;
	char spec[2][4200];
	match_player pl[2];
	nn_net *net = nn_net_load_any(m->file, NULL, err, errlen);
	if (!net)
		return -1;
	game_params g = game_desc_by_kind(net->arch.game)->defaults;
	if (game_desc_by_kind(net->arch.game)->has_size)
		g.size = net->arch.board_w;
	nn_net_free(net);
	snprintf(spec[0], sizeof(spec[0]), "model:%lld", (long long)m->id);
	snprintf(spec[1], sizeof(spec[1]), "gtp:%s --mode gtp --chinese-rules --level %d", c->gnugo,
		 o->gnugo_level);
	for (int i = 0; i < 2; i++)
		if (match_player_parse(spec[i], c->db, &pl[i], err, errlen) != 0)
			return -1;
	match_options mo = match_options_default(&g);
	mo.games = o->games;
	mo.visits = o->visits;
	mo.stop = o->stop;
	match_summary s;
	double t0 = clock_now();
	if (match_run(c->db, &pl[0], &pl[1], &mo, NULL, NULL, &s, err, errlen) != 0)
		return -1;
	if (s.games < o->games) {
		snprintf(line, len, "%d of %d games played, stopped", s.games, o->games);
		return 0;
	}
	double score = s.wins + 0.5 * s.draws;
	store_evaluation e = { .model_id = m->id, .method = c->method[0], .part = "all",
			       .n = s.games, .score = score, .value = score / s.games,
			       .seconds = clock_now() - t0 };
	if (store_add_evaluations(c->db, &e, 1) != 0) {
		snprintf(err, errlen, "%s", store_errmsg(c->db));
		return -1;
	}
	snprintf(line, len, "against GNU Go level %d: %d-%d-%d (%.0f%%)", o->gnugo_level, s.wins,
		 s.losses, s.draws, 100 * e.value);
	return 0;
}

/* Whether the CPU backend runs the first model at o->precision (bf16
 * needs AVX-512 BF16, int8 AVX2; fp16 is CUDA's), before any model is
 * measured. 0, or -1 with the backend's reason. */
static int check_precision(const harness_options *o, const char *file, char *err, size_t errlen)
{
	nn_net *net = nn_net_load_any(file, NULL, err, errlen), *copy = NULL;
	nn_backend *be = NULL;
	if (!net)
		return -1;
	nn_backend_options bo = nn_backend_options_default();
	bo.precision = o->precision;
	eval_options eo = eval_options_default();
	evaluator *ev = loop_measure_evaluator(net, &eo, &bo, &copy, &be, err, errlen);
	int rc = ev ? 0 : -1;
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(copy);
	nn_net_free(net);
	return rc;
}

/* A model's place on the axis, in seconds, for choosing which to measure
 * (wall seconds for a model from before CPU time was kept). */
static double model_x(const hmodel *m, harness_axis axis)
{
	double x = axis_seconds(m, axis);
	return isnan(x) ? m->c.seconds : x;
}

int harness_spaced(const double *x, int n, double every, bool *pick)
{
	double step = every >= 0 || n == 0 ? every * 60 : x[n - 1] / HARNESS_AUTO_STEPS;
	int picked = 0;
	if (!(step > 0)) {
		for (int i = 0; i < n; i++)
			pick[i] = true;
		return n;
	}
	double next = 0;
	for (int i = 0; i < n; i++) {
		if (i == 0 || i == n - 1 || x[i] >= next) {
			pick[i] = true;
			while (next <= x[i])
				next += step;
		}
		picked += pick[i];
	}
	return picked;
}

/* Which models to measure: the ids asked for, and (when none are, or with
 * --every) those harness_spaced picks. Marks pick[i]; -1 with a message
 * for an id the run does not have. */
static int choose(const harness_options *o, const hrun *h, bool *pick, char *err, size_t errlen)
{
	for (int i = 0; i < h->nm; i++)
		pick[i] = false;
	for (int k = 0; k < o->n_models; k++) {
		int i;
		for (i = 0; i < h->nm && h->m[i].id != o->models[k]; i++)
			;
		if (i == h->nm) {
			snprintf(err, errlen, "%s has no model %d (its models are 1 to %lld)", o->dir,
				 o->models[k], (long long)h->m[h->nm - 1].id);
			return -1;
		}
		pick[i] = true;
	}
	if (o->n_models == 0 || o->every > 0) {
		double *x = malloc((size_t)h->nm * sizeof(*x));
		if (!x) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (int i = 0; i < h->nm; i++)
			x[i] = model_x(&h->m[i], o->axis);
		harness_spaced(x, h->nm, o->every, pick);
		free(x);
	}
	return 0;
}

/* ---- the table ------------------------------------------------------------ */

static void print_table(FILE *f, const hrun *h, const char *dir)
{
	char methods[8][64];
	int nmeth = methods_of(h, methods, 8), width[8];
	if (!f)
		return;
	/* A column as wide as its method's name, at least 18. */
	for (int k = 0; k < nmeth; k++)
		width[k] = strlen(methods[k]) > 18 ? (int)strlen(methods[k]) : 18;
	fprintf(f, "\n%s: value per model (C4: error rate, lower is better; Go: win rate), "
		   "against compute (self-play + training)\n", dir);
	fprintf(f, "%6s %8s %9s %9s %10s", "model", "step", "wall-min", "cpu-min", "evals");
	for (int k = 0; k < nmeth; k++)
		fprintf(f, " %*s", width[k], methods[k]);
	fputc('\n', f);
	for (int i = 0; i < h->nm; i++) {
		const hmodel *m = &h->m[i];
		bool any = false;
		for (int k = 0; k < nmeth; k++)
			any |= find_row(h, m->id, methods[k], "all") != NULL;
		if (!any)
			continue;
		fprintf(f, "%6lld %8lld %9.1f ", (long long)m->id, (long long)m->step, m->c.seconds / 60);
		if (isnan(m->c.cpu_seconds))
			fprintf(f, "%9s ", "-");
		else
			fprintf(f, "%9.1f ", m->c.cpu_seconds / 60);
		if (m->c.evals < 0)
			fprintf(f, "%10s", "-");
		else
			fprintf(f, "%10lld", (long long)m->c.evals);
		for (int k = 0; k < nmeth; k++) {
			const hrow *r = find_row(h, m->id, methods[k], "all");
			if (r)
				fprintf(f, " %*.1f%%", width[k] - 1, 100 * r->value);
			else
				fprintf(f, " %*s", width[k], "-");
		}
		fputc('\n', f);
	}
	/* Per set, for the methods that have sets. */
	for (int k = 0; k < nmeth; k++) {
		char parts[C4BENCH_MAX_SETS][32];
		int np = 0;
		for (int i = 0; i < h->nr && np < C4BENCH_MAX_SETS; i++) {
			if (strcmp(h->r[i].method, methods[k]) || !strcmp(h->r[i].part, "all"))
				continue;
			int j;
			for (j = 0; j < np && strcmp(parts[j], h->r[i].part); j++)
				;
			if (j == np)
				snprintf(parts[np++], 32, "%s", h->r[i].part);
		}
		if (!np)
			continue;
		fprintf(f, "\n%s, error rate per set:\n%6s", methods[k], "model");
		for (int j = 0; j < np; j++)
			fprintf(f, " %14s", parts[j]);
		fputc('\n', f);
		for (int i = 0; i < h->nm; i++) {
			if (!find_row(h, h->m[i].id, methods[k], "all"))
				continue;
			fprintf(f, "%6lld", (long long)h->m[i].id);
			for (int j = 0; j < np; j++) {
				const hrow *r = find_row(h, h->m[i].id, methods[k], parts[j]);
				if (r)
					fprintf(f, " %13.1f%%", 100 * r->value);
				else
					fprintf(f, " %14s", "-");
			}
			fputc('\n', f);
		}
	}
}

/* True for a method whose figure is a win rate (higher is better), false
 * for an error rate. */
static bool higher_is_better(const char *method)
{
	return !strncmp(method, "gnugo", 5);
}

/* Each measured model against the newest measured model at least
 * `minutes` of compute before it: worse by more than two standard errors
 * of the difference is a regression. Returns how many were found. */
static int print_regressions(FILE *f, const hrun *h, harness_axis axis, double minutes)
{
	char methods[8][64];
	int nmeth = methods_of(h, methods, 8), found = 0, compared = 0;
	for (int k = 0; k < nmeth; k++)
		for (int i = 0; i < h->nm; i++) {
			const hrow *now = find_row(h, h->m[i].id, methods[k], "all"), *then = NULL;
			double x = axis_seconds(&h->m[i], axis), xj = NAN;
			for (int j = 0; now && !isnan(x) && j < i; j++) {
				const hrow *r = find_row(h, h->m[j].id, methods[k], "all");
				double y = axis_seconds(&h->m[j], axis);
				if (r && y <= x - minutes * 60) {
					then = r;
					xj = y;
				}
			}
			if (!then)
				continue;
			compared++;
			double p1 = then->value, p2 = now->value;
			double se = sqrt(p1 * (1 - p1) / then->n + p2 * (1 - p2) / now->n);
			double worse = higher_is_better(methods[k]) ? p1 - p2 : p2 - p1;
			if (worse <= 2 * se)
				continue;
			if (f)
				fprintf(f, "regression: model %lld %s %.1f%%, model %lld %.0f minutes before "
					   "it %.1f%% (two standard errors: %.1f points)\n",
					(long long)now->model_id, methods[k], 100 * p2,
					(long long)then->model_id, (x - xj) / 60, 100 * p1, 200 * se);
			found++;
		}
	if (f && compared)
		fprintf(f, "%d regression%s beyond noise against the model %g %s minutes before "
			   "(%d comparisons)\n", found, found == 1 ? "" : "s", minutes,
			axis == HARNESS_AXIS_CPU ? "CPU" : "wall", compared);
	return found;
}

/* The CSV: one line per figure. 0, or -1 with a message. */
static int write_csv(const char *path, const hrun *h, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(f, "model,step,compute_seconds,cpu_seconds,evals,method,part,n,value\n");
	for (int i = 0; i < h->nr; i++) {
		const hrow *r = &h->r[i];
		const hmodel *m = NULL;
		for (int k = 0; k < h->nm && !m; k++)
			if (h->m[k].id == r->model_id)
				m = &h->m[k];
		if (!m)
			continue;
		fprintf(f, "%lld,%lld,%.3f,", (long long)m->id, (long long)m->step, m->c.seconds);
		if (!isnan(m->c.cpu_seconds))
			fprintf(f, "%.3f", m->c.cpu_seconds);
		fputc(',', f);
		if (m->c.evals >= 0)
			fprintf(f, "%lld", (long long)m->c.evals);
		fprintf(f, ",%s,%s,%d,%.6f\n", r->method, r->part, r->n, r->value);
	}
	if (fclose(f) != 0) {
		snprintf(err, errlen, "cannot write %s", path);
		return -1;
	}
	return 0;
}

/* Opens DIR/sente.db of an existing run. NULL with a message. */
static store *open_run(const char *dir, char *err, size_t errlen)
{
	char path[4200];
	if (!dir[0]) {
		snprintf(err, errlen, "no run folder given (--dir DIR)");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	if (access(path, F_OK) != 0) {
		snprintf(err, errlen, "%s is not a run's folder: it has no sente.db", dir);
		return NULL;
	}
	return store_open_ex(path, 0, err, errlen);
}

int harness_eval(const harness_options *o, char *err, size_t errlen)
{
	hctx c = { .o = o };
	hrun h = { 0 };
	bool *pick = NULL;
	int rc = -1;
	if (!(c.db = open_run(o->dir, err, errlen)))
		return -1;
	if (hrun_load(c.db, &h, err, errlen) != 0)
		goto out;
	if (h.nm == 0) {
		snprintf(err, errlen, "%s has no models yet (sente run saves one per iteration)", o->dir);
		goto out;
	}
	/* The game, from the first model. */
	nn_net *first = nn_net_load_any(h.m[0].file, NULL, err, errlen);
	if (!first)
		goto out;
	c.desc = game_desc_by_kind(first->arch.game);
	nn_net_free(first);
	if (c.desc->solved_positions) {
		char bdir[4096], why[512];
		if (c4bench_find(bdir, sizeof(bdir)) != 0 ||
		    c4bench_load(bdir, &c.bench, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "the solver-labelled positions (data/%s) were not found; "
				 "set SENTE_DATA to the folder that holds them", c.desc->name);
			goto out;
		}
		c.have_bench = true;
		/* fp32 keeps the plain names; another precision is its own method. */
		char at[16] = "";
		if (o->precision != NN_DTYPE_FP32)
			snprintf(at, sizeof(at), "@%s", nn_dtype_name(o->precision));
		snprintf(c.method[c.n_methods++], 64, "net%s", at);
		/* The search on every position is "search-vN", on P a set
		 * "search-vN-pP". */
		char per[24] = "";
		if (o->positions > 0)
			snprintf(per, sizeof(per), "-p%d", o->positions);
		if (!o->net_only)
			snprintf(c.method[c.n_methods++], 64, "search-v%d%s%s", o->visits, per, at);
		if (o->precision != NN_DTYPE_FP32 && check_precision(o, h.m[0].file, err, errlen) != 0)
			goto out;
	} else {
		if (o->precision != NN_DTYPE_FP32) {
			snprintf(err, errlen, "--precision %s measures Connect Four only: a Go model "
				 "plays GNU Go at fp32", nn_dtype_name(o->precision));
			goto out;
		}
		if (find_gnugo(o->gnugo, c.gnugo, sizeof(c.gnugo), err, errlen) != 0)
			goto out;
		snprintf(c.method[c.n_methods++], 64, "gnugo-l%d-v%d-g%d", o->gnugo_level, o->visits,
			 o->games);
	}
	if (!(pick = calloc((size_t)h.nm, sizeof(*pick)))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (choose(o, &h, pick, err, errlen) != 0)
		goto out;
	int todo = 0, done = 0;
	for (int i = 0; i < h.nm; i++)
		todo += pick[i] && !measured(&c, &h, h.m[i].id);
	say(o, "%s: %d models, %d to measure (%s%s)%s", o->dir, h.nm, todo,
	    c.n_methods > 1 ? "network alone and search at " : c.method[0],
	    c.n_methods > 1 ? nn_dtype_name(o->precision) : "", todo ? "" : ": all done already");
	double t_start = clock_now();
	for (int i = 0; i < h.nm && !stopped(o); i++) {
		if (!pick[i] || measured(&c, &h, h.m[i].id))
			continue;
		const hmodel *m = &h.m[i];
		char line[512];
		double t0 = clock_now();
		int r = c.have_bench ? measure_c4(&c, &h, m, line, sizeof(line), err, errlen)
				     : measure_go(&c, m, line, sizeof(line), err, errlen);
		if (r == 1)
			break;
		if (r != 0) {
			char why[2048];
			snprintf(why, sizeof(why), "model %lld (%.900s): %.1000s", (long long)m->id, m->file, err);
			snprintf(err, errlen, "%s", why);
			goto out;
		}
		done++;
		double took = clock_now() - t0, all = clock_now() - t_start;
		double x = axis_seconds(m, o->axis);
		say(o, "model %lld (step %lld, %.1f %s-min): %s  [%.0f s; %d/%d, about %.0f min left]",
		    (long long)m->id, (long long)m->step, isnan(x) ? m->c.seconds / 60 : x / 60,
		    o->axis == HARNESS_AXIS_CPU && !isnan(x) ? "cpu" : "wall", line, took, done, todo,
		    all / done * (todo - done) / 60);
	}
	if (stopped(o))
		say(o, "stopped; run the same command again to measure the rest");
	/* The table and the files, from what the database now holds. */
	hrun_free(&h);
	if (hrun_load(c.db, &h, err, errlen) != 0)
		goto out;
	print_table(o->log, &h, o->dir);
	if (o->regress_minutes > 0 && o->log) {
		fputc('\n', o->log);
		print_regressions(o->log, &h, o->axis, o->regress_minutes);
	}
	if (o->csv[0] && write_csv(o->csv, &h, err, errlen) != 0)
		goto out;
	/* A `sente eval` killed mid-write left its report.html.tmp.PID.N:
	 * the dead writers' go (a live one, say the run's own, is at work). */
	fileio_sweep(o->dir, false);
	char report[4200], why[512];
	snprintf(report, sizeof(report), "%s/report.html", o->dir);
	if (report_write(c.db, report, c.desc->name, why, sizeof(why)) != 0)
		say(o, "report not written: %s", why);
	rc = 0;
out:
	free(pick);
	hrun_free(&h);
	if (c.have_bench)
		c4bench_free(&c.bench);
	store_close(c.db);
	return rc;
}

/* ---- compare -------------------------------------------------------------- */

void harness_label(const char *dir, char *label, size_t len)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dir);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
	snprintf(label, len, "%s", base);
	/* A trailing -sN, -seedN or _sN names the seed. */
	n = strlen(label);
	size_t d = n;
	while (d > 0 && label[d - 1] >= '0' && label[d - 1] <= '9')
		d--;
	if (d == n || d == 0)
		return;
	static const char *const tails[] = { "-seed", "_seed", "-s", "_s" };
	for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
		size_t k = strlen(tails[t]);
		if (d > k && !strncmp(label + d - k, tails[t], k)) {
			label[d - k] = 0;
			return;
		}
	}
}

/* A run's value of `method`/`part` at `x` seconds on the axis, linear
 * between the measured models around it; NAN when the run did not get
 * that far (or has no measurement there). */
static double value_at(const hrun *h, const char *method, const char *part, harness_axis axis,
		       double x)
{
	double px = NAN, py = NAN;
	for (int i = 0; i < h->nm; i++) {
		const hrow *r = find_row(h, h->m[i].id, method, part);
		double mx = axis_seconds(&h->m[i], axis);
		if (!r || isnan(mx))
			continue;
		if (mx == x)
			return r->value;
		if (mx > x)
			return isnan(px) ? NAN : py + (r->value - py) * (x - px) / (mx - px);
		px = mx;
		py = r->value;
	}
	return NAN;
}

/* One method's cells of a comparison, for the noise line under it. */
typedef struct noise_tally {
	char method[64];
	double sum;  /* of the cells' means */
	int cells;
	int fewest;  /* positions or games behind the method's figures of the part */
} noise_tally;

/* Adds one printed cell (its mean `v`) to method's tally, finding the
 * fewest positions or games behind that method's figures of `part` in
 * any run the first time the method is seen. */
static void noise_add(noise_tally *t, int *n, int max, const hrun *runs, int nruns,
		      const char *method, const char *part, double v)
{
	int k;
	for (k = 0; k < *n && strcmp(t[k].method, method); k++)
		;
	if (k == *n) {
		if (k == max)
			return;
		memset(&t[k], 0, sizeof(t[k]));
		snprintf(t[k].method, sizeof(t[k].method), "%.63s", method);
		for (int j = 0; j < nruns; j++)
			for (int i = 0; i < runs[j].nr; i++) {
				const hrow *r = &runs[j].r[i];
				if (r->n > 0 && !strcmp(r->method, method) && !strcmp(r->part, part) &&
				    (!t[k].fewest || r->n < t[k].fewest))
					t[k].fewest = r->n;
			}
		(*n)++;
	}
	t[k].sum += v;
	t[k].cells++;
}

/* What one model's figure can tell: a proportion of n positions (or
 * games) has a binomial standard error of sqrt(p (1 - p) / n), here at
 * the mean of the cells printed. */
static void print_noise(FILE *f, const noise_tally *t, int n)
{
	bool any = false;
	for (int k = 0; k < n; k++) {
		if (!t[k].cells || !t[k].fewest)
			continue;
		double p = t[k].sum / t[k].cells, se = sqrt(p * (1 - p) / t[k].fewest);
		fprintf(f, "%s%s %.1f points (%d %s at %.1f%%)",
			any ? ", " : "one model's figure, its binomial standard error: ", t[k].method,
			100 * se, t[k].fewest, higher_is_better(t[k].method) ? "games" : "positions",
			100 * p);
		any = true;
	}
	if (any)
		fprintf(f, "; single models closer than about twice that are within noise\n");
}

int harness_compare(const harness_compare_options *o, char *err, size_t errlen)
{
	hrun runs[HARNESS_MAX_RUNS];
	char labels[HARNESS_MAX_RUNS][128];
	int n = 0, rc = -1;
	FILE *csv = NULL;
	if (o->n_runs < 1 || o->n_at < 1) {
		snprintf(err, errlen, "give at least one run and one compute point");
		return -1;
	}
	for (; n < o->n_runs; n++) {
		const char *arg = o->runs[n], *eq = strchr(arg, '=');
		const char *dir = eq ? eq + 1 : arg;
		if (eq)
			snprintf(labels[n], sizeof(labels[n]), "%.*s", (int)(eq - arg), arg);
		else
			harness_label(dir, labels[n], sizeof(labels[n]));
		store *db = open_run(dir, err, errlen);
		if (!db)
			goto out;
		int lr = hrun_load(db, &runs[n], err, errlen);
		store_close(db);
		if (lr != 0)
			goto out;
		if (runs[n].nr == 0) {
			hrun_free(&runs[n]);
			snprintf(err, errlen, "%s has no evaluations: run sente eval --dir %s first", dir, dir);
			goto out;
		}
	}
	if (o->csv[0] && !(csv = fopen(o->csv, "w"))) {
		snprintf(err, errlen, "cannot write %s: %s", o->csv, strerror(errno));
		goto out;
	}
	if (csv)
		fprintf(csv, "label,method,part,minutes,runs,mean,min,max\n");
	FILE *f = o->out;
	const char *axis = o->axis == HARNESS_AXIS_CPU ? "CPU" : "wall";
	if (f) {
		fprintf(f, "at equal compute: %s minutes of self-play and training; part %s; "
			   "mean [min-max] over the runs of a label, in %%\n", axis, o->part);
		fprintf(f, "%-24s %-20s %4s", "label", "method", "runs");
		for (int k = 0; k < o->n_at; k++)
			fprintf(f, " %17d", o->at[k]);
		fputc('\n', f);
	}
	/* Per method, for the noise line: the cells printed and the fewest
	 * positions (or games) behind a figure. */
	noise_tally tally[16];
	int nn = 0;
	/* Every (label, method) pair, in the order first seen. */
	for (int i = 0; i < n; i++) {
		char methods[8][64];
		int nm = methods_of(&runs[i], methods, 8);
		for (int k = 0; k < nm; k++) {
			bool seen = false;
			for (int j = 0; j < i && !seen; j++)
				if (!strcmp(labels[j], labels[i])) {
					char mj[8][64];
					int nj = methods_of(&runs[j], mj, 8);
					for (int q = 0; q < nj; q++)
						seen |= !strcmp(mj[q], methods[k]);
				}
			if (seen)
				continue;
			int members = 0;
			for (int j = i; j < n; j++)
				members += !strcmp(labels[j], labels[i]);
			if (f)
				fprintf(f, "%-24s %-20s %4d", labels[i], methods[k], members);
			for (int a = 0; a < o->n_at; a++) {
				double sum = 0, lo = INFINITY, hi = -INFINITY;
				int got = 0;
				for (int j = i; j < n; j++) {
					if (strcmp(labels[j], labels[i]))
						continue;
					double v = value_at(&runs[j], methods[k], o->part, o->axis,
							    o->at[a] * 60.0);
					if (isnan(v))
						continue;
					sum += v;
					lo = fmin(lo, v);
					hi = fmax(hi, v);
					got++;
				}
				char cell[64];
				if (!got)
					snprintf(cell, sizeof(cell), "-");
				else if (got == 1)
					snprintf(cell, sizeof(cell), "%.1f%s", 100 * sum, members > 1 ? " (1)" : "");
				else
					snprintf(cell, sizeof(cell), "%.1f [%.1f-%.1f]%s", 100 * sum / got,
						 100 * lo, 100 * hi, got < members ? " (part)" : "");
				if (f)
					fprintf(f, " %17s", cell);
				if (got)
					noise_add(tally, &nn, 16, runs, n, methods[k], o->part, sum / got);
				if (csv && got)
					fprintf(csv, "%s,%s,%s,%d,%d,%.6f,%.6f,%.6f\n", labels[i],
						methods[k], o->part, o->at[a], got, sum / got, lo, hi);
			}
			if (f)
				fputc('\n', f);
		}
	}
	if (f)
		print_noise(f, tally, nn);
	rc = 0;
out:
	if (csv && fclose(csv) != 0 && rc == 0) {
		snprintf(err, errlen, "cannot write %s", o->csv);
		rc = -1;
	}
	for (int i = 0; i < n; i++)
		hrun_free(&runs[i]);
	return rc;
}
