/* The search benchmark as a library call: one result per search, each from
 * a fresh tree, with the figures the JSON line prints. Tiny network. */
#include <criterion/criterion.h>
#include <string.h>

#include "search/bench.h"

typedef struct seen {
	int n;                        /* results */
	search_bench_result last;     /* the last one */
	int runs_in_order;            /* results whose run was n */
} seen;

static void on_result(void *ctx, const search_bench_result *r)
{
	seen *s = ctx;
	s->runs_in_order += r->run == s->n;
	s->last = *r;
	s->n++;
}

/* A tiny Connect Four network on the CPU, a short raw measurement. */
static search_bench_options tiny(int visits, int batch, int repeat, int nn_threads)
{
	search_bench_options o = search_bench_options_default();
	o.blocks = 1;
	o.channels = 8;
	o.game = game_params_default(GAME_KIND_CONNECT4);
	o.visits = visits;
	o.batch = batch;
	o.repeat = repeat;
	o.raw_seconds = 0.02;
	o.backend.kind = NN_BACKEND_CPU;
	o.backend.threads = nn_threads;
	return o;
}

Test(search_bench, one_result_per_search)
{
	search_bench_options o = tiny(40, 4, 2, 1);
	seen s = { 0 };
	char err[512];
	cr_assert_eq(search_bench_run(&o, on_result, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.runs_in_order, 2);
	const search_bench_result *r = &s.last;
	cr_assert_str_eq(r->backend, "cpu");
	cr_assert_eq(r->gpus, 0);
	cr_assert_eq(r->game.kind, GAME_KIND_CONNECT4);
	cr_assert_eq(r->blocks, 1);
	cr_assert_eq(r->channels, 8);
	cr_assert(r->visits >= 40, "%d root visits", r->visits);
	cr_assert(r->playouts > 0 && r->evals > 0);
	cr_assert(r->mean_batch >= 1.0);
	cr_assert(r->raw_evals_per_s > 0);
	cr_assert_float_eq(r->search_to_raw, r->playouts_per_s / r->raw_evals_per_s, 1e-9);
}

Test(search_bench, a_missing_weights_file_is_an_error)
{
	search_bench_options o = search_bench_options_default();
	o.weights = "/nonexistent/net.sente";
	char err[512] = "";
	cr_assert_eq(search_bench_run(&o, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "/nonexistent/net.sente"), "%s", err);
}

/* CPU lanes in a search: two compute threads and two search threads give
 * two lanes, each batch one thread's gathered leaves (batch 8 over two
 * threads: at most 4); one search thread, or --nn-lanes 1, one lane. */
Test(search_bench, lanes_run_one_search_thread_batch_each)
{
	search_bench_options o = tiny(200, 8, 1, 2);
	static const struct { int threads, lanes, want; } cases[] = {
		{ 2, 0, 2 }, { 1, 0, 1 }, { 2, 1, 1 },
	};
	for (int i = 0; i < 3; i++) {
		o.threads = cases[i].threads;
		o.backend.lanes = cases[i].lanes;
		seen s = { 0 };
		char err[512];
		cr_assert_eq(search_bench_run(&o, on_result, &s, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(s.last.lanes, cases[i].want, "case %d: %d lanes", i, s.last.lanes);
		if (cases[i].want == 2)
			cr_assert(s.last.mean_batch > 1.0 && s.last.mean_batch <= 4.0,
				  "two lanes: batches of one thread's 4 leaves, mean %.2f",
				  s.last.mean_batch);
	}
}
