/* learner.c: a learner is its table and its context (learner.h); this file
 * holds what is the same for every kind: options, dispatch, and the window's
 * refill from the store. */
#include "train/learner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct learner {
	const learner_ops *ops; /* the kind */
	void *ctx;              /* its context */
	char what[256];         /* learner_describe */
};

learner_options learner_options_default(void)
{
	learner_options o;
	memset(&o, 0, sizeof(o));
	o.train = train_options_default();
	o.window = 100000;
	o.precision = NN_DTYPE_FP16;
	/* Half the game's result, half the search's root value: at equal CPU
	 * minutes, 3 Connect Four seeds of each, the network alone erred on
	 * 18.6% against 20.5% for the result alone (docs/LEARNING.md). */
	o.value_q_weight = 0.5f;
	return o;
}

const learner_ops *learner_by_name(const char *name)
{
	static const learner_ops *const all[] = { &learner_cpu, &learner_cuda };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, all[i]->name))
			return all[i];
	return NULL;
}

learner *learner_new(const learner_ops *ops, const nn_net *net, const learner_options *o,
		     char *err, size_t errlen)
{
	learner *l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->ops = ops;
	l->ctx = ops->create(net, o, l->what, sizeof(l->what), err, errlen);
	if (!l->ctx) {
		free(l);
		return NULL;
	}
	return l;
}

void learner_free(learner *l)
{
	if (!l)
		return;
	l->ops->destroy(l->ctx);
	free(l);
}

const learner_ops *learner_kind(const learner *l) { return l->ops; }
int learner_add_game(learner *l, const game_record *r) { return l->ops->add_game(l->ctx, r); }
int64_t learner_positions(const learner *l) { return l->ops->positions(l->ctx); }
nn_net *learner_net(learner *l) { return l->ops->net(l->ctx); }
int64_t learner_steps(const learner *l) { return l->ops->steps(l->ctx); }
void learner_set_comm(learner *l, comm *c) { l->ops->set_comm(l->ctx, c); }
int learner_broadcast(learner *l, int root) { return l->ops->broadcast(l->ctx, root); }
int learner_checkpoint_world(const learner *l) { return l->ops->checkpoint_world(l->ctx); }
const char *learner_describe(const learner *l) { return l->what; }
const char *learner_error(const learner *l) { return l->ops->error(l->ctx); }

int learner_step(learner *l, int global, int first, train_stats *st)
{
	return l->ops->step(l->ctx, global, first, st);
}

int learner_set_window(learner *l, int64_t window)
{
	return l->ops->set_window(l->ctx, window);
}

int learner_recompute_bn(learner *l, int batches)
{
	return l->ops->recompute_bn(l->ctx, batches);
}

int learner_checkpoint_save(learner *l, const char *path, char *err, size_t errlen)
{
	return l->ops->checkpoint_save(l->ctx, path, err, errlen);
}

int learner_checkpoint_load(learner *l, const char *path, char *err, size_t errlen)
{
	return l->ops->checkpoint_load(l->ctx, path, err, errlen);
}

/* ---- the window's refill ------------------------------------------------- */

/* One process: the records the store delivers (newest first), copied, to be
 * added in reverse. */
typedef struct refill_list {
	game_record *recs; /* copies */
	int n, cap;        /* used, allocated */
	int64_t last_id;   /* newest game id seen */
} refill_list;

static int refill_collect(void *ctx, int64_t game_id, const game_record *r)
{
	refill_list *l = ctx;
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 1024;
		game_record *p = realloc(l->recs, sizeof(*p) * (size_t)cap);
		if (!p)
			return 1;
		l->recs = p;
		l->cap = cap;
	}
	if (record_copy(&l->recs[l->n], r) != 0)
		return 1;
	l->n++;
	if (game_id > l->last_id)
		l->last_id = game_id;
	return 0;
}

static int refill_single(learner *L, store *db, int64_t window, int64_t *last_id, int *added,
			 char *err, size_t errlen)
{
	refill_list list = { .last_id = *last_id };
	int rc = -1;
	int n = store_recent_games(db, window, *last_id, refill_collect, &list, err, errlen);
	if (n < 0) {
		*added = -1;
		goto out;
	}
	if (list.n < n) {
		snprintf(err, errlen, "out of memory reading %d games", n);
		goto out;
	}
	for (int i = list.n - 1; i >= 0; i--)
		if (learner_add_game(L, &list.recs[i]) == 0)
			(*added)++;
	*last_id = list.last_id;
	rc = 0;
out:
	for (int i = 0; i < list.n; i++)
		record_free(&list.recs[i]);
	free(list.recs);
	return rc;
}

/* Several ranks: encoded records, newest first as the store delivers them,
 * for the broadcast. */
typedef struct game_pack {
	uint8_t *buf;    /* u32 length + blob, repeated */
	size_t len, cap; /* bytes used, allocated */
	int64_t last_id; /* newest game id seen */
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
	if (game_id > p->last_id)
		p->last_id = game_id;
	free(blob);
	return 0;
}

static int refill_ranks(learner *L, store *db, comm *c, int64_t window, int64_t *last_id,
			int *added, char *err, size_t errlen)
{
	game_pack p = { .last_id = *last_id };
	uint64_t hdr[2] = { 0, 0 }; /* bytes, ok */
	size_t *at = NULL;
	int rc = -1;
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
			snprintf(err, errlen, "out of memory for %llu bytes of games",
				 (unsigned long long)hdr[0]);
			goto out;
		}
	}
	if (hdr[0] && comm_broadcast(c, p.buf, hdr[0], 0) != 0) {
		snprintf(err, errlen, "%s", comm_error(c));
		goto out;
	}
	/* Index the packed records, then add them oldest first. */
	size_t count = 0;
	for (size_t off = 0; off + 4 <= p.len; count++) {
		uint32_t l;
		memcpy(&l, p.buf + off, 4);
		off += 4 + l;
	}
	at = malloc((count ? count : 1) * sizeof(*at));
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
	if (comm_broadcast(c, &p.last_id, sizeof(p.last_id), 0) != 0) {
		snprintf(err, errlen, "%s", comm_error(c));
		goto out;
	}
	*last_id = p.last_id;
	rc = 0;
out:
	free(at);
	free(p.buf);
	return rc;
}

int learner_refill(learner *l, store *db, comm *c, int64_t window, int64_t *last_id, int *added,
		   char *err, size_t errlen)
{
	*added = 0;
	if (!c || comm_size(c) == 1)
		return refill_single(l, db, window, last_id, added, err, errlen);
	return refill_ranks(l, db, c, window, last_id, added, err, errlen);
}
