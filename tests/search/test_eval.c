/* The evaluation queue: every waiter gets its own answer, batches form,
 * the cache answers repeats, the uniform evaluator and failures. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "nn/encode.h"
#include "search/eval.h"
#include "tests/search/fake_net.h"

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random Connect Four position that is not over. */
static void random_c4(game *g, uint64_t *rng)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	for (;;) {
		game_init(g, &p);
		int plies = (int)(xs(rng) % 20), moves[7];
		for (int i = 0; i < plies && !game_is_over(g); i++) {
			int n = game_legal_moves(g, moves);
			game_play(g, moves[xs(rng) % (uint64_t)n]);
		}
		if (!game_is_over(g))
			return;
	}
}

/* Whether policy and value are the fake network's answer for g: its
 * value, and the softmax of its logits over the legal moves. */
static bool fake_answer_ok(const game *g, const float *policy, float value)
{
	float logits[7], want_v;
	fake_c4_expect(g, logits, &want_v);
	int legal[7], nl = game_legal_moves(g, legal);
	double mx = -1e9, sum = 0;
	for (int k = 0; k < nl; k++)
		mx = fmax(mx, logits[legal[k]]);
	for (int k = 0; k < nl; k++)
		sum += exp(logits[legal[k]] - mx);
	bool ok = fabsf(value - want_v) < 1e-6f;
	for (int k = 0; k < nl; k++)
		ok = ok && fabs(policy[legal[k]] - exp(logits[legal[k]] - mx) / sum) < 1e-5;
	return ok;
}

typedef struct worker {
	evaluator *ev;
	int id;
	int n;
	int errors;
} worker;

static void *eval_worker(void *arg)
{
	worker *w = arg;
	uint64_t rng = 0x1234567ULL * (uint64_t)(w->id + 1);
	game g;
	for (int i = 0; i < w->n; i++) {
		random_c4(&g, &rng);
		float policy[GAME_MAX_ACTIONS], value;
		if (eval_position(w->ev, &g, policy, &value) != 0) {
			w->errors++;
			continue;
		}
		if (!fake_answer_ok(&g, policy, value))
			w->errors++;
	}
	return NULL;
}

/* An evaluator of the fake Connect Four network (batches of up to 16, a
 * batch taking delay_us) with no cache and no random symmetry: every
 * request goes through the queue and its answer can be checked. */
static evaluator *queue_c4(fake_net *f, int delay_us)
{
	fake_c4_init(f, 16, delay_us);
	nn_backend *be = &f->be;
	eval_options o = eval_options_default();
	o.cache_bytes = 0;
	o.random_symmetry = 0;
	o.max_batch = 16;
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	return ev;
}

Test(eval, every_waiter_gets_its_own_answer)
{
	fake_net f;
	evaluator *ev = queue_c4(&f, 300);
	enum { T = 24, N = 150 };
	pthread_t th[T];
	worker w[T];
	for (int i = 0; i < T; i++) {
		w[i] = (worker){ .ev = ev, .id = i, .n = N };
		pthread_create(&th[i], NULL, eval_worker, &w[i]);
	}
	int errors = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		errors += w[i].errors;
	}
	eval_stats st;
	eval_get_stats(ev, &st);
	eval_free(ev);
	cr_assert_eq(errors, 0, "%d answers went to the wrong waiter or were wrong", errors);
	cr_assert_eq(st.evals, (uint64_t)T * N);
	cr_assert_eq(atomic_load(&f.positions), T * N);
	cr_assert(atomic_load(&f.max_batch_seen) > 1, "24 waiting threads must form batches");
	cr_assert(atomic_load(&f.max_batch_seen) <= 16, "never above max_batch");
	cr_assert(st.batches < st.evals / 2, "mean batch %.2f: batching does not work",
		  (double)st.evals / st.batches);
}

/* A client as a search thread is one: registered, one leaf at a time, some
 * tree work (a sleep) between leaves. */
typedef struct client {
	evaluator *ev;
	int id, n, work_us, registered;
	pthread_barrier_t *start; /* all registered before anyone posts */
	int errors;
} client;

