/* eval.c: evaluation queue, server threads and NN cache (see eval.h). */
#include "search/eval.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "engine/rng.h"
#include "nn/encode.h"

/* Largest input of one position: 32 planes of 19x19 covers every encoding. */
#define EVAL_MAX_INPUT (32 * GO_MAX_SIZE * GO_MAX_SIZE)
#define EVAL_QUEUE_CAP 4096
#define EVAL_CACHE_STRIPES 256

/* One pending position. It lives on the waiting thread's stack: the server
 * must not touch it after it has signalled done (under the queue lock). */
typedef struct eval_request {
	const float *planes;  /* encoded input, as the backend takes it */
	const int *legal;     /* legal actions of the original position */
	const int *logit_idx; /* for each legal action, its index in the logits */
	int n_legal;          /* entries in legal[] and logit_idx[] */
	int n_actions;        /* size of policy[] */
	uint64_t key;         /* cache key */
	bool store;           /* put the answer in the cache */
	float *policy;        /* answer: [n_actions] */
	float *value;         /* answer */
	float *own;           /* answer of the ownership head: [n_points], or NULL */
	float *score;         /* answer of the score head, or NULL */
	float score_buf;      /* where it goes when the caller wants none: the
			       * cache keeps every answer's score */
	const int *point_idx; /* for each point, its index in the ownership output */
	int n_points;         /* entries of own[] and point_idx[] */
	int status;           /* 0 pending, 1 done, -1 backend failure */
	pthread_cond_t done;  /* signalled when status changes */
	int *unanswered;      /* the poster's count of its requests not yet done */
} eval_request;

typedef struct eval_server {
	struct evaluator *ev; /* owner */
	nn_backend *be;       /* its backend */
	pthread_t thread;     /* the server thread */
	int started;          /* thread was created */
	float *planes;        /* [max_batch][input] */
	float *logits;        /* [max_batch][policy_outputs] */
	float *values;        /* [max_batch] */
	float *own;           /* [max_batch][points] when the backend has the head */
	float *score;         /* [max_batch] when the backend has the head */
} eval_server;

/* One answer in the cache, its policy after it: a lookup that hits reads
 * one entry's consecutive cache lines, a miss one line (the key). */
typedef struct eval_cache_entry {
	uint64_t key;             /* 0 = empty */
	float value;
	float score;              /* the score head's answer, NAN without */
	float policy[];           /* [n_actions] */
} eval_cache_entry;

typedef struct eval_cache {
	size_t n;                 /* entries */
	int n_actions;            /* policy floats per entry */
	size_t stride;            /* bytes per entry, whole cache lines */
	unsigned char *entries;   /* [n][stride], cache-line aligned in mem */
	void *mem;                /* zeroed (every key empty) as the pages are touched */
	pthread_mutex_t stripe[EVAL_CACHE_STRIPES]; /* lock of index % stripes */
} eval_cache;

struct evaluator {
	nn_encoding enc;          /* input encoding */
	eval_options opt;         /* as given, max_batch clamped */
	int input_floats;         /* floats per encoded position */
	int n_points;             /* points of the network's board (its frame) */
	int frame_w, frame_h;     /* the network's board: a smaller one sits in its
				   * lower left corner (nn_encode_frame) */
	int heads;                /* NN_HEAD_OWN | NN_HEAD_SCORE every backend computes */
	int n_servers;            /* 0: uniform evaluator */
	eval_server *servers;     /* [n_servers] */
	pthread_mutex_t mu;       /* guards the queue and stop */
	pthread_cond_t not_empty; /* a request was posted, or stop */
	pthread_cond_t not_full;  /* room in the queue */
	eval_request *queue[EVAL_QUEUE_CAP]; /* ring of pending requests */
	int q_head, q_count;      /* ring position and fill */
	int stop;                 /* servers must exit */
	int n_clients;            /* threads between eval_client_enter and _leave */
	int n_waiting;            /* threads with requests not yet answered */
	eval_cache *cache;        /* NULL when off */
	atomic_uint_fast64_t sym_counter; /* symmetry draws so far */
	atomic_uint_fast64_t n_requests, n_hits, n_evals, n_batches, n_failures;
};


eval_options eval_options_default(void)
{
	eval_options o = { .max_batch = 16, .cache_bytes = 64u << 20, .random_symmetry = 1, .seed = 1,
			   .fill_wait_us = 3000 };
	return o;
}

