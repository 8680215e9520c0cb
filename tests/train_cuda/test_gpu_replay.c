/* The GPU replay buffer (train/cuda/gpu_replay.h).
 *
 * Everywhere: the host expansion of every packed record of whole random
 * games, under every symmetry, equals train_batch_from_position (planes
 * NHWC with zero padding, policy, value, WDL) for Go 9x9 and 19x19 in both
 * encodings and for Connect Four; with the ownership and score heads, the
 * head targets equal train_batch_own_target and train_batch_score_target
 * as the CPU window calls them, bit for bit (games cut short, played out,
 * resigned); the opponent-reply target equals train_batch_opp_target's
 * for the next move's visits, the move played or none (the last move, a
 * reply whose counts are all 0), bit for bit; a layout without heads
 * keeps its record; partial packing; and
 * the ring (in host memory: the same chunks, skipping and wrap-around as
 * on a device) keeps exactly the newest `window` positions.
 *
 * With a CUDA device only (skipped otherwise): the device expansion equals
 * the host's (fp32 exactly, fp16/bf16 within their rounding; head targets
 * and opponent-reply targets exactly), draws are
 * uniform over the window (chi-square) and over the symmetries, depend only
 * on (seed, counter), two ranks' shares reassemble the whole batch, the
 * device ring matches the host one, and appends from another thread while
 * sampling never yield a torn record. They passed on an H100 (2026-11-27),
 * and with the ownership and score targets on an H200 (2026-11-28); the
 * opponent-reply cases of device_expansion_matches_host have not yet run
 * on a device. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "data/record.h"
#include "engine/game_desc.h"
#include "nn/cuda/cuda.h"
#include "nn/cuda/pack.h"
#include "tests/gpu_skip.h"
#include "tests/train/train_util.h"
#include "train/cuda/gpu_replay.h"
#include "train/trainer.h"

static uint64_t gr_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

typedef struct gr_case {
	game_kind kind;
	int size;        /* Go board */
	nn_encoding enc;
	double komi;     /* Go */
	int heads;       /* 1: ownership and score heads (Go), some games resigned */
	int opp;         /* 1: the opponent-reply head */
	uint32_t sizes;  /* Go: a net of several sizes (nn_arch.sizes, size the
			  * largest), each game on one drawn from them; 0: one */
} gr_case;

static nn_arch gr_arch(const gr_case *k)
{
	game_params p = game_params_default(k->kind);
	if (k->kind == GAME_KIND_GO)
		p.size = k->size;
	nn_arch a = k->enc == NN_ENC_LZ18 ? nn_arch_lz(k->size, 1, 8) : nn_arch_default(&p, 1, 8);
	a.ownership = a.score = k->heads;
	a.opp_policy = k->opp;
	a.sizes = k->sizes;
	a.masked_pool = k->sizes != 0; /* as train/rundir.c makes such a net */
	return a;
}

/* A random game of at most max_moves: most moves full searches with
 * visits on random legal moves (pass included), some fast, a few full
 * ones without visits (not positions); random result. */
static void gr_game(const gr_case *k, uint64_t *s, int max_moves, game_record *r)
{
	game_params p = game_params_default(k->kind);
	if (k->kind == GAME_KIND_GO) {
		p.size = k->size;
		p.komi = k->komi;
	}
	if (k->sizes) {
		/* One of the net's sizes (the draw only where there are sizes,
		 * so the other cases keep their games). */
		int list[32], n = 0;
		for (int b = 0; b < 32; b++)
			if (k->sizes >> b & 1u)
				list[n++] = b;
		p.size = list[gr_rng(s) % (uint64_t)n];
	}
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	cr_assert_eq(game_init(g, &p), GAME_OK);
	record_init(r, &p);
	int legal[GAME_MAX_ACTIONS];
	record_visit v[GAME_MAX_ACTIONS];
	while (!game_is_over(g) && r->n_moves < max_moves) {
		int n = game_legal_moves(g, legal);
		cr_assert(n > 0);
		int mv = legal[gr_rng(s) % (uint64_t)n];
		if (mv == game_pass_move(g) && n > 1)
			mv = legal[0]; /* keep games going */
		bool full = gr_rng(s) % 5 != 0;
		int nv = 0;
		if (full && gr_rng(s) % 10 != 0) {
			int want = 1 + (int)(gr_rng(s) % (uint64_t)(n < 40 ? n : 40));
			for (int i = 0; i < n && nv < want; i++) {
				int j = i + (int)(gr_rng(s) % (uint64_t)(n - i));
				int t = legal[i];
				legal[i] = legal[j];
				legal[j] = t;
				v[nv].move = (int16_t)legal[i];
				v[nv].count = (uint16_t)(gr_rng(s) % 3 == 0 ? gr_rng(s) % 65536 : gr_rng(s) % 50);
				nv++;
			}
			v[0].count |= 1; /* some visits */
		}
		cr_assert_eq(record_add_move(r, mv, full, 0.0f, v, nv), 0);
		cr_assert_eq(game_play(g, mv), GAME_OK);
	}
	/* With heads, a resigned game has no ownership or score targets;
	 * the other draws stay those of the games without. */
	if (k->heads && gr_rng(s) % 3 == 0)
		game_resign(g, game_to_move(g));
	record_set_outcome(r, g);
	if (gr_rng(s) % 3 == 0)
		r->result = (int)(gr_rng(s) % 3) - 1; /* draws and both winners */
	free(g);
}

/* Host arrays shaped as a gpu_batch of cap positions. */
static void gr_host_batch(gpu_batch *b, const gpu_replay_layout *L, int cap, nn_dtype dt)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
	b->hw = L->d.hw;
	b->c_pad = L->d.c_pad;
	b->n_actions = L->d.n_actions;
	b->dtype = dt;
	b->planes = calloc((size_t)cap * b->hw * b->c_pad, nn_dtype_size(dt));
	b->policy = calloc((size_t)cap * b->n_actions, sizeof(float));
	b->value = calloc((size_t)cap, sizeof(float));
	b->wdl = calloc((size_t)cap * 3, sizeof(float));
	cr_assert(b->planes && b->policy && b->value && b->wdl);
	/* The heads' targets exactly where L has the heads, as
	 * gpu_batch_alloc makes them. */
	if (L->d.own_off) {
		b->own = calloc((size_t)cap * b->hw, sizeof(float));
		b->own_w = calloc((size_t)cap, sizeof(float));
		cr_assert(b->own && b->own_w);
	}
	if (L->d.score_off) {
		b->score = calloc((size_t)cap, sizeof(float));
		b->score_w = calloc((size_t)cap, sizeof(float));
		cr_assert(b->score && b->score_w);
	}
	if (L->d.opp_off) {
		b->opp = calloc((size_t)cap * b->n_actions, sizeof(float));
		cr_assert(b->opp);
	}
}

static void gr_host_batch_free(gpu_batch *b)
{
	free(b->planes);
	free(b->policy);
	free(b->value);
	free(b->wdl);
	free(b->own);
	free(b->own_w);
	free(b->score);
	free(b->score_w);
	free(b->opp);
}

/* Packs a whole game; returns the records (caller frees), count in *np. */
static uint32_t *gr_pack(const gpu_replay_layout *L, const game_record *r, int *np)
{
	char err[256];
	*np = gpu_replay_game_positions(r);
	uint32_t *recs = malloc(gpu_replay_record_bytes(L) * (size_t)(*np > 0 ? *np : 1));
	cr_assert(recs);
	int got = gpu_replay_pack_game(L, r, 0, recs, *np, err, sizeof(err));
	cr_assert_eq(got, *np, "pack_game: %d of %d (%s)", got, *np, err);
	return recs;
}

/* ---- host: records and their expansion ---------------------------------- */

/* The CPU window's final owners of r (train/replay.c game_owner: a game
 * played out, kept as int8), into own; false when there are none. */
static bool gr_cpu_owner(const game_record *r, float *own)
{
	const game_desc *d = game_desc_from_params(&r->params);
	if (!d->ownership || r->resigned >= 0)
		return false;
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	cr_assert_eq(record_replay(r, -1, g), 0);
	d->ownership(g, own);
	for (int i = 0; i < game_width(g) * game_height(g); i++)
		own[i] = (int8_t)own[i];
	free(g);
	return true;
}

/* What the head targets of the expansion showed. */
typedef struct gr_head_stats {
	int with_own, without_own;     /* positions x symmetries by own_w */
	int plus, minus, zero;         /* ownership targets of weight 1 */
	int with_score, without_score; /* by score_w */
} gr_head_stats;

/* Compares the head targets of expanded slot 0 of hb with the CPU's for
 * position g under sym (train_batch_own_target, train_batch_score_target
 * as train/replay.c calls them): equal bit for bit, -0 included. */
static void gr_compare_heads(const game *g, int sym, const game_record *r, const float *owner,
			     const gpu_batch *hb, train_batch *tb, gr_head_stats *st)
{
	int move = game_move_count(g);
	int hw = hb->hw;
	cr_assert(tb->own && tb->score);
	cr_assert_eq(train_batch_own_target(g, sym, owner, tb, 0), 0);
	cr_assert_eq(train_batch_score_target(g, r->resigned >= 0 ? NAN : r->score, tb, 0), 0);
	for (int q = 0; q < hw; q++)
		cr_assert_eq(memcmp(&hb->own[q], &tb->own[q], sizeof(float)), 0,
			     "move %d sym %d point %d: owner %g, want %g", move, sym, q,
			     hb->own[q], tb->own[q]);
	cr_assert_eq(memcmp(hb->own_w, tb->own_w, sizeof(float)), 0, "own_w %g, want %g",
		     hb->own_w[0], tb->own_w[0]);
	cr_assert_eq(memcmp(hb->score, tb->score, sizeof(float)), 0, "score %.9g, want %.9g",
		     hb->score[0], tb->score[0]);
	cr_assert_eq(memcmp(hb->score_w, tb->score_w, sizeof(float)), 0, "score_w %g, want %g",
		     hb->score_w[0], tb->score_w[0]);
	if (hb->own_w[0] == 1.0f) {
		st->with_own++;
		for (int q = 0; q < hw; q++) {
			st->plus += hb->own[q] == 1.0f;
			st->minus += hb->own[q] == -1.0f;
			st->zero += hb->own[q] == 0.0f;
		}
	} else {
		st->without_own++;
		for (int q = 0; q < hw; q++)
			cr_assert_eq(hb->own[q], 0.0f, "a position without target has owner %g",
				     hb->own[q]);
	}
	if (hb->score_w[0] == 1.0f)
		st->with_score++;
	else
		st->without_score++;
}