static void *client_main(void *arg)
{
	client *c = arg;
	worker w = { .ev = c->ev, .id = c->id, .n = 1 };
	if (c->registered)
		eval_client_enter(c->ev);
	if (c->start)
		pthread_barrier_wait(c->start);
	for (int i = 0; i < c->n; i++) {
		w.id = c->id * 1000 + i;
		eval_worker(&w);
		/* The same work on average for every client, spread out. */
		struct timespec ts = { 0, (long)(c->work_us + (c->id * 37 + i * 53) % 400) * 1000 };
		nanosleep(&ts, NULL);
	}
	if (c->registered)
		eval_client_leave(c->ev);
	c->errors = w.errors;
	return NULL;
}

static double run_clients(int registered, int *errors)
{
	fake_net f;
	fake_c4_init(&f, 8, 0); /* an instant network: only waiting forms batches */
	nn_backend *be = &f.be;
	eval_options o = eval_options_default();
	o.cache_bytes = 0;
	o.random_symmetry = 0;
	o.max_batch = 8;
	o.fill_wait_us = 500000; /* a loaded machine must not make the test flaky */
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	enum { T = 8, N = 40 };
	pthread_t th[T];
	client c[T];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, T);
	for (int i = 0; i < T; i++) {
		c[i] = (client){ .ev = ev, .id = i, .n = N, .work_us = 200,
				 .registered = registered, .start = &start };
		pthread_create(&th[i], NULL, client_main, &c[i]);
	}
	*errors = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		*errors += c[i].errors;
	}
	pthread_barrier_destroy(&start);
	eval_stats st;
	eval_get_stats(ev, &st);
	eval_free(ev);
	cr_assert_eq(st.evals, (uint64_t)T * N);
	return (double)st.evals / (double)st.batches;
}

/* Two servers (two GPUs, say) share one queue: while one waits for its
 * batch to fill, the other may take every request; the first must then
 * go back to waiting, not run an empty batch. Registered clients with
 * tree work between leaves make that wait happen often. A round of
 * clients lasts about 0.1 s, in which a loaded machine may never schedule
 * one of the servers: rounds repeat (at most 20) until both have run a
 * batch, so only a server that never works fails. */