uint64_t eval_key(const game *g, nn_encoding enc)
{
	return nn_encode_key(g, enc) | 1; /* 0 marks an empty cache slot */
}

/* ---- cache ---------------------------------------------------------------- */

static void cache_free(eval_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < EVAL_CACHE_STRIPES; i++)
		pthread_mutex_destroy(&c->stripe[i]);
	free(c->mem);
	free(c);
}

#define EVAL_CACHE_LINE 64

static eval_cache *cache_new(size_t bytes, int n_actions)
{
	size_t per = sizeof(eval_cache_entry) + sizeof(float) * (size_t)n_actions;
	per = (per + EVAL_CACHE_LINE - 1) / EVAL_CACHE_LINE * EVAL_CACHE_LINE;
	size_t n = bytes / per;
	if (n < 16)
		return NULL;
	eval_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->n = n;
	c->n_actions = n_actions;
	c->stride = per;
	c->mem = calloc(1, n * per + EVAL_CACHE_LINE);
	if (!c->mem) {
		free(c);
		return NULL;
	}
	uintptr_t at = ((uintptr_t)c->mem + EVAL_CACHE_LINE - 1) & ~(uintptr_t)(EVAL_CACHE_LINE - 1);
	c->entries = (unsigned char *)at;
	for (int i = 0; i < EVAL_CACHE_STRIPES; i++)
		pthread_mutex_init(&c->stripe[i], NULL);
	return c;
}

static inline eval_cache_entry *cache_entry(eval_cache *c, size_t i)
{
	return (eval_cache_entry *)(c->entries + i * c->stride);
}

static bool cache_get(eval_cache *c, uint64_t key, float *policy, int n_actions, float *value,
		      float *score)
{
	size_t i = key % c->n;
	eval_cache_entry *e = cache_entry(c, i);
	bool hit = false;
	pthread_mutex_lock(&c->stripe[i % EVAL_CACHE_STRIPES]);
	if (e->key == key && n_actions == c->n_actions) {
		memcpy(policy, e->policy, sizeof(float) * (size_t)n_actions);
		*value = e->value;
		if (score)
			*score = e->score;
		hit = true;
	}
	pthread_mutex_unlock(&c->stripe[i % EVAL_CACHE_STRIPES]);
	return hit;
}

static void cache_put(eval_cache *c, uint64_t key, const float *policy, int n_actions, float value,
		      float score)
{
	if (n_actions != c->n_actions)
		return;
	size_t i = key % c->n;
	eval_cache_entry *e = cache_entry(c, i);
	pthread_mutex_lock(&c->stripe[i % EVAL_CACHE_STRIPES]);
	e->key = key;
	e->value = value;
	e->score = score;
	memcpy(e->policy, policy, sizeof(float) * (size_t)n_actions);
	pthread_mutex_unlock(&c->stripe[i % EVAL_CACHE_STRIPES]);
}

void eval_clear_cache(evaluator *ev)
{
	eval_cache *c = ev->cache;
	if (!c)
		return;
	for (int s = 0; s < EVAL_CACHE_STRIPES; s++)
		pthread_mutex_lock(&c->stripe[s]);
	for (size_t i = 0; i < c->n; i++)
		cache_entry(c, i)->key = 0;
	for (int s = EVAL_CACHE_STRIPES - 1; s >= 0; s--)
		pthread_mutex_unlock(&c->stripe[s]);
}

/* ---- server --------------------------------------------------------------- */

/* Softmax of the logits over the request's legal moves, into its policy:
 * the sum a float's (at most GAME_MAX_ACTIONS terms of at most 1) and one
 * reciprocal instead of a division per move, since this runs on the
 * network's thread for every position evaluated. */
static void answer_request(eval_request *r, const float *logits, float value)
{
	float ex[GAME_MAX_ACTIONS];
	float mx = -INFINITY;
	for (int i = 0; i < r->n_legal; i++)
		if (logits[r->logit_idx[i]] > mx)
			mx = logits[r->logit_idx[i]];
	float sum = 0;
	for (int i = 0; i < r->n_legal; i++) {
		ex[i] = expf(logits[r->logit_idx[i]] - mx);
		sum += ex[i];
	}
	memset(r->policy, 0, sizeof(float) * (size_t)r->n_actions);
	/* A NaN from a broken network must not poison the tree: fall back to
	 * uniform over the legal moves. */
	if (!(sum > 0) || !isfinite(sum)) {
		for (int i = 0; i < r->n_legal; i++)
			r->policy[r->legal[i]] = 1.0f / (float)r->n_legal;
	} else {
		float inv = 1.0f / sum;
		for (int i = 0; i < r->n_legal; i++)
			r->policy[r->legal[i]] = ex[i] * inv;
	}
	if (!isfinite(value))
		value = 0;
	*r->value = value < -1 ? -1 : value > 1 ? 1 : value;
}

