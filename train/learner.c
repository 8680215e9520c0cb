/* learner.c: a learner is its table and its context (learner.h); this file
 * holds what is the same for every kind: options, dispatch, the ranks a
 * leading learner drives (learner_lead, learner_follow), and the window's
 * refill from the store. */
#include "train/learner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct learner {
	const learner_ops *ops; /* the kind */
	void *ctx;              /* its context */
	char what[256];         /* learner_describe */
	comm *led;              /* learner_lead's comm: its other ranks follow */
	bool lead_failed;       /* a command could not be sent */
};

/* What a leading learner tells its followers (learner_lead): a message of
 * LEAD_TAG, a lead_cmd and, for LEAD_GAME, the record's blob. */
#define LEAD_TAG 77
enum { LEAD_INIT, LEAD_SYNC, LEAD_GAME, LEAD_STEP, LEAD_WINDOW, LEAD_BN, LEAD_END };
typedef struct lead_cmd {
	int32_t kind; /* LEAD_* */
	int32_t pad;
	int64_t arg;  /* STEP: the global batch; WINDOW: positions; BN: batches */
} lead_cmd;

/* Sends cmd (and payload) to every other rank of the lead's comm. */
static int lead_send(learner *l, int kind, int64_t arg, const void *payload, size_t len)
{
	if (!l->led || l->lead_failed)
		return l->led ? -1 : 0;
	size_t n = sizeof(lead_cmd) + len;
	uint8_t stack[256], *buf = n <= sizeof(stack) ? stack : malloc(n);
	if (!buf)
		return -1;
	lead_cmd c = { .kind = kind, .arg = arg };
	memcpy(buf, &c, sizeof(c));
	if (len)
		memcpy(buf + sizeof(c), payload, len);
	for (int r = 1; r < comm_size(l->led) && !l->lead_failed; r++)
		l->lead_failed = comm_send(l->led, buf, n, r, LEAD_TAG) != 0;
	if (buf != stack)
		free(buf);
	return l->lead_failed ? -1 : 0;
}

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
	o.value_lambda = 1;
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
	lead_send(l, LEAD_END, 0, NULL, 0);
	l->ops->destroy(l->ctx);
	free(l);
}

const learner_ops *learner_kind(const learner *l) { return l->ops; }
int learner_add_game(learner *l, const game_record *r)
{
	if (l->led) {
		uint8_t *blob = NULL;
		size_t len = 0;
		if (record_encode(r, &blob, &len) != 0)
			return -1;
		int rc = lead_send(l, LEAD_GAME, 0, blob, len);
		free(blob);
		if (rc != 0)
			return -1;
	}
	return l->ops->add_game(l->ctx, r);
}
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
	if (lead_send(l, LEAD_STEP, global, NULL, 0) != 0)
		return -1;
	return l->ops->step(l->ctx, global, first, st);
}

int learner_set_window(learner *l, int64_t window)
{
	if (lead_send(l, LEAD_WINDOW, window, NULL, 0) != 0)
		return -1;
	return l->ops->set_window(l->ctx, window);
}

int learner_recompute_bn(learner *l, int batches)
{
	if (lead_send(l, LEAD_BN, batches, NULL, 0) != 0)
		return -1;
	return l->ops->recompute_bn(l->ctx, batches);
}

int learner_checkpoint_save(learner *l, const char *path, char *err, size_t errlen)
{
	return l->ops->checkpoint_save(l->ctx, path, err, errlen);
}

int learner_checkpoint_load(learner *l, const char *path, char *err, size_t errlen)
{
	if (l->ops->checkpoint_load(l->ctx, path, err, errlen) != 0)
		return -1;
	if (!l->led)
		return 0;
	/* The followers take the loaded state. */
	if (lead_send(l, LEAD_SYNC, 0, NULL, 0) != 0 || l->ops->broadcast(l->ctx, 0) != 0) {
		snprintf(err, errlen, "giving the learner ranks the checkpoint: %s",
			 l->lead_failed ? comm_error(l->led) : l->ops->error(l->ctx));
		return -1;
	}
	return 0;
}

/* ---- several ranks led by one ----------------------------------------------- */

/* LEAD_INIT's payload: the options, the arch, the bn_folded flag, then the
 * network's floats. Ranks run the same binary, so structs travel as they
 * are. */
int learner_lead(learner *l, comm *c, const learner_options *o, char *err, size_t errlen)
{
	if (!c || comm_size(c) < 2)
		return 0;
	const nn_net *net = l->ops->net(l->ctx);
	if (!net) {
		snprintf(err, errlen, "the learner's network: %s", l->ops->error(l->ctx));
		return -1;
	}
	size_t nf = net->n_floats * sizeof(float);
	size_t len = sizeof(*o) + sizeof(nn_arch) + sizeof(int32_t) + nf;
	uint8_t *buf = malloc(len);
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int32_t folded = net->bn_folded;
	memcpy(buf, o, sizeof(*o));
	memcpy(buf + sizeof(*o), &net->arch, sizeof(nn_arch));
	memcpy(buf + sizeof(*o) + sizeof(nn_arch), &folded, sizeof(folded));
	memcpy(buf + sizeof(*o) + sizeof(nn_arch) + sizeof(folded), net->data, nf);
	l->led = c;
	l->ops->set_comm(l->ctx, c);
	size_t at = strlen(l->what);
	snprintf(l->what + at, sizeof(l->what) - at, ", %d ranks", comm_size(c));
	int rc = lead_send(l, LEAD_INIT, 0, buf, len);
	free(buf);
	if (rc == 0)
		rc = lead_send(l, LEAD_SYNC, 0, NULL, 0);
	if (rc == 0 && l->ops->broadcast(l->ctx, 0) != 0) {
		snprintf(err, errlen, "%s", l->ops->error(l->ctx));
		return -1;
	}
	if (rc != 0)
		snprintf(err, errlen, "telling the learner ranks: %s", comm_error(c));
	return rc;
}

