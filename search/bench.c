/* bench.c: search speed (see bench.h). */
#include "engine/game_desc.h"
#include "search/bench.h"

#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "nn/bench.h"
#include "nn/net.h"
#include "search/eval.h"
#include "search/mcts.h"

search_bench_options search_bench_options_default(void)
{
	search_bench_options o;
	memset(&o, 0, sizeof(o));
	o.blocks = 6;
	o.channels = 64;
	o.game = game_desc_by_name("go")->defaults;
	o.visits = 3200;
	o.threads = 2;
	o.batch = 16;
	o.repeat = 2;
	o.virtual_loss = -1;
	o.backend = nn_backend_options_default();
	o.raw_seconds = 1.0;
	return o;
}

/* Forward calls per second of the backends at `batch`, all of them at once
 * (one thread each), over about `seconds`; 0 when none could run. */
static double raw_evals_per_s(const nn_backend_set *bs, int batch, double seconds)
{
	const nn_arch *a = &bs->be[0]->arch;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	float *planes = calloc(in_n * (size_t)batch, sizeof(float));
	if (!planes)
		return 0;
	for (size_t i = 0; i < in_n * (size_t)batch; i++)
		planes[i] = (float)((i * 2654435761u) >> 31 & 1);
	double total = nn_bench_backends(bs->be, bs->n, batch, planes, seconds, NULL);
	free(planes);
	return total > 0 ? total : 0;
}

/* The network: the file (its board replacing a Go size), else a random one;
 * BN folded. NULL with a message. */
static nn_net *bench_net(const search_bench_options *o, game_params *gp, char *err, size_t errlen)
{
	nn_net *net;
	*gp = o->game;
	if (o->weights) {
		nn_expect want = { .game = (int)gp->kind };
		net = nn_net_load_any(o->weights, &want, err, errlen);
		if (net)
			*gp = game_params_sized(gp->kind, net->arch.board_w, gp->komi);
	} else {
		nn_arch a = nn_arch_default(gp, o->blocks, o->channels);
		net = nn_net_new(&a, err, errlen);
		if (net)
			nn_net_init_random(net, 1);
	}
	if (net)
		nn_net_fold_bn(net);
	return net;
}

/* One search from the empty board with a fresh evaluator and tree into *r
 * (the fields of the search; the caller's are kept). 0, or -1 with a
 * message. */
/* Leaves each search thread gathers per round: together a batch. */
static int bench_gather(const search_bench_options *o)
{
	return o->batch > o->threads ? o->batch / o->threads : 1;
}

static int bench_once(const search_bench_options *o, nn_backend_set *bs, const nn_net *net,
		      search_bench_result *r, char *err, size_t errlen)
{
	int gather = bench_gather(o);
	eval_options eo = eval_options_default();
	/* On CPU lanes a batch is one search thread's gathered leaves, so
	 * that the lanes run different threads' batches at once. */
	eo.max_batch = nn_lane_batch(bs, o->batch, gather);
	evaluator *ev = eval_new(bs->be, bs->n, net->arch.encoding, &eo, err, errlen);
	mcts_options mo = mcts_options_default();
	mo.threads = o->threads;
	mo.max_visits = o->visits;
	/* A tree that holds every visit asked for, so that -v means what it
	 * says (the default 512 MB stops an empty 19x19 board near 16k). */
	size_t need = mcts_memory_for(o->visits, net->arch.policy_outputs);
	if (need > mo.max_memory)
		mo.max_memory = need;
	mo.gather = gather;
	if (o->virtual_loss >= 0)
		mo.virtual_loss = o->virtual_loss;
	mcts *m = ev ? mcts_new(ev, &mo, err, errlen) : NULL;
	if (!m) {
		eval_free(ev);
		return -1;
	}
	static game g; /* large: off the stack */
	game_init(&g, &r->game);
	mcts_set_position(m, &g);
	mcts_search(m);
	mcts_stats st;
	eval_stats es;
	mcts_get_stats(m, &st);
	eval_get_stats(ev, &es);
	r->visits = mcts_root_visits(m);
	r->playouts = st.playouts;
	r->seconds = st.seconds;
	r->playouts_per_s = st.seconds > 0 ? st.playouts / st.seconds : 0.0;
	r->evals = es.evals;
	r->mean_batch = es.batches ? (double)es.evals / es.batches : 0.0;
	r->cache_hits = es.cache_hits;
	r->search_to_raw = r->raw_evals_per_s > 0 ? r->playouts_per_s / r->raw_evals_per_s : 0.0;
	mcts_free(m);
	eval_free(ev);
	return 0;
}

int search_bench_run(const search_bench_options *o, search_bench_fn fn, void *ctx, char *err,
		     size_t errlen)
{
	search_bench_result r;
	memset(&r, 0, sizeof(r));
	nn_net *net = bench_net(o, &r.game, err, errlen);
	if (!net)
		return -1;
	nn_backend_set bs;
	char why[448];
	nn_backend_options bo = o->backend;
	bo.lanes = nn_lanes_resolve(&bo, o->threads);
	if (nn_backend_set_open(&bs, net, o->batch, &bo, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "backend: %s", why);
		nn_net_free(net);
		return -1;
	}
	if (o->log)
		fprintf(o->log, "sente bench search: backend %s\n", bs.what);
	r.backend = bs.be[0]->ops->name;
	r.precision = bs.precision;
	r.gpus = bs.be[0]->ops == &nn_backend_cpu ? 0 : bs.n;
	r.blocks = net->arch.blocks;
	r.channels = net->arch.channels;
	r.lanes = bs.lanes;
	r.raw_evals_per_s = raw_evals_per_s(&bs, nn_lane_batch(&bs, o->batch, bench_gather(o)),
					    o->raw_seconds);
	int rc = 0;
	for (r.run = 0; r.run < o->repeat && rc == 0; r.run++) {
		rc = bench_once(o, &bs, net, &r, err, errlen);
		if (rc == 0 && fn)
			fn(ctx, &r);
	}
	nn_backend_set_close(&bs);
	nn_net_free(net);
	return rc;
}