/* Before taking a short batch, waits for the registered clients that are
 * still working (descending their trees) to post: they will within a
 * playout, and a batch of 32 costs little more than one of 16. It stops
 * waiting when the batch is full, when every client is blocked on an answer
 * (no more requests can come), or after opt.fill_wait_us, for clients held
 * up elsewhere. Called and returns with ev->mu held. */
static void fill_wait(evaluator *ev)
{
	if (ev->stop || ev->q_count >= ev->opt.max_batch || ev->n_clients <= ev->n_waiting)
		return;
	struct timespec dl = clock_deadline(ev->opt.fill_wait_us * 1e-6);
	while (!ev->stop && ev->q_count < ev->opt.max_batch && ev->n_clients > ev->n_waiting)
		if (pthread_cond_timedwait(&ev->not_empty, &ev->mu, &dl) == ETIMEDOUT)
			break;
}

static void *server_main(void *arg)
{
	eval_server *s = arg;
	evaluator *ev = s->ev;
	int outs = s->be->arch.policy_outputs;
	eval_request *batch[EVAL_QUEUE_CAP];
	/* By name in top -H, perf and /proc/PID/task (scripts/selfplay_cpu.sh). */
	pthread_setname_np(pthread_self(), "sente-nn");

	pthread_mutex_lock(&ev->mu);
	for (;;) {
		while (ev->q_count == 0 && !ev->stop)
			pthread_cond_wait(&ev->not_empty, &ev->mu);
		if (ev->q_count == 0)
			break; /* stopping, and every request is answered */
		fill_wait(ev);
		if (ev->q_count == 0)
			continue; /* another server took them while this one waited */
		int k = ev->q_count < ev->opt.max_batch ? ev->q_count : ev->opt.max_batch;
		for (int i = 0; i < k; i++) {
			batch[i] = ev->queue[ev->q_head];
			ev->q_head = (ev->q_head + 1) % EVAL_QUEUE_CAP;
		}
		ev->q_count -= k;
		pthread_cond_broadcast(&ev->not_full);
		pthread_mutex_unlock(&ev->mu);

		/* The requests of one eval_post sit side by side in its
		 * scratch: the backend reads them there. Others are gathered. */
		const float *in = batch[0]->planes;
		for (int i = 1; i < k && in; i++)
			if (batch[i]->planes != batch[0]->planes + (size_t)i * (size_t)ev->input_floats)
				in = NULL;
		if (!in) {
			for (int i = 0; i < k; i++)
				memcpy(s->planes + (size_t)i * (size_t)ev->input_floats,
				       batch[i]->planes, sizeof(float) * (size_t)ev->input_floats);
			in = s->planes;
		}
		/* The heads only where a request wants them (the search asks
		 * for the score, one number; ownership is a board's worth). */
		bool want_own = false, want_score = false;
		for (int i = 0; i < k; i++) {
			want_own |= batch[i]->own != NULL;
			want_score |= batch[i]->score != NULL;
		}
		int rc = want_own || want_score
				 ? nn_backend_forward_heads(s->be, k, in, s->logits, s->values, NULL,
							    want_own ? s->own : NULL,
							    want_score ? s->score : NULL)
				 : nn_backend_forward(s->be, k, in, s->logits, s->values, NULL);
		atomic_fetch_add(&ev->n_batches, 1);
		atomic_fetch_add(&ev->n_evals, (uint64_t)k);
		if (rc != 0)
			atomic_fetch_add(&ev->n_failures, 1);
		for (int i = 0; i < k && rc == 0; i++) {
			answer_request(batch[i], s->logits + (size_t)i * (size_t)outs, s->values[i]);
			/* The transformed position's point sym(p) is our point p. */
			const float *own = s->own + (size_t)i * (size_t)ev->n_points;
			for (int p = 0; batch[i]->own && p < batch[i]->n_points; p++)
				batch[i]->own[p] = own[batch[i]->point_idx[p]];
			if (batch[i]->score)
				*batch[i]->score = s->score[i] * (float)ev->n_points;
			if (batch[i]->store)
				cache_put(ev->cache, batch[i]->key, batch[i]->policy, batch[i]->n_actions,
					  *batch[i]->value, batch[i]->score ? *batch[i]->score : NAN);
		}

		pthread_mutex_lock(&ev->mu);
		for (int i = 0; i < k; i++) {
			batch[i]->status = rc == 0 ? 1 : -1;
			if (--*batch[i]->unanswered == 0)
				ev->n_waiting--; /* counted off here, not when it wakes */
			pthread_cond_signal(&batch[i]->done);
		}
	}
	pthread_mutex_unlock(&ev->mu);
	return NULL;
}