Test(eval, two_servers_share_the_queue)
{
	fake_net f[2];
	nn_backend *be[2];
	for (int i = 0; i < 2; i++) {
		fake_c4_init(&f[i], 8, 50);
		be[i] = &f[i].be;
	}
	eval_options o = eval_options_default();
	o.cache_bytes = 0;
	o.random_symmetry = 0;
	o.max_batch = 8;
	char err[128];
	evaluator *ev = eval_new(be, 2, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	enum { T = 24, N = 60 };
	pthread_t th[T];
	client c[T];
	int errors = 0, rounds = 0;
	do {
		for (int i = 0; i < T; i++) {
			c[i] = (client){ .ev = ev, .id = i, .n = N, .work_us = 100, .registered = 1 };
			pthread_create(&th[i], NULL, client_main, &c[i]);
		}
		for (int i = 0; i < T; i++) {
			pthread_join(th[i], NULL);
			errors += c[i].errors;
		}
		rounds++;
	} while (rounds < 20 && (atomic_load(&f[0].calls) == 0 || atomic_load(&f[1].calls) == 0));
	eval_stats st;
	eval_get_stats(ev, &st);
	eval_free(ev);
	cr_assert_eq(errors, 0, "%d answers wrong or lost", errors);
	cr_assert_eq(st.evals, (uint64_t)rounds * T * N);
	cr_assert_eq(atomic_load(&f[0].positions) + atomic_load(&f[1].positions), rounds * T * N);
	cr_assert(atomic_load(&f[0].calls) > 0 && atomic_load(&f[1].calls) > 0,
		  "both servers work (%d and %d batches in %d rounds)", atomic_load(&f[0].calls),
		  atomic_load(&f[1].calls), rounds);
}

Test(eval, registered_clients_fill_batches)
{
	/* Eight registered clients that each post one leaf: the server waits
	 * until all eight are blocked, so batches are (nearly) full even though
	 * the leaves arrive over more than a millisecond. (Unregistered, the
	 * same clients get the greedy server: on a quiet machine batches of 1
	 * to 2; on a loaded one they can fill by chance, so that is not
	 * asserted.) */
	int errors;
	double filled = run_clients(1, &errors);
	cr_assert_eq(errors, 0);
	cr_assert(filled >= 6.0, "registered clients: mean batch %.2f of 8", filled);
}

Test(eval, idle_registered_client_costs_only_the_timeout)
{
	/* A registered client that never posts (held up elsewhere) must not
	 * stall the others: each short batch waits at most the fill timeout
	 * (3 ms). 50 evaluations take well under a second. */
	fake_net f;
	fake_c4_init(&f, 8, 0);
	nn_backend *be = &f.be;
	eval_options o = eval_options_default();
	o.cache_bytes = 0;
	o.max_batch = 8;
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	eval_client_enter(ev); /* the idle one */
	client c = { .ev = ev, .id = 1, .n = 50, .work_us = 0, .registered = 1 };
	double t0 = clock_now();
	client_main(&c);
	double s = clock_now() - t0;
	eval_client_leave(ev);
	eval_free(ev);
	cr_assert_eq(c.errors, 0);
	cr_assert(s >= 50 * 0.0025, "%.3f s: the server did not wait for the idle client", s);
	cr_assert(s < 2.0, "%.3f s for 50 evaluations: the fill wait has no bound", s);
}

Test(eval, symmetry_maps_policy_back)
{
	/* Column counts are mirror-symmetric functions, so under the mirror
	 * symmetry the answer must still be the unmirrored one. */
	fake_net f;
	fake_c4_init(&f, 8, 0);
	nn_backend *be = &f.be;
	eval_options o = eval_options_default();
	o.cache_bytes = 0;
	o.random_symmetry = 1;
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	worker w = { .ev = ev, .id = 7, .n = 200 };
	eval_worker(&w);
	eval_free(ev);
	cr_assert_eq(w.errors, 0, "%d answers were not mapped back", w.errors);
}

/* An evaluator over the fake Connect Four network with a 1 MB cache, and
 * the position after the first move in the middle column. */
static evaluator *cached_c4(fake_net *f, game *g)
{
	fake_c4_init(f, 8, 0);
	nn_backend *be = &f->be;
	eval_options o = eval_options_default();
	o.cache_bytes = 1 << 20;
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_init(g, &p);
	game_play(g, 3);
	return ev;
}

Test(eval, cache_answers_repeats)
{
	fake_net f;
	game g;
	evaluator *ev = cached_c4(&f, &g);
	float pol1[GAME_MAX_ACTIONS], pol2[GAME_MAX_ACTIONS], v1, v2;
	cr_assert_eq(eval_position(ev, &g, pol1, &v1), 0);
	cr_assert_eq(eval_position(ev, &g, pol2, &v2), 0);
	eval_stats st;
	eval_get_stats(ev, &st);
	cr_assert_eq(st.cache_hits, 1);
	cr_assert_eq(st.evals, 1);
	cr_assert_eq(memcmp(pol1, pol2, sizeof(float) * 7), 0);
	cr_assert_eq(v1, v2);
	eval_clear_cache(ev);
	cr_assert_eq(eval_position(ev, &g, pol2, &v2), 0);
	eval_get_stats(ev, &st);
	cr_assert_eq(st.evals, 2, "cleared cache: evaluated again");
	eval_free(ev);
}

/* eval_batch in two steps: a miss waits in the scratch, written only by
 * eval_post; a cache hit is answered at once; each position counts as
 * one request. */
Test(eval, stage_answers_hits_at_once_and_posts_misses)
{
	fake_net f;
	game g;
	evaluator *ev = cached_c4(&f, &g);
	eval_scratch *s = eval_scratch_new(ev, 2);
	cr_assert(s);
	float pol1[GAME_MAX_ACTIONS], pol2[GAME_MAX_ACTIONS], v1 = 5, v2 = 5;
	cr_assert_eq(eval_stage(ev, s, &g, pol1, &v1, NULL), 1, "not in the cache yet");
	cr_assert_eq(v1, 5, "a staged miss is written by eval_post");
	cr_assert_eq(eval_post(ev, s), 0);
	cr_assert(v1 != 5);
	cr_assert_eq(eval_stage(ev, s, &g, pol2, &v2, NULL), 0, "in the cache now");
	cr_assert_eq(memcmp(pol1, pol2, sizeof(float) * 7), 0);
	cr_assert_eq(v1, v2);
	cr_assert_eq(eval_post(ev, s), 0, "nothing staged");
	eval_stats st;
	eval_get_stats(ev, &st);
	cr_assert_eq(st.requests, 2);
	cr_assert_eq(st.cache_hits, 1);
	cr_assert_eq(st.evals, 1);
	eval_scratch_free(s);
	eval_free(ev);
}

/* eval_stage_legal lists the position's legal moves as game_legal_moves
 * does, for a staged miss, a cache hit and the uniform evaluator alike
 * (a search expands its leaves from that list). */
Test(eval, stage_lists_the_legal_moves)
{
	fake_net f;
	game g;
	evaluator *ev = cached_c4(&f, &g);
	for (int c = 0; c < 5; c++) /* column 3 full (one stone was there) */
		cr_assert_eq(game_play(&g, 3), GAME_OK);
	int want[GAME_MAX_ACTIONS], n_want = game_legal_moves(&g, want);
	cr_assert_eq(n_want, 6);
	eval_scratch *s = eval_scratch_new(ev, 2);
	cr_assert(s);
	float pol[GAME_MAX_ACTIONS], v;
	for (int pass = 0; pass < 2; pass++) { /* a miss, then a hit */
		int legal[GAME_MAX_ACTIONS], n = -1;
		memset(legal, 0xff, sizeof(legal));
		int rc = eval_stage_legal(ev, s, &g, pol, &v, NULL, legal, &n);
		cr_assert_eq(rc, pass == 0 ? 1 : 0);
		cr_assert_eq(eval_post(ev, s), 0);
		cr_assert_eq(n, n_want, "pass %d: %d legal moves", pass, n);
		cr_assert_eq(memcmp(legal, want, sizeof(int) * (size_t)n), 0, "pass %d", pass);
	}
	eval_scratch_free(s);
	eval_free(ev);
	char err[128];
	ev = eval_new(NULL, 0, NN_ENC_C4, NULL, err, sizeof(err));
	cr_assert(ev);
	s = eval_scratch_new(ev, 1);
	int legal[GAME_MAX_ACTIONS], n = -1;
	cr_assert_eq(eval_stage_legal(ev, s, &g, pol, &v, NULL, legal, &n), 0);
	cr_assert_eq(n, n_want);
	cr_assert_eq(memcmp(legal, want, sizeof(int) * (size_t)n), 0);
	eval_scratch_free(s);
	eval_free(ev);
}

Test(eval, uniform_without_network)
{
	char err[128];
	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, err, sizeof(err));
	cr_assert(ev);
	game g;
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_init(&g, &p);
	float pol[GAME_MAX_ACTIONS], v = 5;
	cr_assert_eq(eval_position(ev, &g, pol, &v), 0);
	for (int a = 0; a < 7; a++)
		cr_assert_float_eq(pol[a], 1.0f / 7, 1e-7);
	cr_assert_eq(v, 0);
	v = 5;
	eval_scratch *s = eval_scratch_new(ev, 1);
	cr_assert(s);
	cr_assert_eq(eval_stage(ev, s, &g, pol, &v, NULL), 0, "the uniform answer needs no network");
	cr_assert_eq(v, 0);
	eval_scratch_free(s);
	cr_assert(!eval_has_network(ev));
	eval_free(ev);
}