/* What the opponent-reply targets of the expansion showed. */
typedef struct gr_opp_stats {
	int visits, played, none; /* positions by where their reply came from */
} gr_opp_stats;

/* The opponent-reply target of the position before move i, written here
 * from trainer.h's definition rather than taken from the code under test:
 * move i + 1's visits where the record kept any, else that move with
 * count 1, none (0) after the last move. */
static int gr_reply(const game_record *r, int i, int16_t *moves, uint16_t *counts)
{
	if (i + 1 >= r->n_moves)
		return 0;
	int n = 0;
	for (int32_t v = r->visit_start[i + 1]; v < r->visit_start[i + 2]; v++) {
		moves[n] = r->visits[v].move;
		counts[n++] = r->visits[v].count;
	}
	if (n == 0) {
		moves[0] = r->moves[i + 1];
		counts[0] = 1;
		n = 1;
	}
	return n;
}

/* Compares the opponent-reply target of expanded slot 0 of hb with the
 * CPU's for position g (before move i of r) under sym
 * (train_batch_opp_target on the reply, as train/replay.c gives it): equal
 * bit for bit; record_reply_targets, which both windows use, agrees with
 * gr_reply. */
static void gr_compare_opp(const game *g, int i, int sym, const game_record *r, const gpu_batch *hb,
			   train_batch *tb, gr_opp_stats *st)
{
	int16_t moves[GAME_MAX_ACTIONS], rm[GAME_MAX_ACTIONS];
	uint16_t counts[GAME_MAX_ACTIONS], rc[GAME_MAX_ACTIONS];
	int n = gr_reply(r, i, moves, counts);
	int rn = record_reply_targets(r, i, rm, rc);
	cr_assert_eq(rn, n, "move %d: record_reply_targets gives %d pairs, want %d", i, rn, n);
	cr_assert(n == 0 || (memcmp(rm, moves, sizeof(int16_t) * (size_t)n) == 0 &&
			     memcmp(rc, counts, sizeof(uint16_t) * (size_t)n) == 0));
	cr_assert(tb->opp);
	cr_assert_eq(train_batch_opp_target(g, sym, moves, counts, n, tb, 0), 0);
	int na = hb->n_actions;
	double sum = 0;
	for (int b = 0; b < na; b++) {
		cr_assert_eq(memcmp(&hb->opp[b], &tb->opp[b], sizeof(float)), 0,
			     "move %d sym %d action %d: reply %.9g, want %.9g", i, sym, b,
			     hb->opp[b], tb->opp[b]);
		sum += hb->opp[b];
	}
	uint32_t total = 0;
	for (int j = 0; j < n; j++)
		total += counts[j];
	if (total == 0) {
		cr_assert_eq(sum, 0.0, "move %d: no reply, yet a target summing to %g", i, sum);
		st->none++;
	} else {
		cr_assert(fabs(sum - 1.0) < 1e-5, "move %d: the reply sums to %g", i, sum);
		if (r->visit_start[i + 1] < r->visit_start[i + 2])
			st->visits++;
		else
			st->played++;
	}
}

/* Record rec of position g in L, a layout of several sizes, read directly
 * (not through the expansion): its size word names g's size, its planes
 * and counts are 0 off g's board (the lower left corner of the frame), and
 * the counts on it are g's visits at their frame actions. */
static void gr_check_framed(const gpu_replay_layout *L, const uint32_t *rec, const game *g)
{
	const gr_dims *d = &L->d;
	int w = game_width(g), fw = L->frame_w;
	cr_assert(d->size_off > 0 && d->n_sizes > 1);
	cr_assert_lt(rec[d->size_off], (uint32_t)d->n_sizes);
	cr_assert_eq(L->size[rec[d->size_off]], w, "size word %u for a %dx%d board",
		     rec[d->size_off], w, w);
	const uint32_t *masks = rec + d->plane_off + d->planes;
	int on_board = 0;
	for (int q = 0; q < d->hw; q++) {
		bool off = q % fw >= w || q / fw >= w;
		for (int c = 0; c < d->planes; c++) {
			bool set = masks[c * d->words + q / 32] >> (q % 32) & 1u;
			cr_assert(!(off && set),
				  "plane %d set at frame point %d, off the %dx%d board", c, q, w, w);
			on_board += !off && set;
		}
		if (off) {
			cr_assert_eq(gr_count(rec, d, q), 0u,
				     "a count at frame point %d off the board", q);
			if (d->own_off)
				cr_assert_eq(rec[d->own_off + 1 + q / GR_OWN_PER_WORD] >>
						     (q % GR_OWN_PER_WORD * 2) & 3u, 0u);
			if (d->opp_off)
				cr_assert_eq(gr_count_at(rec + d->opp_off + 1, q), 0u);
		}
	}
	cr_assert_gt(on_board, 0, "no plane set on the board");
}

static void gr_check_parity(const gr_case *k, int games, int max_moves)
{
	char err[256];
	nn_arch a = gr_arch(k);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(L.d.n_sym, k->kind == GAME_KIND_GO ? 8 : 2);
	train_batch *tb = train_batch_new(&a, 1, 1);
	cr_assert(tb);
	gpu_batch hb;
	gr_host_batch(&hb, &L, 1, NN_DTYPE_FP32);
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	int16_t moves[GAME_MAX_ACTIONS];
	uint16_t counts[GAME_MAX_ACTIONS];
	int hw = L.d.hw, c_pad = L.d.c_pad, planes = L.d.planes, na = L.d.n_actions;
	uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(k->size * 31 + k->enc);
	int checked = 0, by_size[GO_MAX_SIZE + 1] = { 0 };
	gr_head_stats hs = { 0 };
	gr_opp_stats os = { 0 };
	float owner[GAME_MAX_ACTIONS];
	cr_assert_eq(!hb.opp, !k->opp);
	for (int gi = 0; gi < games; gi++) {
		game_record r;
		gr_game(k, &s, max_moves, &r);
		int np;
		uint32_t *recs = gr_pack(&L, &r, &np);
		bool has_owner = gr_cpu_owner(&r, owner);
		int idx = 0;
		for (int i = 0; i < r.n_moves; i++) {
			float value;
			int nv = record_position_targets(&r, i, 0, moves, counts, &value);
			uint32_t total = 0;
			for (int j = 0; j < nv; j++)
				total += counts[j];
			if (!r.full[i] || total == 0)
				continue;
			cr_assert_eq(record_replay(&r, i, g), 0);
			nv = record_position_targets(&r, i, game_to_move(g), moves, counts, &value);
			for (int sym = 0; sym < L.d.n_sym; sym++) {
				int64_t slot = idx;
				cr_assert_eq(train_batch_from_position(g, k->enc, sym, moves, counts, nv,
								       value, tb, 0), 0);
				cr_assert_eq(gpu_replay_expand_host(&L, recs, &slot, &sym, 1, &hb), 0);
				const float *hp = hb.planes;
				for (int q = 0; q < hw; q++)
					for (int c = 0; c < c_pad; c++) {
						float want = c < planes ? tb->planes[c * hw + q] : 0.0f;
						cr_assert_eq(hp[q * c_pad + c], want,
							     "game %d move %d sym %d point %d plane %d: %g, want %g",
							     gi, i, sym, q, c, hp[q * c_pad + c], want);
					}
				for (int b = 0; b < na; b++)
					cr_assert_eq(hb.policy[b], tb->policy[b],
						     "game %d move %d sym %d action %d: %.9g, want %.9g", gi,
						     i, sym, b, hb.policy[b], tb->policy[b]);
				cr_assert_eq(hb.value[0], tb->value[0]);
				for (int w = 0; w < 3; w++)
					cr_assert_eq(hb.wdl[w], tb->wdl[w]);
				if (k->heads)
					gr_compare_heads(g, sym, &r, has_owner ? owner : NULL, &hb,
							 tb, &hs);
				if (k->opp)
					gr_compare_opp(g, i, sym, &r, &hb, tb, &os);
			}
			if (k->sizes)
				gr_check_framed(&L, recs + (size_t)idx * L.d.rec_words, g);
			idx++;
			checked++;
			by_size[k->kind == GAME_KIND_GO ? game_width(g) : 0]++;
		}
		cr_assert_eq(idx, np);
		free(recs);
		record_free(&r);
	}
	cr_assert_gt(checked, 10, "only %d positions checked", checked);
	for (int b = 0; b <= GO_MAX_SIZE; b++)
		if (k->sizes >> b & 1u)
			cr_assert_gt(by_size[b], 5, "only %d positions of size %d", by_size[b], b);
	if (k->heads)
		cr_assert(hs.with_own > 0 && hs.without_own > 0 && hs.plus > 0 && hs.minus > 0 &&
			  hs.with_score > 0 && hs.without_score > 0,
			  "games with and without targets, owners of both signs: %d/%d own, "
			  "%d+ %d-, %d/%d score", hs.with_own, hs.without_own, hs.plus, hs.minus,
			  hs.with_score, hs.without_score);
	if (k->opp)
		cr_assert(os.visits > 0 && os.played > 0 && os.none > 0,
			  "replies from visits %d, from the move played %d, none %d", os.visits,
			  os.played, os.none);
	free(g);
	gr_host_batch_free(&hb);
	train_batch_free(tb);
	gpu_replay_layout_free(&L);
}

Test(gpu_replay, host_expansion_go9_lz18)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	gr_check_parity(&k, 4, 90);
}