/* ---- public --------------------------------------------------------------- */

evaluator *eval_new(nn_backend **backends, int n_backends, nn_encoding enc,
		    const eval_options *opt, char *err, size_t errlen)
{
	evaluator *ev = calloc(1, sizeof(*ev));
	if (!ev) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ev->enc = enc;
	ev->opt = opt ? *opt : eval_options_default();
	if (ev->opt.max_batch < 1)
		ev->opt.max_batch = 1;
	pthread_mutex_init(&ev->mu, NULL);
	clock_cond_init(&ev->not_empty); /* waits use clock_deadline */
	pthread_cond_init(&ev->not_full, NULL);
	if (n_backends == 0)
		return ev;

	const nn_arch *a = &backends[0]->arch;
	ev->input_floats = a->in_planes * a->board_w * a->board_h;
	if (a->encoding != enc || ev->input_floats > EVAL_MAX_INPUT) {
		snprintf(err, errlen, "the network expects encoding %s, not %s",
			 nn_encoding_name(a->encoding), nn_encoding_name(enc));
		goto fail;
	}
	for (int i = 0; i < n_backends; i++) {
		if (backends[i]->max_batch < ev->opt.max_batch)
			ev->opt.max_batch = backends[i]->max_batch;
		if (backends[i]->arch.policy_outputs != a->policy_outputs ||
		    backends[i]->arch.in_planes != a->in_planes) {
			snprintf(err, errlen, "backends run different networks");
			goto fail;
		}
	}
	ev->n_points = a->board_w * a->board_h;
	ev->frame_w = a->board_w;
	ev->frame_h = a->board_h;
	ev->heads = NN_HEAD_OWN | NN_HEAD_SCORE;
	for (int i = 0; i < n_backends; i++)
		ev->heads &= nn_backend_heads(backends[i]);
	if (ev->opt.cache_bytes)
		ev->cache = cache_new(ev->opt.cache_bytes, a->policy_outputs);
	ev->servers = calloc((size_t)n_backends, sizeof(eval_server));
	if (!ev->servers) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	ev->n_servers = n_backends;
	for (int i = 0; i < n_backends; i++) {
		eval_server *s = &ev->servers[i];
		size_t mb = (size_t)ev->opt.max_batch;
		s->ev = ev;
		s->be = backends[i];
		s->planes = malloc(mb * (size_t)ev->input_floats * sizeof(float));
		s->logits = malloc(mb * (size_t)a->policy_outputs * sizeof(float));
		s->values = malloc(mb * sizeof(float));
		s->own = calloc(mb * (size_t)ev->n_points, sizeof(float));
		s->score = calloc(mb, sizeof(float));
		if (!s->planes || !s->logits || !s->values || !s->own || !s->score) {
			snprintf(err, errlen, "out of memory for batch buffers");
			goto fail;
		}
		if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
			snprintf(err, errlen, "cannot start the evaluation thread");
			goto fail;
		}
		s->started = 1;
	}
	return ev;
fail:
	eval_free(ev);
	return NULL;
}