/* The softmax is over the legal moves: an illegal move's logit, however
 * far above theirs (all of theirs would underflow against it) and even
 * NaN, changes nothing in their policy. */
Test(eval, an_illegal_moves_logit_leaves_the_legal_policy_alone)
{
	const float extreme[] = { 1000.0f, INFINITY, NAN, -1000.0f };
	for (size_t t = 0; t < sizeof(extreme) / sizeof(extreme[0]); t++) {
		fake_net f;
		evaluator *ev = queue_c4(&f, 0);
		f.full_logit = extreme[t];
		game g;
		game_params p = game_params_default(GAME_KIND_CONNECT4);
		game_init(&g, &p);
		for (int i = 0; i < 6; i++)
			cr_assert_eq(game_play(&g, 3), GAME_OK);
		cr_assert_eq(game_play(&g, 0), GAME_OK);
		float pol[GAME_MAX_ACTIONS], v;
		cr_assert_eq(eval_position(ev, &g, pol, &v), 0);
		cr_assert_eq(pol[3], 0, "the full column has no prior (logit %g)", extreme[t]);
		cr_assert(fake_answer_ok(&g, pol, v),
			  "the legal columns get the softmax of their own logits (full column's %g)",
			  extreme[t]);
		cr_assert(pol[0] > pol[1], "not the uniform fallback (logit %g)", extreme[t]);
		eval_free(ev);
	}
}