/* Waits, polling with short sleeps (a blocking MPI call would spin a
 * core), for rank 0's next command; its size. 0, or -1. */
static int follow_wait(comm *c, size_t *bytes)
{
	int src, tag, rc, us = 100;
	while ((rc = comm_probe(c, 0, LEAD_TAG, &src, &tag, bytes)) == 0) {
		struct timespec ts = { 0, us * 1000L };
		nanosleep(&ts, NULL);
		us = us < 20000 ? us * 2 : 20000;
	}
	return rc < 0 ? -1 : 0;
}

int learner_follow(comm *c, const learner_ops *ops, char *err, size_t errlen)
{
	learner *l = NULL;
	nn_net *net = NULL;
	uint8_t *buf = NULL;
	int rc = -1, share = 0;
	for (;;) {
		size_t n;
		if (follow_wait(c, &n) != 0 || !(buf = malloc(n ? n : 1)) ||
		    comm_recv(c, buf, n, 0, LEAD_TAG) != 0) {
			snprintf(err, errlen, "learner rank %d: %s", comm_rank(c),
				 buf ? comm_error(c) : "out of memory");
			goto out;
		}
		lead_cmd cmd;
		if (n < sizeof(cmd)) {
			snprintf(err, errlen, "learner rank %d: a %zu-byte command", comm_rank(c), n);
			goto out;
		}
		memcpy(&cmd, buf, sizeof(cmd));
		const uint8_t *pl = buf + sizeof(cmd);
		size_t pn = n - sizeof(cmd);
		if (cmd.kind != LEAD_INIT && cmd.kind != LEAD_END && !l) {
			snprintf(err, errlen, "learner rank %d: command %d before the set-up",
				 comm_rank(c), (int)cmd.kind);
			goto out;
		}
		int ok = 0;
		switch (cmd.kind) {
		case LEAD_INIT: {
			learner_options o;
			nn_arch a;
			int32_t folded;
			size_t head = sizeof(o) + sizeof(a) + sizeof(folded);
			if (l || pn < head) {
				snprintf(err, errlen, "learner rank %d: a bad set-up", comm_rank(c));
				goto out;
			}
			memcpy(&o, pl, sizeof(o));
			memcpy(&a, pl + sizeof(o), sizeof(a));
			memcpy(&folded, pl + sizeof(o) + sizeof(a), sizeof(folded));
			net = nn_net_new(&a, err, errlen);
			if (!net)
				goto out;
			if (pn - head != net->n_floats * sizeof(float)) {
				snprintf(err, errlen, "learner rank %d: the network's size differs",
					 comm_rank(c));
				goto out;
			}
			memcpy(net->data, pl + head, pn - head);
			net->bn_folded = folded;
			l = learner_new(ops, net, &o, err, errlen);
			if (!l)
				goto out;
			learner_set_comm(l, c);
			share = o.train.batch;
			break;
		}
		case LEAD_SYNC:
			ok = l->ops->broadcast(l->ctx, 0);
			break;
		case LEAD_GAME: {
			game_record r;
			char why[128];
			/* A record rank 0 could encode decodes; one that does not is
			 * left out on every rank alike only if rank 0 also failed to
			 * add it, so it is an error here. */
			if (record_decode(pl, pn, &r, why, sizeof(why)) != 0) {
				snprintf(err, errlen, "learner rank %d: a game: %s", comm_rank(c), why);
				goto out;
			}
			l->ops->add_game(l->ctx, &r);
			record_free(&r);
			break;
		}
		case LEAD_STEP: {
			train_stats st;
			ok = l->ops->step(l->ctx, (int)cmd.arg, comm_rank(c) * share, &st) < 0 ? -1 : 0;
			break;
		}
		case LEAD_WINDOW:
			l->ops->set_window(l->ctx, cmd.arg); /* rank 0 says when it is not used */
			break;
		case LEAD_BN:
			ok = l->ops->recompute_bn(l->ctx, (int)cmd.arg);
			break;
		case LEAD_END:
			rc = 0;
			goto out;
		default:
			snprintf(err, errlen, "learner rank %d: unknown command %d", comm_rank(c),
				 (int)cmd.kind);
			goto out;
		}
		if (ok != 0) {
			snprintf(err, errlen, "learner rank %d: %s", comm_rank(c), l->ops->error(l->ctx));
			goto out;
		}
		free(buf);
		buf = NULL;
	}
out:
	free(buf);
	learner_free(l);
	nn_net_free(net);
	return rc;
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