void eval_free(evaluator *ev)
{
	if (!ev)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->stop = 1;
	pthread_cond_broadcast(&ev->not_empty);
	pthread_mutex_unlock(&ev->mu);
	for (int i = 0; i < ev->n_servers; i++) {
		eval_server *s = &ev->servers[i];
		if (s->started)
			pthread_join(s->thread, NULL);
		free(s->planes);
		free(s->logits);
		free(s->values);
		free(s->own);
		free(s->score);
	}
	free(ev->servers);
	cache_free(ev->cache);
	pthread_cond_destroy(&ev->not_full);
	pthread_cond_destroy(&ev->not_empty);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

int eval_has_network(const evaluator *ev) { return ev->n_servers > 0; }

static void uniform(const game *g, const int *legal, int n_legal, float *policy, float *value)
{
	memset(policy, 0, sizeof(float) * (size_t)game_num_actions(g));
	for (int i = 0; i < n_legal; i++)
		policy[legal[i]] = 1.0f / (float)n_legal;
	*value = 0;
}

/* The game's cheap prior over the legal moves, normalised, over policy[]. */
static void plain_prior(const game *g, const int *legal, int n_legal, float *policy)
{
	const game_desc *d = game_desc_of(g);
	float w[GAME_MAX_ACTIONS];
	double sum = 0;
	if (!d->plain_prior)
		return;
	d->plain_prior(g, legal, n_legal, w);
	for (int i = 0; i < n_legal; i++)
		sum += w[i];
	if (!(sum > 0))
		return;
	for (int i = 0; i < n_legal; i++)
		policy[legal[i]] = (float)(w[i] / sum);
}

/* Prepares the evaluation of g under symmetry `sym` (-1: random when the
 * options say so), through the cache when use_cache. Returns 0 when it was
 * answered at once (uniform evaluator, no legal move, cache hit), 1 when r
 * is ready to post, -1 on failure (answered uniform). planes, legal and idx
 * are the caller's buffers, which must outlive the request. */
static int prepare(evaluator *ev, const game *g, int sym, bool use_cache, float *policy,
		   float *value, float *score, float *planes, int *legal, int *n_legal_out, int *idx,
		   eval_request *r)
{
	int n_legal = game_legal_moves(g, legal);
	if (n_legal_out)
		*n_legal_out = n_legal;
	int n_actions = game_num_actions(g);
	atomic_fetch_add(&ev->n_requests, 1);
	if (score) /* until the score head answers */
		*score = NAN;
	if (score && !(eval_heads(ev) & NN_HEAD_SCORE))
		score = NULL;
	if (ev->n_servers == 0 || n_legal == 0) {
		uniform(g, legal, n_legal, policy, value);
		if (ev->opt.plain_prior && n_legal > 0)
			plain_prior(g, legal, n_legal, policy);
		return 0;
	}
	uint64_t key = eval_key(g, ev->enc);
	use_cache = use_cache && ev->cache;
	if (use_cache && cache_get(ev->cache, key, policy, n_actions, value, score)) {
		atomic_fetch_add(&ev->n_hits, 1);
		return 0;
	}
	if (sym < 0) {
		sym = 0;
		if (ev->opt.random_symmetry) {
			uint64_t draw = atomic_fetch_add(&ev->sym_counter, 1);
			sym = (int)(rng_mix(ev->opt.seed ^ rng_mix(draw)) % (uint64_t)game_num_symmetries(g));
		}
	}
	/* The transformed position's logit for its action sym(a) belongs to
	 * our action a (nn/encode.h), where the frame has it: through the
	 * symmetry's table, not two calls a legal move. */
	const int16_t *to = game_symmetry_table(g, sym);
	if (game_width(g) == ev->frame_w && game_height(g) == ev->frame_h) {
		for (int i = 0; i < n_legal; i++)
			idx[i] = to[legal[i]];
	} else {
		for (int i = 0; i < n_legal; i++)
			idx[i] = nn_frame_action(g, to[legal[i]], ev->frame_w, ev->frame_h);
	}
	if (nn_encode_frame(g, ev->enc, sym, ev->frame_w, ev->frame_h, planes) < 0) {
		uniform(g, legal, n_legal, policy, value);
		return -1;
	}
	r->planes = planes;
	r->legal = legal;
	r->logit_idx = idx;
	r->n_legal = n_legal;
	r->n_actions = n_actions;
	r->key = key;
	r->store = use_cache;
	r->policy = policy;
	r->value = value;
	r->own = NULL;
	/* A network with the score head answers it for every position, so
	 * that a cached answer has it when a search later asks. */
	r->score = score ? score : eval_heads(ev) & NN_HEAD_SCORE ? &r->score_buf : NULL;
	r->point_idx = NULL;
	r->n_points = 0;
	r->status = 0;
	return 1;
}

/* Posts n prepared requests and waits for all their answers. Returns the
 * number that failed (answered uniform). */
static int post_and_wait(evaluator *ev, eval_request **reqs, int n)
{
	int failed = 0, unanswered = n;
	pthread_mutex_lock(&ev->mu);
	for (int i = 0; i < n; i++) {
		reqs[i]->unanswered = &unanswered;
		while (ev->q_count == EVAL_QUEUE_CAP) {
			pthread_cond_signal(&ev->not_empty);
			pthread_cond_wait(&ev->not_full, &ev->mu);
		}
		ev->queue[(ev->q_head + ev->q_count) % EVAL_QUEUE_CAP] = reqs[i];
		ev->q_count++;
	}
	ev->n_waiting++;
	pthread_cond_broadcast(&ev->not_empty);
	for (int i = 0; i < n; i++)
		while (reqs[i]->status == 0)
			pthread_cond_wait(&reqs[i]->done, &ev->mu);
	pthread_mutex_unlock(&ev->mu);
	for (int i = 0; i < n; i++) {
		eval_request *r = reqs[i];
		if (r->status < 0) {
			memset(r->policy, 0, sizeof(float) * (size_t)r->n_actions);
			for (int k = 0; k < r->n_legal; k++)
				r->policy[r->legal[k]] = 1.0f / (float)r->n_legal;
			*r->value = 0;
			failed++;
		}
	}
	return failed;
}

static int post_one(evaluator *ev, eval_request *r);

static int evaluate(evaluator *ev, const game *g, int sym, bool use_cache, float *policy,
		    float *value)
{
	int legal[GAME_MAX_ACTIONS], idx[GAME_MAX_ACTIONS];
	float planes[EVAL_MAX_INPUT];
	eval_request r;
	int rc = prepare(ev, g, sym, use_cache, policy, value, NULL, planes, legal, NULL, idx, &r);
	if (rc <= 0)
		return rc;
	return post_one(ev, &r);
}

/* Posts one prepared request and waits for its answer: 0, or -1. */
static int post_one(evaluator *ev, eval_request *r)
{
	pthread_cond_init(&r->done, NULL);
	int failed = post_and_wait(ev, &r, 1);
	pthread_cond_destroy(&r->done);
	return failed ? -1 : 0;
}

struct eval_scratch {
	int cap;                 /* positions per call */
	int input_floats;        /* floats per encoded position */
	float *planes;           /* [cap][input_floats] */
	int *legal;              /* [cap][GAME_MAX_ACTIONS] */
	int *idx;                /* [cap][GAME_MAX_ACTIONS] */
	eval_request *reqs;      /* [cap], their condition variables made once */
	eval_request **posted;   /* [cap] the ones sent to the queue */
	int staged;              /* requests waiting for eval_post */
};

eval_scratch *eval_scratch_new(evaluator *ev, int cap)
{
	eval_scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cap = cap;
	s->input_floats = ev->input_floats > 0 ? ev->input_floats : 1;
	s->planes = malloc(sizeof(float) * (size_t)cap * (size_t)s->input_floats);
	s->legal = malloc(sizeof(int) * (size_t)cap * GAME_MAX_ACTIONS);
	s->idx = malloc(sizeof(int) * (size_t)cap * GAME_MAX_ACTIONS);
	s->reqs = calloc((size_t)cap, sizeof(eval_request));
	s->posted = calloc((size_t)cap, sizeof(eval_request *));
	if (!s->planes || !s->legal || !s->idx || !s->reqs || !s->posted) {
		free(s->planes);
		free(s->legal);
		free(s->idx);
		free(s->reqs);
		free(s->posted);
		free(s);
		return NULL;
	}
	for (int i = 0; i < cap; i++)
		pthread_cond_init(&s->reqs[i].done, NULL);
	return s;
}

void eval_scratch_free(eval_scratch *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->cap; i++)
		pthread_cond_destroy(&s->reqs[i].done);
	free(s->planes);
	free(s->legal);
	free(s->idx);
	free(s->reqs);
	free(s->posted);
	free(s);
}