Test(eval, backend_failure_is_reported)
{
	fake_net f;
	fake_c4_init(&f, 8, 0);
	atomic_store(&f.fail, 1);
	nn_backend *be = &f.be;
	char err[128];
	evaluator *ev = eval_new(&be, 1, NN_ENC_C4, NULL, err, sizeof(err));
	cr_assert(ev, "%s", err);
	game g;
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_init(&g, &p);
	float pol[GAME_MAX_ACTIONS], v;
	cr_assert_eq(eval_position(ev, &g, pol, &v), -1);
	cr_assert_float_eq(pol[0], 1.0f / 7, 1e-7, "a failure answers uniform, not garbage");
	eval_stats st;
	eval_get_stats(ev, &st);
	cr_assert_eq(st.failures, 1);
	eval_free(ev);
}

Test(eval, wrong_encoding_refused)
{
	fake_net f;
	fake_c4_init(&f, 8, 0);
	nn_backend *be = &f.be;
	char err[128] = "";
	evaluator *ev = eval_new(&be, 1, NN_ENC_LZ18, NULL, err, sizeof(err));
	cr_assert_null(ev);
	cr_assert(strstr(err, "encoding"), "%s", err);
}

/* A CPU backend of a random 9x9 Go net with the given heads. */
static nn_backend *go9_backend(int heads, nn_net **net_out)
{
	char err[256];
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_arch_set_heads(&a, heads);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 5);
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, 4, &o, err, sizeof(err));
	cr_assert(be, "%s", err);
	*net_out = net;
	return be;
}

Test(eval, heads_follow_the_symmetry_and_the_reference)
{
	nn_net *net;
	nn_backend *be = go9_backend(NN_HEAD_OWN | NN_HEAD_SCORE, &net);
	eval_options o = eval_options_default();
	char err[128];
	evaluator *ev = eval_new(&be, 1, net->arch.encoding, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	cr_assert_eq(eval_heads(ev), NN_HEAD_OWN | NN_HEAD_SCORE);
	/* g, and t: the same moves under symmetry 5 (a reflection). */
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	game g, t;
	game_init(&g, &gp);
	game_init(&t, &gp);
	static const int moves[] = { 20, 60, 22, 40, 31, 50, 12 };
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		cr_assert_eq(game_play(&t, game_symmetry_move(&g, 5, moves[i])), GAME_OK);
		cr_assert_eq(game_play(&g, moves[i]), GAME_OK);
	}
	float pol[GAME_MAX_ACTIONS], v, own[81], score, tpol[GAME_MAX_ACTIONS], tv, town[81], tscore;
	cr_assert_eq(eval_raw_heads(ev, &g, 5, pol, &v, own, &score), 0);
	cr_assert_eq(eval_raw_heads(ev, &t, 0, tpol, &tv, town, &tscore), 0);
	/* The reference on t's planes: the untransformed heads. */
	float planes[32 * 81], rpol[82], rv, rown[81], rscore;
	cr_assert_gt(nn_encode(&t, net->arch.encoding, planes), 0);
	nn_reference_forward_heads(net, 1, planes, rpol, &rv, NULL, rown, &rscore);
	cr_assert_float_eq(tscore, rscore * 81, 1e-3);
	cr_assert_float_eq(score, tscore, 1e-4);
	double spread = 0;
	for (int p = 0; p < 81; p++) {
		cr_assert_float_eq(town[p], rown[p], 1e-4, "point %d", p);
		cr_assert_float_eq(own[p], town[game_symmetry_move(&g, 5, p)], 1e-4, "point %d", p);
		spread += fabs(town[p] - town[0]);
	}
	cr_assert_gt(spread, 1e-3, "the points' ownership differs, so the mapping is tested");
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);
}

