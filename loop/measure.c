/* measure.c: a run's strength as it goes (measure.h). */
#include "loop/measure.h"

#include <stdarg.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "match/elo.h"
#include "match/match.h"
#include "nn/backend.h"
#include "search/eval.h"
#include "selfplay/arena.h"

static void say(FILE *log, progress *prog, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(FILE *log, progress *prog, const char *fmt, ...)
{
	if (!log)
		return;
	progress_clear(prog);
	va_list ap;
	va_start(ap, fmt);
	fputs("sente run: ", log);
	vfprintf(log, fmt, ap);
	va_end(ap);
	fflush(log);
}

evaluator *loop_measure_evaluator(const nn_net *net, const eval_options *eo,
				  const nn_backend_options *bo, nn_net **copy, nn_backend **be,
				  char *err, size_t errlen)
{
	*copy = nn_net_clone(net);
	*be = NULL;
	if (!*copy) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nn_net_fold_bn(*copy);
	nn_backend_options def = nn_backend_options_default();
	*be = nn_backend_new(&nn_backend_cpu, *copy, 16, bo ? bo : &def, err, errlen);
	if (!*be)
		return NULL;
	return eval_new(be, 1, (*copy)->arch.encoding, eo, err, errlen);
}

int loop_measure_c4(store *db, const c4bench *bench, const nn_net *net, int eval_visits,
		    int eval_positions, int64_t step, bool with_search, double deadline,
		    const volatile sig_atomic_t *stop, FILE *log, progress *prog, bool quiet,
		    double *net_seconds)
{
	int rc = -1;
	double t0 = clock_now();
	char err[256];
	nn_net *copy = NULL;
	nn_backend *be = NULL;
	eval_options eo = eval_options_default();
	eo.random_symmetry = 0;
	evaluator *ev = loop_measure_evaluator(net, &eo, NULL, &copy, &be, err, sizeof(err));
	if (!ev) {
		say(log, prog, "strength not measured: %s\n", err);
		goto out;
	}
	c4bench_result rn[C4BENCH_MAX_SETS], rs[C4BENCH_MAX_SETS];
	int n = c4bench_network(bench, ev, 0, stop, rn);
	if (net_seconds)
		*net_seconds = clock_now() - t0;
	if (n == C4BENCH_CUT_SHORT)
		goto out;
	if (n < 0) {
		say(log, prog, "strength not measured: the network could not be evaluated\n");
		goto out;
	}
	int ns = with_search ? c4bench_search(bench, ev, eval_visits, 1, eval_positions, deadline, stop,
						      rs)
			     : 0;
	rc = ns == C4BENCH_CUT_SHORT ? 1 : 0;
	if (ns < 0)
		ns = 0;
	int tot_n = 0, tot_e = 0, tot_sn = 0, tot_se = 0;
	/* Every figure in one transaction: one wait when another process
	 * holds the database. */
	char names[2 * C4BENCH_MAX_SETS + 2][64];
	const char *np[2 * C4BENCH_MAX_SETS + 2];
	double vals[2 * C4BENCH_MAX_SETS + 2];
	int m = 0;
	for (int i = 0; i < n; i++) {
		snprintf(names[m], sizeof(names[m]), "c4_error_net/%.40s", rn[i].name);
		vals[m++] = (double)rn[i].errors / rn[i].n;
		tot_n += rn[i].n;
		tot_e += rn[i].errors;
		if (i < ns) {
			snprintf(names[m], sizeof(names[m]), "c4_error_search/%.40s", rs[i].name);
			vals[m++] = (double)rs[i].errors / rs[i].n;
			tot_sn += rs[i].n;
			tot_se += rs[i].errors;
		}
	}
	snprintf(names[m], sizeof(names[m]), "c4_error_net");
	vals[m++] = (double)tot_e / tot_n;
	if (ns) {
		snprintf(names[m], sizeof(names[m]), "c4_error_search");
		vals[m++] = (double)tot_se / tot_sn;
	}
	for (int i = 0; i < m; i++)
		np[i] = names[i];
	store_add_metrics(db, step, np, vals, m);
	if (!quiet && log) {
		say(log, prog, "step %lld: error rate, network alone %.1f%%", (long long)step,
		    100.0 * tot_e / tot_n);
		if (ns)
			fprintf(log, ", %d-visit search %.1f%%", eval_visits, 100.0 * tot_se / tot_sn);
		else if (rc == 1)
			fprintf(log, ", search not measured (no time left)");
		fprintf(log, "  (");
		for (int i = 0; i < n; i++)
			fprintf(log, "%s%s %.0f%%", i ? ", " : "", rn[i].name,
				100.0 * rn[i].errors / rn[i].n);
		fprintf(log, ")\n");
		fflush(log);
	}
out:
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(copy);
	return rc;
}

void loop_measure_first(store *db, const nn_net *net, const game_params *g, int eval_visits,
			int64_t step, FILE *log, progress *prog, bool quiet)
{
	char err[512], file[4096];
	nn_net *first = NULL, *c1 = NULL, *c2 = NULL;
	nn_backend *b1 = NULL, *b2 = NULL;
	evaluator *e1 = NULL, *e2 = NULL;
	eval_options eo = eval_options_default();
	if (store_model_file(db, 1, file, sizeof(file)) != 0 ||
	    !(first = nn_net_load_any(file, NULL, err, sizeof(err)))) {
		say(log, prog, "no first model to measure against\n");
		goto out;
	}
	e1 = loop_measure_evaluator(net, &eo, NULL, &c1, &b1, err, sizeof(err));
	e2 = e1 ? loop_measure_evaluator(first, &eo, NULL, &c2, &b2, err, sizeof(err)) : NULL;
	arena_result r;
	enum { GAMES = 10 };
	if (!e2 || arena_play(e1, e2, g, GAMES, eval_visits / 4 + 1, eval_visits / 4 + 1, 4,
			      (uint64_t)step, &r, err, sizeof(err)) != 0) {
		say(log, prog, "strength not measured: %s\n", err);
		goto out;
	}
	double rate = (r.wins + 0.5 * r.draws) / r.games;
	char name[96];
	snprintf(name, sizeof(name), "%s_winrate_vs_first", game_desc_from_params(g)->name);
	store_add_metric(db, step, name, rate);
	snprintf(name, sizeof(name), "%s_elo_vs_first", game_desc_from_params(g)->name);
	store_add_metric(db, step, name, elo_from_score(rate));
	if (!quiet)
		say(log, prog, "step %lld: against the first network %d-%d-%d (%.0f%%)\n", (long long)step,
		    r.wins, r.losses, r.draws, rate * 100);
out:
	eval_free(e1);
	eval_free(e2);
	nn_backend_free(b1);
	nn_backend_free(b2);
	nn_net_free(c1);
	nn_net_free(c2);
	nn_net_free(first);
}

bool loop_gate_passes(store *db, const game_params *g, const loop_gate *gate, int64_t cand,
		      int64_t current, int64_t step, FILE *log, progress *prog, bool quiet)
{
	char spec[2][32], err[1024];
	match_player pl[2];
	snprintf(spec[0], sizeof(spec[0]), "model:%lld", (long long)cand);
	snprintf(spec[1], sizeof(spec[1]), "model:%lld", (long long)current);
	for (int i = 0; i < 2; i++)
		if (match_player_parse(spec[i], db, &pl[i], err, sizeof(err)) != 0) {
			say(log, prog, "gating: %s\n", err);
			return false;
		}
	match_options mo = match_options_default(g);
	mo.games = gate->games;
	mo.parallel = 2;
	mo.visits = gate->visits;
	mo.seed = (uint64_t)step + 1;
	mo.stop = gate->stop;
	match_summary s;
	if (match_run(db, &pl[0], &pl[1], &mo, NULL, NULL, &s, err, sizeof(err)) != 0) {
		say(log, prog, "gating match failed: %s\n", err);
		return false;
	}
	store_add_metric(db, step, "gate_score", s.elo.score);
	store_add_metric(db, step, "gate_elo", s.elo.elo);
	bool pass = s.games > 0 && s.elo.score >= gate->threshold;
	if (!quiet)
		say(log, prog, "gate: model %lld against %lld: %d-%d-%d (%.0f%%, Elo %+.0f [%+.0f, %+.0f]): "
			 "%s\n", (long long)cand, (long long)current, s.wins, s.losses, s.draws,
		    100 * s.elo.score, s.elo.elo, s.elo.lo, s.elo.hi, pass ? "promoted" : "not promoted");
	return pass;
}