int eval_stage_legal(evaluator *ev, eval_scratch *s, const game *g, float *policy, float *value,
		     float *score, int *legal, int *n_legal)
{
	int i = s->staged;
	assert(i < s->cap);
	eval_request *r = &s->reqs[i];
	int rc = prepare(ev, g, -1, true, policy, value, score,
			 s->planes + (size_t)i * (size_t)s->input_floats,
			 legal ? legal : s->legal + (size_t)i * GAME_MAX_ACTIONS, n_legal,
			 s->idx + (size_t)i * GAME_MAX_ACTIONS, r);
	if (rc > 0)
		s->posted[s->staged++] = r;
	return rc;
}

int eval_stage(evaluator *ev, eval_scratch *s, const game *g, float *policy, float *value,
	       float *score)
{
	return eval_stage_legal(ev, s, g, policy, value, score, NULL, NULL);
}

int eval_post(evaluator *ev, eval_scratch *s)
{
	int n = s->staged;
	s->staged = 0;
	return n > 0 && post_and_wait(ev, s->posted, n) > 0 ? -1 : 0;
}

void eval_prefetch(evaluator *ev, const game *g)
{
	if (!ev->cache || ev->n_servers == 0)
		return;
	__builtin_prefetch(cache_entry(ev->cache, eval_key(g, ev->enc) % ev->cache->n));
}