Test(eval, a_missing_head_is_refused_with_the_policy_still_answered)
{
	nn_net *net;
	nn_backend *be = go9_backend(NN_HEAD_OWN, &net);
	eval_options o = eval_options_default();
	char err[128];
	evaluator *ev = eval_new(&be, 1, net->arch.encoding, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	cr_assert_eq(eval_heads(ev), NN_HEAD_OWN);
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	game g;
	game_init(&g, &gp);
	float pol[GAME_MAX_ACTIONS], v = 9, own[81], score = 42;
	cr_assert_eq(eval_raw_heads(ev, &g, 0, pol, &v, own, &score), -1);
	cr_assert_eq(score, 42, "a missing head leaves its output alone");
	cr_assert(v >= -1 && v <= 1, "the value is answered");
	cr_assert_eq(eval_raw_heads(ev, &g, 0, pol, &v, own, NULL), 0);
	for (int p = 0; p < 81; p++)
		cr_assert(own[p] > -1 && own[p] < 1);
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);
}

/* The cache keeps the score head's answer even for a request that did not
 * ask for it, so a search that later meets the position gets its score. */
Test(eval, a_cached_answer_keeps_its_score)
{
	nn_net *net;
	nn_backend *be = go9_backend(NN_HEAD_OWN | NN_HEAD_SCORE, &net);
	eval_options o = eval_options_default();
	o.random_symmetry = 0;
	char err[128];
	evaluator *ev = eval_new(&be, 1, net->arch.encoding, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	game g;
	game_init(&g, &gp);
	cr_assert_eq(game_play(&g, 30), GAME_OK);
	float pol[GAME_MAX_ACTIONS], v, own[81], want;
	cr_assert_eq(eval_position(ev, &g, pol, &v), 0);
	eval_stats st;
	eval_get_stats(ev, &st);
	cr_assert_eq(st.evals, 1);
	eval_scratch *s = eval_scratch_new(ev, 4);
	cr_assert(s);
	float score = 0;
	cr_assert_eq(eval_stage(ev, s, &g, pol, &v, &score), 0, "answered from the cache");
	cr_assert_eq(eval_post(ev, s), 0);
	eval_get_stats(ev, &st);
	cr_assert_eq(st.evals, 1, "no second network call");
	cr_assert_eq(eval_raw_heads(ev, &g, 0, pol, &v, own, &want), 0);
	cr_assert(!isnan(score));
	cr_assert_float_eq(score, want, 1e-4);
	eval_scratch_free(s);
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);
}

/* A network of boards 7 and 9 answers a 7x7 position: the reference on
 * the framed planes, each legal move's logit read where the frame and
 * the symmetry put it, and the ownership of each of its 49 points. */