Test(gpu_replay, host_expansion_go9_native)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 7.5, 0, 0, 0 };
	gr_check_parity(&k, 3, 90);
	gr_case z = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 0.0, 0, 0, 0 }; /* komi plane all zero */
	gr_check_parity(&z, 1, 60);
	gr_case n = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, -3.5, 0, 0, 0 };
	gr_check_parity(&n, 1, 60);
}

Test(gpu_replay, host_expansion_go19_lz18)
{
	gr_case k = { GAME_KIND_GO, 19, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	gr_check_parity(&k, 2, 70);
}

Test(gpu_replay, host_expansion_go19_native)
{
	gr_case k = { GAME_KIND_GO, 19, NN_ENC_GO_NATIVE, 6.5, 0, 0, 0 };
	gr_check_parity(&k, 2, 70);
}

Test(gpu_replay, host_expansion_connect4)
{
	gr_case k = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 };
	gr_check_parity(&k, 12, 42);
}

/* With the ownership and score heads, on random games cut short (their
 * last position counted) and resigned ones. */
Test(gpu_replay, host_expansion_go9_heads)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 };
	gr_check_parity(&k, 6, 90);
	gr_case n = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 6.5, 1, 0, 0 };
	gr_check_parity(&n, 6, 90);
}

Test(gpu_replay, host_expansion_go19_heads)
{
	gr_case k = { GAME_KIND_GO, 19, NN_ENC_GO_NATIVE, 7.5, 1, 0, 0 };
	gr_check_parity(&k, 6, 70);
}

/* With the opponent-reply head: replies from the next move's visits,
 * from the move played (the next move a fast one) and none (a game's last
 * position), alone and beside the other heads. */
Test(gpu_replay, host_expansion_go9_opp)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 1, 0 };
	gr_check_parity(&k, 6, 90);
	gr_case h = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 6.5, 1, 1, 0 };
	gr_check_parity(&h, 6, 90);
}

Test(gpu_replay, host_expansion_go19_opp)
{
	gr_case k = { GAME_KIND_GO, 19, NN_ENC_LZ18, 7.5, 1, 1, 0 };
	gr_check_parity(&k, 3, 70);
}

Test(gpu_replay, host_expansion_connect4_opp)
{
	gr_case k = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 1, 0 };
	gr_check_parity(&k, 16, 42);
}

/* A net of several board sizes: games of each size in one window, each
 * record framed as train_batch frames it (planes with the on-board plane,
 * policy, ownership and reply at the frame's actions, the score over the
 * frame's points), each symmetry turning the board in its corner, not the
 * frame; against train_batch bit for bit, as the cases above. */
#define GR_SIZES(a, b) ((1u << (a)) | (1u << (b)))

Test(gpu_replay, host_expansion_sizes_9_13)
{
	gr_case k = { GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 0, 0, GR_SIZES(9, 13) };
	gr_check_parity(&k, 8, 80);
	gr_case z = { GAME_KIND_GO, 13, NN_ENC_LZ18, 7.5, 0, 0, GR_SIZES(9, 13) };
	gr_check_parity(&z, 8, 80);
}

Test(gpu_replay, host_expansion_sizes_7_9_heads_opp)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 7.5, 1, 1, GR_SIZES(7, 9) };
	gr_check_parity(&k, 10, 70);
	gr_case z = { GAME_KIND_GO, 9, NN_ENC_LZ18, 6.5, 1, 0, GR_SIZES(7, 9) };
	gr_check_parity(&z, 10, 70);
}

Test(gpu_replay, host_expansion_sizes_5_9_13_heads)
{
	gr_case k = { GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 1, 1,
		      GR_SIZES(5, 9) | GR_SIZES(13, 13) };
	gr_check_parity(&k, 12, 60);
}

/* The tables of a layout of several sizes: per size and symmetry a
 * permutation of the frame's points and actions that keeps the board's
 * corner (symmetry 0 the identity, points off the board and the pass
 * fixed); records carry a size word; a size the net does not play is
 * refused. */