int eval_batch_legal(evaluator *ev, eval_scratch *s, int n, const game *const *games,
		     float *const *policies, float *values, float *scores, int *const *legal,
		     int *n_legal)
{
	int failed = 0;
	assert(n <= s->cap);
	for (int i = 0; i < n; i++)
		failed += eval_stage_legal(ev, s, games[i], policies[i], &values[i],
					   scores ? &scores[i] : NULL, legal ? legal[i] : NULL,
					   n_legal ? &n_legal[i] : NULL) < 0;
	failed += eval_post(ev, s) < 0;
	return failed ? -1 : 0;
}

int eval_batch(evaluator *ev, eval_scratch *s, int n, const game *const *games, float *const *policies,
	       float *values, float *scores)
{
	return eval_batch_legal(ev, s, n, games, policies, values, scores, NULL, NULL);
}

int eval_position(evaluator *ev, const game *g, float *policy, float *value)
{
	return evaluate(ev, g, -1, true, policy, value);
}

int eval_raw(evaluator *ev, const game *g, int sym, float *policy, float *value)
{
	if (sym < 0 || sym >= game_num_symmetries(g))
		sym = 0;
	return evaluate(ev, g, sym, false, policy, value);
}

int eval_heads(const evaluator *ev) { return ev->n_servers > 0 ? ev->heads : 0; }

int eval_raw_heads(evaluator *ev, const game *g, int sym, float *policy, float *value,
		   float *ownership, float *score)
{
	int legal[GAME_MAX_ACTIONS], idx[GAME_MAX_ACTIONS], pts[GO_MAX_SIZE * GO_MAX_SIZE];
	float planes[EVAL_MAX_INPUT];
	eval_request r;
	int n_points = game_width(g) * game_height(g);
	if ((ownership && !(eval_heads(ev) & NN_HEAD_OWN)) ||
	    (score && !(eval_heads(ev) & NN_HEAD_SCORE)) ||
	    (ownership && n_points > ev->n_points)) {
		eval_raw(ev, g, sym, policy, value);
		return -1;
	}
	if (sym < 0 || sym >= game_num_symmetries(g))
		sym = 0;
	int rc = prepare(ev, g, sym, false, policy, value, NULL, planes, legal, NULL, idx, &r);
	if (rc <= 0) /* answered at once: no network, or no legal move */
		return rc < 0 || ownership || score ? -1 : 0;
	/* Our point p is the transformed position's sym(p), as for moves,
	 * where the frame has it. */
	for (int p = 0; p < n_points; p++)
		pts[p] = nn_frame_action(g, game_symmetry_move(g, sym, p), ev->frame_w, ev->frame_h);
	r.own = ownership;
	r.score = score;
	r.point_idx = pts;
	r.n_points = n_points;
	r.status = 0;
	return post_one(ev, &r);
}

void eval_client_enter(evaluator *ev)
{
	pthread_mutex_lock(&ev->mu);
	ev->n_clients++;
	pthread_mutex_unlock(&ev->mu);
}

void eval_client_leave(evaluator *ev)
{
	pthread_mutex_lock(&ev->mu);
	ev->n_clients--;
	pthread_cond_broadcast(&ev->not_empty); /* a waiting server re-checks */
	pthread_mutex_unlock(&ev->mu);
}

void eval_get_stats(const evaluator *ev, eval_stats *out)
{
	evaluator *e = (evaluator *)ev; /* atomics loads need a non-const pointer */
	out->requests = atomic_load(&e->n_requests);
	out->cache_hits = atomic_load(&e->n_hits);
	out->evals = atomic_load(&e->n_evals);
	out->batches = atomic_load(&e->n_batches);
	out->failures = atomic_load(&e->n_failures);
}