Test(eval, a_smaller_board_is_read_through_the_frame)
{
	char err[256];
	game_params gp = game_params_sized(GAME_KIND_GO, 9, 7.5);
	nn_arch a = nn_arch_default(&gp, 1, 8);
	a.sizes = 1u << 7 | 1u << 9;
	nn_arch_set_heads(&a, NN_HEAD_OWN);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 17);
	nn_backend_options bo = nn_backend_options_default();
	bo.threads = 1;
	nn_backend *be = nn_backend_new(&nn_backend_cpu, net, 4, &bo, err, sizeof(err));
	cr_assert(be, "%s", err);
	eval_options o = eval_options_default();
	evaluator *ev = eval_new(&be, 1, a.encoding, &o, err, sizeof(err));
	cr_assert(ev, "%s", err);
	game_params p7 = game_params_sized(GAME_KIND_GO, 7, 7.5);
	game g;
	game_init(&g, &p7);
	cr_assert_eq(game_play(&g, 17), GAME_OK);
	cr_assert_eq(game_play(&g, 30), GAME_OK);
	static float planes[27 * 81];
	float pol[GAME_MAX_ACTIONS], v, own[49], ref_pol[82], ref_v, ref_own[81];
	for (int sym = 0; sym < 8; sym += 5) {
		cr_assert_eq(eval_raw_heads(ev, &g, sym, pol, &v, own, NULL), 0);
		cr_assert_eq(nn_encode_frame(&g, a.encoding, sym, 9, 9, planes), 27);
		nn_reference_forward_heads(net, 1, planes, ref_pol, &ref_v, NULL, ref_own, NULL);
		cr_assert_float_eq(v, ref_v, 1e-4);
		int legal[GAME_MAX_ACTIONS], n = game_legal_moves(&g, legal);
		double mx = -1e30, sum = 0;
		for (int i = 0; i < n; i++) {
			int k = nn_frame_action(&g, game_symmetry_move(&g, sym, legal[i]), 9, 9);
			mx = fmax(mx, ref_pol[k]);
		}
		for (int i = 0; i < n; i++)
			sum += exp(ref_pol[nn_frame_action(&g, game_symmetry_move(&g, sym, legal[i]), 9, 9)] -
				   mx);
		for (int i = 0; i < n; i++) {
			int k = nn_frame_action(&g, game_symmetry_move(&g, sym, legal[i]), 9, 9);
			cr_assert_float_eq(pol[legal[i]], exp(ref_pol[k] - mx) / sum, 1e-4,
					   "sym %d move %d", sym, legal[i]);
		}
		for (int pt = 0; pt < 49; pt++)
			cr_assert_float_eq(own[pt],
					   ref_own[nn_frame_action(&g, game_symmetry_move(&g, sym, pt), 9, 9)],
					   1e-4, "sym %d point %d", sym, pt);
	}
	eval_free(ev);
	nn_backend_free(be);
	nn_net_free(net);
}

/* Staged batches from two threads at once (self-play's workers): each
 * eval_post's positions lie side by side in its scratch, which the server
 * hands to the backend as they are, and batches that mix two scratches
 * are gathered. Every position gets its own answer either way. */
typedef struct stager {
	evaluator *ev;
	int id, rounds, errors;
} stager;

static void *stager_main(void *arg)
{
	stager *w = arg;
	enum { K = 6 };
	eval_scratch *s = eval_scratch_new(w->ev, K);
	cr_assert(s);
	uint64_t rng = 0x9e3779b9ULL * (uint64_t)(w->id + 3);
	static __thread game g[K];
	for (int r = 0; r < w->rounds; r++) {
		float pol[K][GAME_MAX_ACTIONS], val[K];
		for (int i = 0; i < K; i++) {
			random_c4(&g[i], &rng);
			cr_assert_eq(eval_stage(w->ev, s, &g[i], pol[i], &val[i], NULL), 1);
		}
		cr_assert_eq(eval_post(w->ev, s), 0);
		for (int i = 0; i < K; i++)
			w->errors += !fake_answer_ok(&g[i], pol[i], val[i]);
	}
	eval_scratch_free(s);
	return NULL;
}

Test(eval, staged_batches_answer_each_position)
{
	fake_net f;
	evaluator *ev = queue_c4(&f, 0);
	pthread_t th[2];
	stager w[2];
	for (int i = 0; i < 2; i++) {
		w[i] = (stager){ .ev = ev, .id = i, .rounds = 200 };
		pthread_create(&th[i], NULL, stager_main, &w[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	eval_stats st;
	eval_get_stats(ev, &st);
	eval_free(ev);
	cr_assert_eq(w[0].errors + w[1].errors, 0, "%d answers wrong", w[0].errors + w[1].errors);
	cr_assert_eq(st.evals, 2 * 200 * 6);
}