Test(gpu_replay, sizes_layout_tables_and_refusals)
{
	char err[256];
	gr_case k = { GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 1, 1, GR_SIZES(9, 13) };
	nn_arch a = gr_arch(&k);
	gpu_replay_layout L, one;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	gr_case k1 = { GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 1, 1, 0 };
	nn_arch a1 = gr_arch(&k1);
	cr_assert_eq(gpu_replay_layout_init(&one, &a1, err, sizeof(err)), 0, "%s", err);
	const gr_dims *d = &L.d;
	cr_assert_eq(d->n_sizes, 2);
	cr_assert(L.size[0] == 9 && L.size[1] == 13 && L.frame_w == 13 && L.frame_h == 13);
	cr_assert_eq(d->hw, 169);
	cr_assert_eq(d->n_actions, 170);
	/* The size word is the record's last; one size has none. */
	cr_assert_eq(one.d.size_off, 0);
	cr_assert_eq(one.d.n_sizes, 1);
	cr_assert_eq(d->size_off, one.d.rec_words);
	cr_assert_eq(d->rec_words, one.d.rec_words + 1);
	/* The frame's own size reads the one-size layout's tables. */
	size_t pt = (size_t)d->n_sym * d->hw, at = (size_t)d->n_sym * d->n_actions;
	cr_assert_eq(memcmp(L.point_inv + pt, one.point_inv, sizeof(int16_t) * pt), 0);
	cr_assert_eq(memcmp(L.action_inv + at, one.action_inv, sizeof(int16_t) * at), 0);
	for (int s = 0; s < d->n_sym; s++) {
		const int16_t *p9 = L.point_inv + (size_t)s * d->hw;
		const int16_t *a9 = L.action_inv + (size_t)s * d->n_actions;
		bool seen[170] = { false };
		int moved = 0;
		for (int q = 0; q < d->hw; q++) {
			int x = q % 13, y = q / 13;
			cr_assert(p9[q] >= 0 && p9[q] < d->hw && !seen[p9[q]]);
			seen[p9[q]] = true;
			cr_assert_eq(a9[q], p9[q], "sym %d point %d: action %d, point %d", s, q,
				     a9[q], p9[q]);
			if (x >= 9 || y >= 9)
				cr_assert_eq(p9[q], q, "sym %d: point %d off the board moved", s, q);
			else
				cr_assert(p9[q] % 13 < 9 && p9[q] / 13 < 9,
					  "sym %d: %d left the board", s, q);
			moved += p9[q] != q;
		}
		cr_assert_eq(a9[169], 169, "the pass moved");
		cr_assert_eq(moved > 0, s != 0, "sym %d moved %d points", s, moved);
	}
	/* Symmetry 1 of the 9x9 board, checked against the game's own: point
	 * (x, y) of the output shows the 9x9 point the inverse takes it to. */
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	game_params p9 = game_params_default(GAME_KIND_GO);
	p9.size = 9;
	cr_assert_eq(game_init(g, &p9), GAME_OK);
	for (int s = 0; s < d->n_sym; s++) {
		int inv = game_symmetry_inverse(g, s);
		for (int q9 = 0; q9 < 81; q9++) {
			int c = game_symmetry_move(g, inv, q9);
			int fq = q9 / 9 * 13 + q9 % 9, fc = c / 9 * 13 + c % 9;
			cr_assert_eq(L.action_inv[(size_t)s * d->n_actions + fq], fc);
		}
	}
	/* A 11x11 position and record: not a size of the net. */
	game_params p11 = p9;
	p11.size = 11;
	cr_assert_eq(game_init(g, &p11), GAME_OK);
	uint32_t *rec = calloc((size_t)d->rec_words, sizeof(uint32_t));
	int16_t mv = 0;
	uint16_t cnt = 1;
	cr_assert_eq(gpu_replay_pack_position(&L, g, &mv, &cnt, 1, 0.0f, rec, err, sizeof(err)), -1);
	cr_assert(strstr(err, "11x11") && strstr(err, "9x9, 13x13"), "%s", err);
	game_record r;
	gr_case k11 = { GAME_KIND_GO, 11, NN_ENC_GO_NATIVE, 7.5, 1, 1, 0 };
	uint64_t sd = 5;
	gr_game(&k11, &sd, 20, &r);
	uint32_t *out = calloc((size_t)d->rec_words * 20, sizeof(uint32_t));
	cr_assert_eq(gpu_replay_pack_game(&L, &r, 0, out, 20, err, sizeof(err)), -1);
	cr_assert(strstr(err, "go 11 record") && strstr(err, "9x9, 13x13"),
		  "the refusal names the record's size and the buffer's: %s", err);
	record_free(&r);
	/* A 9x9 position: its pass goes to the frame's pass, its size word
	 * is 0, and a move past its 82 actions is refused. */
	cr_assert_eq(game_init(g, &p9), GAME_OK);
	mv = (int16_t)game_pass_move(g);
	cr_assert_eq(gpu_replay_pack_position(&L, g, &mv, &cnt, 1, 0.0f, rec, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(rec[d->size_off], 0u);
	cr_assert_eq(gr_count(rec, d, 169), 1u);
	cr_assert_eq(gr_count(rec, d, 81), 0u);
	mv = 82;
	cr_assert_eq(gpu_replay_pack_position(&L, g, &mv, &cnt, 1, 0.0f, rec, err, sizeof(err)), -1);
	cr_assert(strstr(err, "action"), "%s", err);
	free(out);
	free(rec);
	free(g);
	gpu_replay_layout_free(&one);
	gpu_replay_layout_free(&L);
}

/* A 9x9 game played out: moves drawn by the plain prior (which fills no
 * eye of its own) over the legal moves other than pass, passing only when
 * none is left, until both pass. The final position is then all stones
 * and one-point eyes, which the area count gives to both players. Every
 * move a full search with visits. */
static void gr_played_out(uint64_t *s, int max_moves, game_record *r)
{
	game_params p = game_params_default(GAME_KIND_GO);
	p.size = 9;
	p.komi = 7.5;
	const game_desc *d = game_desc_from_params(&p);
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	cr_assert_eq(game_init(g, &p), GAME_OK);
	record_init(r, &p);
	int legal[GAME_MAX_ACTIONS];
	float w[GAME_MAX_ACTIONS];
	while (!game_is_over(g)) {
		int n = game_legal_moves(g, legal), pass = game_pass_move(g);
		d->plain_prior(g, legal, n, w);
		double sum = 0;
		for (int i = 0; i < n; i++) {
			/* No pass, no own eye filled (weight 0.001). */
			if (legal[i] == pass || w[i] < 0.005f || r->n_moves >= max_moves)
				w[i] = 0;
			sum += w[i];
		}
		/* By weight; the last weighted move where rounding leaves x. */
		int mv = pass;
		double x = (double)(gr_rng(s) >> 11) / 9007199254740992.0 * sum;
		for (int i = 0; i < n && sum > 0; i++) {
			if (w[i] <= 0)
				continue;
			mv = legal[i];
			x -= w[i];
			if (x < 0)
				break;
		}
		record_visit v[2] = { { (int16_t)mv, (uint16_t)(1 + gr_rng(s) % 40) },
				      { (int16_t)pass, (uint16_t)(gr_rng(s) % 5) } };
		int nv = mv == pass ? 1 : 2;
		cr_assert_eq(record_add_move(r, mv, true, 0.0f, v, nv), 0);
		cr_assert_eq(game_play(g, mv), GAME_OK);
	}
	record_set_outcome(r, g);
	free(g);
}

/* Packs r, expands every position under every symmetry and compares the
 * head targets with the CPU's. */
static void gr_check_game_heads(const gpu_replay_layout *L, const nn_arch *a,
				const game_record *r, gr_head_stats *st)
{
	int np;
	uint32_t *recs = gr_pack(L, r, &np);
	cr_assert_gt(np, 10);
	train_batch *tb = train_batch_new(a, 1, 0);
	cr_assert(tb);
	gpu_batch hb;
	gr_host_batch(&hb, L, 1, NN_DTYPE_FP32);
	cr_assert(hb.own && hb.score);
	float owner[GAME_MAX_ACTIONS];
	bool has_owner = gr_cpu_owner(r, owner);
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	int idx = 0;
	for (int i = 0; i < r->n_moves; i++) {
		if (!r->full[i] || r->visit_start[i] == r->visit_start[i + 1])
			continue;
		cr_assert_eq(record_replay(r, i, g), 0);
		for (int sym = 0; sym < L->d.n_sym; sym++) {
			int64_t slot = idx;
			cr_assert_eq(gpu_replay_expand_host(L, recs, &slot, &sym, 1, &hb), 0);
			gr_compare_heads(g, sym, r, has_owner ? owner : NULL, &hb, tb, st);
		}
		idx++;
	}
	cr_assert_eq(idx, np);
	free(g);
	gr_host_batch_free(&hb);
	train_batch_free(tb);
	free(recs);
}

/* Ownership and score targets of a game played out and of the same game
 * resigned part way: the CPU window's, bit for bit, every position and
 * symmetry. */
Test(gpu_replay, host_heads_played_out_and_resigned)
{
	char err[256];
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert(L.d.own_off > 0 && L.d.score_off > 0);
	uint64_t s = 2024;
	for (int gi = 0; gi < 3; gi++) {
		game_record r, res;
		gr_played_out(&s, 400, &r);
		cr_assert_lt(r.resigned, 0);
		cr_assert_gt(r.n_moves, 40, "a game of %d moves", r.n_moves);
		/* A real count: both players own points at the end. */
		float owner[GAME_MAX_ACTIONS];
		cr_assert(gr_cpu_owner(&r, owner));
		int b = 0, w = 0;
		for (int q = 0; q < 81; q++) {
			b += owner[q] > 0;
			w += owner[q] < 0;
		}
		cr_assert(b > 5 && w > 5, "final owners: %d black, %d white", b, w);
		cr_assert(r.score != 0 && r.score == r.score);
		gr_head_stats st = { 0 };
		gr_check_game_heads(&L, &a, &r, &st);
		cr_assert(st.with_own > 0 && st.without_own == 0 && st.plus > 0 && st.minus > 0 &&
			  st.with_score > 0 && st.without_score == 0);

		/* The first 30 moves, then the player to move resigns. */
		game_params p = r.params;
		record_init(&res, &p);
		game *g = malloc(sizeof(*g));
		cr_assert(g);
		cr_assert_eq(game_init(g, &p), GAME_OK);
		for (int i = 0; i < 30; i++) {
			const record_visit *v = r.visits + r.visit_start[i];
			cr_assert_eq(record_add_move(&res, r.moves[i], true, 0.0f, v,
						     r.visit_start[i + 1] - r.visit_start[i]), 0);
			cr_assert_eq(game_play(g, r.moves[i]), GAME_OK);
		}
		game_resign(g, game_to_move(g));
		record_set_outcome(&res, g);
		free(g);
		cr_assert_geq(res.resigned, 0);
		gr_head_stats rs = { 0 };
		gr_check_game_heads(&L, &a, &res, &rs);
		cr_assert(rs.with_own == 0 && rs.without_own == 30 * 8 && rs.with_score == 0 &&
			  rs.without_score == 30 * 8);
		record_free(&r);
		record_free(&res);
	}
	gpu_replay_layout_free(&L);
}

/* The score target is rounded as train_batch_score_target rounds it (the
 * division in double, then to float), for either side to move, over
 * scores some of which a quotient of floats would round otherwise. */
Test(gpu_replay, score_target_rounding)
{
	char err[256];
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	train_batch *tb = train_batch_new(&a, 1, 0);
	cr_assert(tb);
	gpu_batch hb;
	gr_host_batch(&hb, &L, 1, NN_DTYPE_FP32);
	game *g = malloc(sizeof(*g));
	uint32_t *rec = calloc((size_t)L.d.rec_words, sizeof(uint32_t));
	cr_assert(g && rec);
	game_params p = L.params;
	p.komi = 7.5;
	cr_assert_eq(game_init(g, &p), GAME_OK);
	int differs = 0;
	for (int side = 0; side < 2; side++) {
		if (side)
			cr_assert_eq(game_play(g, 40), GAME_OK); /* White to move */
		for (int i = -2000; i <= 2000; i++) {
			/* Half points (area counts with komi x.5), and doubles
			 * a float does not hold (any komi). */
			double score = i % 2 ? i * 0.25 + 0.5 : i * 0.013;
			cr_assert_eq(gpu_replay_pack_heads(&L, g, NULL, score, rec, err, sizeof(err)),
				     0, "%s", err);
			int64_t slot = 0;
			int sym = i & 7;
			cr_assert_eq(gpu_replay_expand_host(&L, rec, &slot, &sym, 1, &hb), 0);
			cr_assert_eq(train_batch_score_target(g, score, tb, 0), 0);
			cr_assert_eq(memcmp(hb.score, tb->score, sizeof(float)), 0,
				     "score %g: %.9g, want %.9g", score, hb.score[0], tb->score[0]);
			cr_assert(hb.score_w[0] == 1.0f && tb->score_w[0] == 1.0f);
			float s = side ? (float)-score : (float)score;
			differs += memcmp(&(float){ s / 81.0f }, tb->score, sizeof(float)) != 0;
		}
	}
	cr_assert_gt(differs, 0, "no score tells the roundings apart");
	/* NaN: no target. */
	cr_assert_eq(gpu_replay_pack_heads(&L, g, NULL, NAN, rec, err, sizeof(err)), 0, "%s", err);
	int64_t slot = 0;
	int sym = 0;
	cr_assert_eq(gpu_replay_expand_host(&L, rec, &slot, &sym, 1, &hb), 0);
	cr_assert(hb.score[0] == 0.0f && hb.score_w[0] == 0.0f && hb.own_w[0] == 0.0f);
	free(rec);
	free(g);
	gr_host_batch_free(&hb);
	train_batch_free(tb);
	gpu_replay_layout_free(&L);
}

/* The heads' words come after the counts; a layout without heads keeps
 * the record it had before they existed, word for word. */
Test(gpu_replay, heads_append_to_the_record)
{
	char err[256];
	gr_case plain = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	gr_case heads = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 };
	gr_case c4 = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 };
	nn_arch ap = gr_arch(&plain), ah = gr_arch(&heads), ac = gr_arch(&c4);
	gpu_replay_layout P, H, C;
	cr_assert_eq(gpu_replay_layout_init(&P, &ap, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_layout_init(&H, &ah, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_layout_init(&C, &ac, err, sizeof(err)), 0, "%s", err);
	/* 2 header + 72 planes + 41 counts words (460 bytes), as before. */
	cr_assert_eq(P.d.rec_words, 115);
	cr_assert(P.d.own_off == 0 && P.d.score_off == 0);
	cr_assert_eq(C.d.rec_words, 15);
	cr_assert(C.d.own_off == 0 && C.d.score_off == 0);
	/* + 1 flag and ceil(81 / 16) = 6 code words, + 1 score word. */
	cr_assert_eq(H.d.own_off, 115);
	cr_assert_eq(H.d.score_off, 122);
	cr_assert_eq(H.d.rec_words, 123);
	cr_assert_eq(gpu_replay_record_bytes(&H), 492);
	/* One head alone. */
	nn_arch ao = ah;
	ao.score = 0;
	gpu_replay_layout O;
	cr_assert_eq(gpu_replay_layout_init(&O, &ao, err, sizeof(err)), 0, "%s", err);
	cr_assert(O.d.own_off == 115 && O.d.score_off == 0 && O.d.rec_words == 122);
	gpu_replay_layout_free(&O);
	nn_arch as = ah;
	as.ownership = 0;
	cr_assert_eq(gpu_replay_layout_init(&O, &as, err, sizeof(err)), 0, "%s", err);
	cr_assert(O.d.own_off == 0 && O.d.score_off == 115 && O.d.rec_words == 116);
	gpu_replay_layout_free(&O);
	/* Connect Four has no territory. */
	ac.ownership = 1;
	cr_assert_eq(gpu_replay_layout_init(&O, &ac, err, sizeof(err)), -1);
	cr_assert(strstr(err, "territory"), "%s", err);
	/* The same game's records agree on the words without heads. */
	uint64_t s = 5;
	game_record r;
	gr_game(&plain, &s, 60, &r);
	int np, nh;
	uint32_t *rp = gr_pack(&P, &r, &np), *rh = gr_pack(&H, &r, &nh);
	cr_assert_eq(np, nh);
	for (int i = 0; i < np; i++)
		cr_assert_eq(memcmp(rp + (size_t)i * 115, rh + (size_t)i * 123, 115 * 4), 0,
			     "position %d", i);
	/* A batch asking for heads of a layout without them is refused. */
	gpu_batch hb;
	gr_host_batch(&hb, &H, 1, NN_DTYPE_FP32);
	int64_t slot = 0;
	int sym = 0;
	cr_assert_eq(gpu_replay_expand_host(&P, rp, &slot, &sym, 1, &hb), -1);
	cr_assert_eq(gpu_replay_expand_host(&H, rh, &slot, &sym, 1, &hb), 0);
	/* A batch without them takes the rest of a layout with heads. */
	float *own = hb.own, *score = hb.score;
	hb.own = hb.score = NULL;
	cr_assert_eq(gpu_replay_expand_host(&H, rh, &slot, &sym, 1, &hb), 0);
	hb.own = own;
	hb.score = score;
	gr_host_batch_free(&hb);
	free(rp);
	free(rh);
	record_free(&r);
	gpu_replay_layout_free(&P);
	gpu_replay_layout_free(&H);
	gpu_replay_layout_free(&C);
}

/* Every case of the opponent-reply target in one hand-made Connect Four
 * game, in the records' words and in the expansion under both symmetries:
 * the next move's visits, the move played after a fast move, none after a
 * reply whose counts are all 0, none after the last move. */
Test(gpu_replay, host_opp_reply_cases)
{
	char err[256];
	gr_case k = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 1, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(L.d.opp_off, 0);
	/* Columns 0 and 1 in turn: the first player wins down column 0 at
	 * move 6. Kept: moves 0, 1, 2, 4, 6 (3 has no counts, 5 is fast). */
	static const record_visit v0[] = { { 0, 10 }, { 3, 5 } }, v1[] = { { 1, 7 }, { 2, 1 } },
				  v2[] = { { 0, 4 } }, v3[] = { { 1, 0 }, { 2, 0 } },
				  v4[] = { { 0, 3 }, { 6, 1 } }, v6[] = { { 0, 2 } };
	static const struct {
		const record_visit *v;
		int n;
		bool full;
	} mv[7] = { { v0, 2, true }, { v1, 2, true }, { v2, 1, true },	{ v3, 2, true },
		    { v4, 2, true }, { NULL, 0, false }, { v6, 1, true } };
	game_record r;
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	record_init(&r, &p);
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	cr_assert_eq(game_init(g, &p), GAME_OK);
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(record_add_move(&r, i % 2, mv[i].full, NAN, mv[i].v, mv[i].n), 0);
		cr_assert_eq(game_play(g, i % 2), GAME_OK);
	}
	cr_assert(game_is_over(g));
	record_set_outcome(&r, g);
	int np;
	uint32_t *recs = gr_pack(&L, &r, &np);
	cr_assert_eq(np, 5);
	/* Per kept position: its move, the reply's pairs and total. */
	static const struct {
		int move, n;
		int16_t m[2];
		uint16_t c[2];
		uint32_t total;
	} want[5] = { { 0, 2, { 1, 2 }, { 7, 1 }, 8 }, /* move 1's visits */
		      { 1, 1, { 0 }, { 4 }, 4 },       /* move 2's */
		      { 2, 2, { 1, 2 }, { 0, 0 }, 0 }, /* move 3's, all 0: none */
		      { 4, 1, { 1 }, { 1 }, 1 },       /* move 5 fast: the move played */
		      { 6, 0, { 0 }, { 0 }, 0 } };     /* the last move: none */
	train_batch *tb = train_batch_new(&a, 1, 1);
	cr_assert(tb && tb->opp);
	gpu_batch hb;
	gr_host_batch(&hb, &L, 1, NN_DTYPE_FP32);
	cr_assert(hb.opp);
	for (int j = 0; j < 5; j++) {
		const uint32_t *rec = recs + (size_t)j * L.d.rec_words;
		cr_assert_eq(rec[L.d.opp_off], want[j].total, "position %d: total %u", j,
			     rec[L.d.opp_off]);
		for (int b = 0; b < L.d.n_actions; b++) {
			uint32_t c = 0;
			for (int e = 0; e < want[j].n; e++)
				c += want[j].m[e] == b ? want[j].c[e] : 0;
			cr_assert_eq(gr_count_at(rec + L.d.opp_off + 1, b), c,
				     "position %d action %d: count %u, want %u", j, b,
				     gr_count_at(rec + L.d.opp_off + 1, b), c);
		}
		cr_assert_eq(record_replay(&r, want[j].move, g), 0);
		for (int sym = 0; sym < L.d.n_sym; sym++) {
			int64_t slot = j;
			cr_assert_eq(gpu_replay_expand_host(&L, recs, &slot, &sym, 1, &hb), 0);
			cr_assert_eq(train_batch_opp_target(g, sym, want[j].m, want[j].c, want[j].n, tb,
							    0), 0);
			cr_assert_eq(memcmp(hb.opp, tb->opp, sizeof(float) * (size_t)L.d.n_actions),
				     0, "position %d sym %d", j, sym);
			for (int e = 0; e < want[j].n && want[j].total; e++) {
				int b = game_symmetry_move(g, sym, want[j].m[e]);
				cr_assert_eq(hb.opp[b], (float)((double)want[j].c[e] / want[j].total),
					     "position %d sym %d: action %d -> %d holds %g", j, sym,
					     want[j].m[e], b, hb.opp[b]);
			}
			if (!want[j].total)
				for (int b = 0; b < L.d.n_actions; b++)
					cr_assert_eq(hb.opp[b], 0.0f);
		}
	}
	/* The mirror moves the reply: column 1's 7/8 lands on column 5. */
	int64_t slot = 0;
	int sym = 1;
	cr_assert_eq(gpu_replay_expand_host(&L, recs, &slot, &sym, 1, &hb), 0);
	cr_assert(hb.opp[5] == 0.875f && hb.opp[4] == 0.125f && hb.opp[1] == 0.0f, "%g %g %g",
		  hb.opp[5], hb.opp[4], hb.opp[1]);
	gr_host_batch_free(&hb);
	train_batch_free(tb);
	free(recs);
	free(g);
	record_free(&r);
	gpu_replay_layout_free(&L);
}

/* The opponent-reply words come after the other heads'; the words before
 * them are the record without the head, word for word. A batch asking for
 * the target of a layout without it is refused; one without takes the rest
 * of a layout with it. pack_opp refuses what pack_body refuses. */
Test(gpu_replay, opp_appends_to_the_record)
{
	char err[256];
	static const struct {
		gr_case plain, opp;
		int off, words;
	} cases[] = {
		/* 115 words + 1 total + ceil(82 / 2) counts */
		{ { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 },
		  { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 1, 0 },
		  115, 157 },
		/* after the ownership and score words (123) */
		{ { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 },
		  { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 1, 0 },
		  123, 165 },
		/* 1668 bytes + 4 + 181 words */
		{ { GAME_KIND_GO, 19, NN_ENC_LZ18, 7.5, 0, 0, 0 },
		  { GAME_KIND_GO, 19, NN_ENC_LZ18, 7.5, 0, 1, 0 }, 417, 599 },
		/* 15 words + 1 + ceil(7 / 2) */
		{ { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 },
		  { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 1, 0 },
		  15, 20 },
	};
	for (int c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++) {
		nn_arch ap = gr_arch(&cases[c].plain), ao = gr_arch(&cases[c].opp);
		gpu_replay_layout P, O;
		cr_assert_eq(gpu_replay_layout_init(&P, &ap, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(gpu_replay_layout_init(&O, &ao, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(P.d.opp_off, 0);
		cr_assert_eq(P.d.rec_words, cases[c].off, "case %d: %d words", c, P.d.rec_words);
		cr_assert_eq(O.d.opp_off, cases[c].off, "case %d: opp_off %d", c, O.d.opp_off);
		cr_assert_eq(O.d.rec_words, cases[c].words, "case %d: %d words", c, O.d.rec_words);
		cr_assert(O.d.own_off == P.d.own_off && O.d.score_off == P.d.score_off);
		uint64_t s = 11 + (uint64_t)c;
		game_record r;
		gr_game(&cases[c].opp, &s, 50, &r);
		int np, no;
		uint32_t *rp = gr_pack(&P, &r, &np), *ro = gr_pack(&O, &r, &no);
		cr_assert_eq(np, no);
		cr_assert_gt(np, 3);
		size_t wp = (size_t)P.d.rec_words, wo = (size_t)O.d.rec_words;
		for (int i = 0; i < np; i++)
			cr_assert_eq(memcmp(rp + i * wp, ro + i * wo, wp * 4), 0, "case %d position %d", c,
				     i);
		gpu_batch hb;
		gr_host_batch(&hb, &O, 1, NN_DTYPE_FP32);
		int64_t slot = np - 1;
		int sym = 0;
		cr_assert_eq(gpu_replay_expand_host(&P, rp, &slot, &sym, 1, &hb), -1);
		cr_assert_eq(gpu_replay_expand_host(&O, ro, &slot, &sym, 1, &hb), 0);
		float *opp = hb.opp;
		hb.opp = NULL;
		cr_assert_eq(gpu_replay_expand_host(&O, ro, &slot, &sym, 1, &hb), 0);
		hb.opp = opp;
		gr_host_batch_free(&hb);
		/* pack_opp: nothing on a layout without the head; a move outside
		 * the actions and a count past 16 bits refused. */
		uint32_t *rec = ro;
		game *g0 = malloc(sizeof(*g0));
		cr_assert(g0 && game_init(g0, &r.params) == GAME_OK);
		uint32_t keep[1024];
		cr_assert_lt(wo, 1024);
		memcpy(keep, rp, wp * 4);
		int16_t m2[2] = { 0, 0 };
		uint16_t c2[2] = { 40000, 30000 };
		cr_assert_eq(gpu_replay_pack_opp(&P, g0, m2, c2, 2, rp, err, sizeof(err)), 0);
		cr_assert_eq(memcmp(keep, rp, wp * 4), 0, "a layout without the head changed");
		cr_assert_eq(gpu_replay_pack_opp(&O, g0, m2, c2, 2, rec, err, sizeof(err)), -1);
		cr_assert(strstr(err, "65535"), "%s", err);
		int16_t bad = (int16_t)O.d.n_actions;
		cr_assert_eq(gpu_replay_pack_opp(&O, g0, &bad, c2, 1, rec, err, sizeof(err)), -1);
		cr_assert(strstr(err, "action"), "%s", err);
		/* Repeated moves add up, as train_batch_opp_target's += does. */
		uint16_t c3[2] = { 3, 5 };
		cr_assert_eq(gpu_replay_pack_opp(&O, g0, m2, c3, 2, rec, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert(rec[O.d.opp_off] == 8 && gr_count_at(rec + O.d.opp_off + 1, 0) == 8);
		free(g0);
		free(rp);
		free(ro);
		record_free(&r);
		gpu_replay_layout_free(&P);
		gpu_replay_layout_free(&O);
	}
}

/* The sizes the layout comment promises. */
Test(gpu_replay, record_bytes)
{
	static const struct {
		gr_case k;
		size_t bytes;
	} want[] = {
		{ { GAME_KIND_GO, 19, NN_ENC_LZ18, 7.5, 0, 0, 0 }, 1668 },
		{ { GAME_KIND_GO, 19, NN_ENC_GO_NATIVE, 7.5, 0, 0, 0 }, 2136 },
		{ { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 }, 460 },
		{ { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 7.5, 0, 0, 0 }, 604 },
		{ { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 }, 60 },
	};
	char err[256];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		nn_arch a = gr_arch(&want[i].k);
		gpu_replay_layout L;
		cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(gpu_replay_record_bytes(&L), want[i].bytes, "case %zu: %zu bytes", i,
			     gpu_replay_record_bytes(&L));
		gpu_replay_layout_free(&L);
	}
}

/* A layout whose encoding does not fit its game is refused. */
Test(gpu_replay, layout_refuses_mismatch)
{
	char err[256] = "";
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	nn_arch a = gr_arch(&k);
	a.encoding = NN_ENC_C4;
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), -1);
	cr_assert(strstr(err, "does not describe"), "%s", err);
}

/* skip and max select a contiguous run of the whole game's records. */
Test(gpu_replay, pack_game_skip_and_max)
{
	char err[256];
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	uint64_t s = 77;
	game_record r;
	gr_game(&k, &s, 80, &r);
	int np;
	uint32_t *all = gr_pack(&L, &r, &np);
	cr_assert_gt(np, 10);
	size_t rw = (size_t)L.d.rec_words;
	uint32_t *part = malloc(sizeof(uint32_t) * rw * 5);
	cr_assert_eq(gpu_replay_pack_game(&L, &r, 3, part, 5, err, sizeof(err)), 5, "%s", err);
	cr_assert_eq(memcmp(part, all + 3 * rw, sizeof(uint32_t) * rw * 5), 0);
	cr_assert_eq(gpu_replay_pack_game(&L, &r, np - 2, part, 5, err, sizeof(err)), 2);
	cr_assert_eq(memcmp(part, all + (size_t)(np - 2) * rw, sizeof(uint32_t) * rw * 2), 0);
	free(part);
	free(all);
	record_free(&r);
	gpu_replay_layout_free(&L);
}

/* The GPU learner's value target mixes the game's result (or its
 * lambda-return) with the search's root value as the CPU window does
 * (record_value_target), in every packed record, cut at exploring moves
 * when asked; 0, lambda 1 and no cut (the layout's default) keep the
 * result alone. */
Test(gpu_replay, value_target_mix)
{
	char err[256];
	game_record r;
	tu_column_game(&r, 0, true);
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	nn_arch a = nn_arch_default(&p, 1, 8);
	gpu_replay_layout L;
	cr_assert_eq(gpu_replay_layout_init(&L, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(L.value_lambda, 1.0f);
	cr_assert(!L.value_cut);
	r.explored[3] = 1;
	for (int pass = 0; pass < 5; pass++) {
		float l = pass == 0 || pass == 4 ? 0 : pass == 1 ? 0.25f : pass == 2 ? 1 : 0.5f;
		float lambda = pass == 3 ? 0.5f : 1;
		bool cut = pass == 4;
		L.value_q_weight = l;
		L.value_lambda = lambda;
		L.value_cut = cut;
		int np;
		uint32_t *recs = gr_pack(&L, &r, &np);
		cr_assert_eq(np, 7, "every move of the game was searched fully");
		for (int i = 0; i < np; i++) {
			float z = i % 2 ? -1 : 1; /* the first player won */
			float want = (1 - l) * z + l * tu_game_q(i);
			float got = gr_value(recs + (size_t)i * L.d.rec_words);
			if (cut && i <= 3)
				cr_assert(fabsf(got - want) > 1e-3f, "the cut shows at position %d", i);
			else if (lambda == 1)
				cr_assert_float_eq(got, want, 1e-6, "weight %g, position %d: %g", l, i,
						   got);
			else if (i + 1 < np)
				cr_assert(fabsf(got - want) > 1e-3f, "lambda %g shows at position %d",
					  lambda, i);
			cr_assert_float_eq(got,
					   record_value_target(&r, i, i % 2 ? GAME_WHITE : GAME_BLACK, l,
							       lambda, cut),
					   1e-6);
		}
		free(recs);
	}
	gpu_replay_layout_free(&L);
	record_free(&r);
}

/* ---- the ring, on the host or a device ----------------------------------- */

/* Games and their records in order: what the ring should hold. */
typedef struct gr_stream {
	int n_games;
	game_record *games;
	uint32_t *recs;     /* [positions][rec_words], in added order */
	int *first;         /* [n_games + 1]: first record of each game */
} gr_stream;

static void gr_stream_make(gr_stream *st, const gr_case *k, const gpu_replay_layout *L,
			   int n_games, int max_moves, uint64_t seed)
{
	st->n_games = n_games;
	st->games = calloc((size_t)n_games, sizeof(game_record));
	st->first = calloc((size_t)n_games + 1, sizeof(int));
	cr_assert(st->games && st->first);
	uint64_t s = seed | 1;
	for (int i = 0; i < n_games; i++) {
		gr_game(k, &s, max_moves, &st->games[i]);
		st->first[i + 1] = st->first[i] + gpu_replay_game_positions(&st->games[i]);
	}
	size_t rw = (size_t)L->d.rec_words;
	st->recs = malloc(sizeof(uint32_t) * rw * (size_t)(st->first[n_games] + 1));
	cr_assert(st->recs);
	char err[256];
	for (int i = 0; i < n_games; i++) {
		int np = st->first[i + 1] - st->first[i];
		cr_assert_eq(gpu_replay_pack_game(L, &st->games[i], 0, st->recs + st->first[i] * rw,
						  np, err, sizeof(err)), np, "%s", err);
	}
}

static void gr_stream_free(gr_stream *st)
{
	for (int i = 0; i < st->n_games; i++)
		record_free(&st->games[i]);
	free(st->games);
	free(st->recs);
	free(st->first);
}

/* Adds the stream's games in calls of 1, 2, 3, ... games and checks after
 * each that the ring holds exactly the newest positions at their slots. */
static void gr_check_ring_of(const gr_case *kc, int device, int64_t window, int chunk)
{
	char err[256];
	gr_case k = *kc;
	nn_arch a = gr_arch(&k);
	gpu_replay *gr = gpu_replay_new(&a, window, device, err, sizeof(err));
	cr_assert(gr, "%s", err);
	if (chunk > 0)
		cr_assert_eq(gpu_replay_set_chunk(gr, chunk), 0);
	const gpu_replay_layout *L = gpu_replay_get_layout(gr);
	size_t rw = (size_t)L->d.rec_words;
	gr_stream st;
	gr_stream_make(&st, &k, L, 24, 60, 1234);
	uint32_t *ring = malloc(sizeof(uint32_t) * rw * (size_t)window);
	cr_assert(ring);
	int64_t written = 0;
	int call = 1;
	for (int g = 0; g < st.n_games; call++) {
		int n = call < st.n_games - g ? call : st.n_games - g;
		const game_record *p[32];
		for (int i = 0; i < n; i++)
			p[i] = &st.games[g + i];
		cr_assert_eq(gpu_replay_add_games(gr, p, n, err, sizeof(err)), 0, "%s", err);
		int64_t pos = st.first[g + n] - st.first[g];
		/* A call uploads at most `window` positions: its newest. */
		written += pos < window ? pos : window;
		g += n;
		int64_t total = st.first[g];
		cr_assert_eq(gpu_replay_added(gr), total);
		cr_assert_eq(gpu_replay_positions(gr), total < window ? total : window);
		cr_assert_eq(gpu_replay_download(gr, 0, window, ring, err, sizeof(err)), 0, "%s", err);
		int64_t keep = total < window ? total : window;
		/* The m-th newest position is in slot (written - m) % window. */
		for (int64_t m = 1; m <= keep; m++) {
			int64_t slot = (written - m) % window;
			cr_assert_eq(memcmp(ring + (size_t)slot * rw, st.recs + (size_t)(total - m) * rw,
					    sizeof(uint32_t) * rw), 0,
				     "after %lld positions: the %lld-th newest is not in slot %lld",
				     (long long)total, (long long)m, (long long)slot);
		}
	}
	cr_assert_gt(st.first[st.n_games], 3 * window, "the ring should wrap several times");
	free(ring);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}

static void gr_check_ring(int device, int64_t window, int chunk)
{
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	gr_check_ring_of(&k, device, window, chunk);
}

/* Records of 9x9 and 13x13 games (a net of both) side by side in one ring,
 * each with its size word, wrapping as those of one size do. */
Test(gpu_replay, host_ring_holds_several_sizes)
{
	gr_case k = { GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 1, 1, GR_SIZES(9, 13) };
	gr_check_ring_of(&k, GPU_REPLAY_HOST, 97, 13);
}

Test(gpu_replay, host_ring_wraps_and_drops_oldest)
{
	gr_check_ring(GPU_REPLAY_HOST, 97, 0);
	gr_check_ring(GPU_REPLAY_HOST, 97, 13); /* chunk boundaries inside games */
	gr_check_ring(GPU_REPLAY_HOST, 1, 0);
}

Test(gpu_replay, host_window_refuses_sampling)
{
	char err[256] = "";
	gr_case k = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay *gr = gpu_replay_new(&a, 10, GPU_REPLAY_HOST, err, sizeof(err));
	cr_assert(gr, "%s", err);
	cr_assert_eq(gpu_replay_sample(gr, 1, 0, 4, 0, 0, NULL, NULL, err, sizeof(err)), -1);
	gpu_replay_free(gr);
	gpu_replay_free(NULL);
}

/* ---- device -------------------------------------------------------------- */

static void gr_need_device(void)
{
	SKIP_WITHOUT_GPU();
}

Test(gpu_replay, device_ring_wraps_and_drops_oldest)
{
	gr_need_device();
	gr_check_ring(0, 97, 0);
	gr_check_ring(0, 97, 13);
}

/* A device window filled with a stream's games. */
static gpu_replay *gr_filled(const gr_case *k, int64_t window, int games, int max_moves,
			     gr_stream *st)
{
	char err[256];
	nn_arch a = gr_arch(k);
	gpu_replay *gr = gpu_replay_new(&a, window, 0, err, sizeof(err));
	cr_assert(gr, "%s", err);
	gr_stream_make(st, k, gpu_replay_get_layout(gr), games, max_moves, 99);
	const game_record **p = malloc(sizeof(*p) * (size_t)games);
	for (int i = 0; i < games; i++)
		p[i] = &st->games[i];
	cr_assert_eq(gpu_replay_add_games(gr, p, games, err, sizeof(err)), 0, "%s", err);
	free(p);
	return gr;
}

static float gr_plane_float(const gpu_batch *b, size_t i)
{
	if (b->dtype == NN_DTYPE_FP16)
		return nn_float_from_half(((const uint16_t *)b->planes)[i]);
	if (b->dtype == NN_DTYPE_BF16)
		return nn_float_from_bf16(((const uint16_t *)b->planes)[i]);
	return ((const float *)b->planes)[i];
}

/* Samples n into a device batch and compares it with the host expansion
 * of the downloaded ring under the downloaded draws. */
static void gr_check_device_expansion(const gr_case *k, nn_dtype dt)
{
	char err[256];
	enum { N = 256 };
	gr_stream st;
	gpu_replay *gr = gr_filled(k, 300, 12, 80, &st);
	const gpu_replay_layout *L = gpu_replay_get_layout(gr);
	nn_arch a = gr_arch(k);
	gpu_batch db, hb, want;
	cr_assert_eq(gpu_batch_alloc(&db, N, &a, dt, 1, err, sizeof(err)), 0, "%s", err);
	gr_host_batch(&hb, L, N, dt);
	gr_host_batch(&want, L, N, dt);
	int64_t held = gpu_replay_positions(gr);
	uint32_t *ring = malloc(gpu_replay_record_bytes(L) * (size_t)held);
	int64_t slots[N];
	int syms[N];
	int opp_with = 0, opp_without = 0; /* draws with and without a reply */
	for (uint64_t counter = 0; counter < 3; counter++) {
		cr_assert_eq(gpu_replay_sample(gr, 42, counter, N, 0, N, &db, NULL, err, sizeof(err)),
			     0, "%s", err);
		cr_assert_eq(gpu_batch_download(&db, hb.planes, hb.policy, hb.value, hb.wdl, err,
						sizeof(err)), 0, "%s", err);
		cr_assert_eq(gpu_replay_last_draws(gr, N, slots, syms, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(gpu_replay_download(gr, 0, held, ring, err, sizeof(err)), 0, "%s", err);
		for (int i = 0; i < N; i++)
			cr_assert(slots[i] >= 0 && slots[i] < held && syms[i] >= 0 &&
				  syms[i] < L->d.n_sym);
		cr_assert_eq(gpu_replay_expand_host(L, ring, slots, syms, N, &want), 0);
		/* Both sides round the same float to nearest even: the
		 * bound only allows for a different tie rule. */
		double tol = dt == NN_DTYPE_FP32 ? 0 : dt == NN_DTYPE_FP16 ? 0x1p-11 : 0x1p-8;
		size_t np = (size_t)N * L->d.hw * L->d.c_pad;
		for (size_t i = 0; i < np; i++) {
			float g = gr_plane_float(&hb, i), w = gr_plane_float(&want, i);
			cr_assert(fabs((double)g - w) <= tol * fabs(w), "plane element %zu: %g, want %g",
				  i, g, w);
		}
		cr_assert_eq(memcmp(hb.policy, want.policy, sizeof(float) * N * L->d.n_actions), 0,
			     "policy differs");
		cr_assert_eq(memcmp(hb.value, want.value, sizeof(float) * N), 0, "value differs");
		cr_assert_eq(memcmp(hb.wdl, want.wdl, sizeof(float) * 3 * N), 0, "wdl differs");
		if (k->opp) {
			/* The reply through the policy's action table: bit for bit. */
			cr_assert(db.opp);
			cr_assert_eq(gpu_batch_download_heads(&db, NULL, NULL, NULL, NULL, hb.opp, err,
							      sizeof(err)), 0, "%s", err);
			size_t na = (size_t)L->d.n_actions;
			cr_assert_eq(memcmp(hb.opp, want.opp, sizeof(float) * N * na), 0,
				     "opponent-reply target differs");
			int with = 0, without = 0;
			for (int i = 0; i < N; i++) {
				double sum = 0;
				for (size_t b = 0; b < na; b++)
					sum += want.opp[i * na + b];
				with += fabs(sum - 1.0) < 1e-5;
				without += sum == 0.0;
			}
			cr_assert_eq(with + without, N, "a reply summing to neither 0 nor 1");
			opp_with += with;
			opp_without += without;
		} else {
			cr_assert_null(db.opp);
		}
		if (!k->heads)
			continue;
		/* The head targets through the same element functions: equal
		 * bit for bit, whatever the planes' type. */
		cr_assert(db.own && db.own_w && db.score && db.score_w);
		cr_assert_eq(gpu_batch_download_heads(&db, hb.own, hb.own_w, hb.score, hb.score_w, NULL,
						      err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(memcmp(hb.own, want.own, sizeof(float) * N * L->d.hw), 0,
			     "ownership differs");
		cr_assert_eq(memcmp(hb.own_w, want.own_w, sizeof(float) * N), 0, "own_w differs");
		cr_assert_eq(memcmp(hb.score, want.score, sizeof(float) * N), 0, "score differs");
		cr_assert_eq(memcmp(hb.score_w, want.score_w, sizeof(float) * N), 0,
			     "score_w differs");
		int with = 0, without = 0, nonzero = 0;
		for (int i = 0; i < N; i++) {
			with += want.own_w[i] == 1.0f;
			without += want.own_w[i] == 0.0f;
		}
		for (int i = 0; i < N * L->d.hw; i++)
			nonzero += want.own[i] != 0.0f;
		cr_assert(with > 0 && without > 0 && nonzero > 0,
			  "draws with (%d) and without (%d) targets, %d owned points", with,
			  without, nonzero);
	}
	if (k->opp)
		cr_assert(opp_with > 0 && opp_without > 0,
			  "draws with (%d) and without (%d) a reply (a game's last position)",
			  opp_with, opp_without);
	/* A batch without the head arrays the window has is refused. */
	if (k->heads) {
		float *own = db.own;
		db.own = NULL;
		cr_assert_eq(gpu_replay_sample(gr, 42, 0, N, 0, N, &db, NULL, err, sizeof(err)), -1);
		cr_assert(strstr(err, "ownership"), "%s", err);
		db.own = own;
	}
	if (k->opp) {
		float *opp = db.opp;
		db.opp = NULL;
		cr_assert_eq(gpu_replay_sample(gr, 42, 0, N, 0, N, &db, NULL, err, sizeof(err)), -1);
		cr_assert(strstr(err, "opponent-reply"), "%s", err);
		db.opp = opp;
	}
	free(ring);
	gr_host_batch_free(&hb);
	gr_host_batch_free(&want);
	gpu_batch_free(&db);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}

Test(gpu_replay, device_expansion_matches_host)
{
	gr_need_device();
	static const gr_case cases[] = {
		{ GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 },
		{ GAME_KIND_GO, 19, NN_ENC_GO_NATIVE, 7.5, 0, 0, 0 },
		{ GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 },
		{ GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 0, 0 },
		{ GAME_KIND_GO, 19, NN_ENC_GO_NATIVE, 7.5, 1, 0, 0 },
		/* The opponent-reply head, alone and beside the others. */
		{ GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 1, 0 },
		{ GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 1, 1, 0 },
		/* Several board sizes: framed records, a table set per size. */
		{ GAME_KIND_GO, 13, NN_ENC_GO_NATIVE, 7.5, 1, 1, GR_SIZES(9, 13) },
		{ GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, GR_SIZES(7, 9) },
	};
	for (int c = 0; c < (int)(sizeof(cases) / sizeof(cases[0])); c++)
		for (int dt = NN_DTYPE_FP32; dt <= NN_DTYPE_BF16; dt++)
			gr_check_device_expansion(&cases[c], (nn_dtype)dt);
}

/* Wilson-Hilferty: the chi-square quantile for dof k at normal quantile z. */
static double gr_chi2_crit(int k, double z)
{
	double h = 2.0 / (9.0 * k);
	return k * pow(1.0 - h + z * sqrt(h), 3);
}

Test(gpu_replay, draws_uniform_over_window_and_symmetries)
{
	gr_need_device();
	char err[256];
	enum { W = 1000, N = 1000000 };
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	gr_stream st;
	gpu_replay *gr = gr_filled(&k, W, 60, 80, &st);
	cr_assert_eq(gpu_replay_positions(gr), W, "the games should fill the window");
	int64_t *slots = malloc(sizeof(int64_t) * N);
	int *syms = malloc(sizeof(int) * N);
	cr_assert(slots && syms);
	cr_assert_eq(gpu_replay_sample(gr, 7, 0, N, 0, 0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_last_draws(gr, N, slots, syms, err, sizeof(err)), 0, "%s", err);
	static long cs[W], cy[8];
	for (int i = 0; i < N; i++) {
		cr_assert(slots[i] >= 0 && slots[i] < W && syms[i] >= 0 && syms[i] < 8);
		cs[slots[i]]++;
		cy[syms[i]]++;
	}
	double chi = 0, e = (double)N / W;
	for (int i = 0; i < W; i++)
		chi += (cs[i] - e) * (cs[i] - e) / e;
	/* p > 0.001 (z = 3.0902) */
	cr_assert_lt(chi, gr_chi2_crit(W - 1, 3.0902), "positions: chi-square %.1f", chi);
	double chy = 0, ey = N / 8.0;
	for (int i = 0; i < 8; i++) {
		chy += (cy[i] - ey) * (cy[i] - ey) / ey;
		cr_assert(fabs(cy[i] / (double)N - 0.125) < 0.005, "symmetry %d: %ld", i, cy[i]);
	}
	cr_assert_lt(chy, 24.32, "symmetries: chi-square %.2f (7 dof, p = 0.001)", chy);
	free(slots);
	free(syms);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}

Test(gpu_replay, draws_depend_on_seed_and_counter)
{
	gr_need_device();
	char err[256];
	enum { N = 512 };
	gr_case k = { GAME_KIND_CONNECT4, 0, NN_ENC_C4, 0, 0, 0, 0 };
	gr_stream st;
	gpu_replay *gr = gr_filled(&k, 5000, 300, 42, &st);
	int64_t a[N], b[N];
	int sa[N], sb[N];
	cr_assert_eq(gpu_replay_sample(gr, 5, 17, N, 0, 0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_last_draws(gr, N, a, sa, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_sample(gr, 5, 17, N, 0, 0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_last_draws(gr, N, b, sb, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(a, b, sizeof(a)), 0, "same seed and counter, different positions");
	cr_assert_eq(memcmp(sa, sb, sizeof(sa)), 0, "same seed and counter, different symmetries");
	/* A smaller batch draws the same first positions. */
	cr_assert_eq(gpu_replay_sample(gr, 5, 17, N / 2, 0, 0, NULL, NULL, err, sizeof(err)), 0);
	cr_assert_eq(gpu_replay_last_draws(gr, N / 2, b, sb, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(a, b, sizeof(int64_t) * (N / 2)), 0);
	cr_assert_eq(gpu_replay_sample(gr, 5, 18, N, 0, 0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_last_draws(gr, N, b, sb, err, sizeof(err)), 0, "%s", err);
	int same = 0;
	for (int i = 0; i < N; i++)
		same += a[i] == b[i];
	cr_assert_lt(same, N / 20, "another counter repeated %d of %d positions", same, N);
	cr_assert_eq(gpu_replay_sample(gr, 6, 17, N, 0, 0, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_last_draws(gr, N, b, sb, err, sizeof(err)), 0, "%s", err);
	same = 0;
	for (int i = 0; i < N; i++)
		same += a[i] == b[i];
	cr_assert_lt(same, N / 20, "another seed repeated %d of %d positions", same, N);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}

Test(gpu_replay, shares_reassemble_the_batch)
{
	gr_need_device();
	char err[256];
	enum { N = 96, H = 40 };
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_GO_NATIVE, 7.5, 0, 0, 0 };
	gr_stream st;
	gpu_replay *gr = gr_filled(&k, 400, 10, 80, &st);
	const gpu_replay_layout *L = gpu_replay_get_layout(gr);
	nn_arch a = gr_arch(&k);
	gpu_batch whole, r0, r1;
	cr_assert_eq(gpu_batch_alloc(&whole, N, &a, NN_DTYPE_FP16, 1, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(gpu_batch_alloc(&r0, N, &a, NN_DTYPE_FP16, 1, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(gpu_batch_alloc(&r1, N, &a, NN_DTYPE_FP16, 1, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(gpu_replay_sample(gr, 3, 9, N, 0, N, &whole, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_sample(gr, 3, 9, N, 0, H, &r0, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_replay_sample(gr, 3, 9, N, H, N - H, &r1, NULL, err, sizeof(err)), 0, "%s",
		     err);
	size_t pe = (size_t)L->d.hw * L->d.c_pad * 2, na = (size_t)L->d.n_actions;
	uint8_t *pw = malloc(pe * N), *pr = malloc(pe * N);
	float *qw = malloc(sizeof(float) * na * N), *qr = malloc(sizeof(float) * na * N);
	float vw[N], vr[N], ww[3 * N], wr[3 * N];
	cr_assert_eq(gpu_batch_download(&whole, pw, qw, vw, ww, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_batch_download(&r0, pr, qr, vr, wr, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(gpu_batch_download(&r1, pr + pe * H, qr + na * H, vr + H, wr + 3 * H, err,
					sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(pw, pr, pe * N), 0, "planes of the shares differ");
	cr_assert_eq(memcmp(qw, qr, sizeof(float) * na * N), 0, "policy of the shares differs");
	cr_assert_eq(memcmp(vw, vr, sizeof(vw)), 0);
	cr_assert_eq(memcmp(ww, wr, sizeof(ww)), 0);
	free(pw);
	free(pr);
	free(qw);
	free(qr);
	gpu_batch_free(&whole);
	gpu_batch_free(&r0);
	gpu_batch_free(&r1);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}

/* Appending from another thread while sampling: every sampled position
 * must be exactly one of the records uploaded to its slot (a copy racing
 * an expansion would show a torn mixture). */
typedef struct gr_adder {
	gpu_replay *gr;
	gr_stream *st;
	int failed;
	char err[256];
} gr_adder;

static void *gr_add_thread(void *p)
{
	gr_adder *ad = p;
	for (int g = 0; g < ad->st->n_games; g += 2) {
		const game_record *gs[2] = { &ad->st->games[g], &ad->st->games[g + 1] };
		if (gpu_replay_add_games(ad->gr, gs, g + 1 < ad->st->n_games ? 2 : 1, ad->err,
					 sizeof(ad->err)) != 0) {
			ad->failed = 1;
			break;
		}
	}
	return NULL;
}

Test(gpu_replay, appends_while_sampling_stay_valid)
{
	gr_need_device();
	char err[256];
	enum { W = 300, N = 128 };
	gr_case k = { GAME_KIND_GO, 9, NN_ENC_LZ18, 7.5, 0, 0, 0 };
	nn_arch a = gr_arch(&k);
	gpu_replay *gr = gpu_replay_new(&a, W, 0, err, sizeof(err));
	cr_assert(gr, "%s", err);
	cr_assert_eq(gpu_replay_set_chunk(gr, 37), 0);
	const gpu_replay_layout *L = gpu_replay_get_layout(gr);
	size_t rw = (size_t)L->d.rec_words;
	gr_stream st;
	gr_stream_make(&st, &k, L, 200, 80, 4321);
	/* Prime the window so sampling can start at once. */
	const game_record *g0[2] = { &st.games[0], &st.games[1] };
	cr_assert_eq(gpu_replay_add_games(gr, g0, 2, err, sizeof(err)), 0, "%s", err);
	gr_adder ad = { .gr = gr, .st = &st };
	gr_stream rest = st;
	rest.games += 2;
	rest.n_games -= 2;
	ad.st = &rest;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, gr_add_thread, &ad), 0);
	gpu_batch db, hb, want;
	cr_assert_eq(gpu_batch_alloc(&db, N, &a, NN_DTYPE_FP32, 1, err, sizeof(err)), 0, "%s", err);
	gr_host_batch(&hb, L, N, NN_DTYPE_FP32);
	gr_host_batch(&want, L, 1, NN_DTYPE_FP32);
	size_t pe = (size_t)L->d.hw * L->d.c_pad, na = (size_t)L->d.n_actions;
	int64_t total = st.first[st.n_games];
	int64_t slots[N];
	int syms[N];
	for (int it = 0; it < 200; it++) {
		cr_assert_eq(gpu_replay_sample(gr, 11, (uint64_t)it, N, 0, N, &db, NULL, err, sizeof(err)),
			     0, "%s", err);
		cr_assert_eq(gpu_batch_download(&db, hb.planes, hb.policy, hb.value, hb.wdl, err,
						sizeof(err)), 0, "%s", err);
		cr_assert_eq(gpu_replay_last_draws(gr, N, slots, syms, err, sizeof(err)), 0, "%s", err);
		for (int i = 0; i < N; i++) {
			/* Every call here adds fewer than W positions, so the
			 * j-th position added went to slot j % W. */
			bool found = false;
			for (int64_t j = slots[i]; j < total && !found; j += W) {
				int64_t zero = 0;
				cr_assert_eq(gpu_replay_expand_host(L, st.recs + (size_t)j * rw, &zero,
								    &syms[i], 1, &want), 0);
				found = memcmp((float *)hb.planes + pe * i, want.planes,
					       sizeof(float) * pe) == 0 &&
					memcmp(hb.policy + na * i, want.policy, sizeof(float) * na) == 0 &&
					hb.value[i] == want.value[0];
			}
			cr_assert(found, "sample %d draw %d (slot %lld) matches no record of its slot", it,
				  i, (long long)slots[i]);
		}
	}
	pthread_join(th, NULL);
	cr_assert(!ad.failed, "%s", ad.err);
	cr_assert_eq(gpu_replay_added(gr), total);
	gr_host_batch_free(&hb);
	gr_host_batch_free(&want);
	gpu_batch_free(&db);
	gr_stream_free(&st);
	gpu_replay_free(gr);
}
