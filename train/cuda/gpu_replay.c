/* gpu_replay.c: the GPU replay buffer (gpu_replay.h). The host half
 * (layout, packing, host expansion) is plain C built everywhere; the device
 * half needs CUDA and, in a build without it, refuses with the reason. */
#include "train/cuda/gpu_replay.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "nn/cuda/pack.h"

/* The largest float planes one position encodes to (Go native, 19x19). */
enum { GR_MAX_IN = 27 * GO_MAX_SIZE * GO_MAX_SIZE };

/* ---- host side ---------------------------------------------------------- */

/* Frame point q of L's frame as a point of g's board (in its lower left
 * corner), or -1 off the board. */
static int board_point(const gpu_replay_layout *L, const game *g, int q)
{
	int fw = L->frame_w, x = q % fw, y = q / fw;
	int w = game_width(g);
	return x < w && y < game_height(g) ? y * w + x : -1;
}

/* Table set (k, s) of L: board g (size L->size[k]) under symmetry s, each
 * output point or action of the frame mapped to the canonical one it
 * shows (the inverse symmetry's image on the board, nn_frame_action's
 * place in the frame), those off the board to themselves. */
static void layout_tables(gpu_replay_layout *L, const game *g, int k, int s)
{
	const gr_dims *d = &L->d;
	int fw = L->frame_w, fh = L->frame_h, w = game_width(g);
	int inv = game_symmetry_inverse(g, s);
	int16_t *pt = L->point_inv + ((size_t)k * d->n_sym + s) * d->hw;
	int16_t *at = L->action_inv + ((size_t)k * d->n_sym + s) * d->n_actions;
	for (int q = 0; q < d->hw; q++) {
		int qb = board_point(L, g, q);
		/* As nn/encode.c moves planes, then into the frame. */
		int p = qb < 0 ? -1 : nn_encode_sym_point(g, inv, qb);
		pt[q] = (int16_t)(p < 0 ? q : p / w * fw + p % w);
	}
	for (int b = 0; b < d->n_actions; b++) {
		int ab = b;
		if (game_width(g) != fw || game_height(g) != fh)
			ab = b == fw * fh ? game_pass_move(g) : board_point(L, g, b);
		at[b] = (int16_t)(ab < 0 ? b
				  : nn_frame_action(g, game_symmetry_move(g, inv, ab), fw, fh));
	}
}

int gpu_replay_layout_init(gpu_replay_layout *L, const nn_arch *a, char *err, size_t errlen)
{
	memset(L, 0, sizeof(*L));
	L->value_lambda = 1;
	int rc = -1;
	game *g = malloc(sizeof(*g)); /* ~30 KB of history: not on the stack */
	if (!g) {
		snprintf(err, errlen, "gpu replay: out of memory");
		return -1;
	}
	if (!game_desc_by_kind(a->game)) {
		snprintf(err, errlen, "gpu replay: unknown game kind %d", (int)a->game);
		goto out;
	}
	game_params p = nn_arch_params(a);
	if ((unsigned)a->encoding >= NN_ENC_COUNT || nn_encoding_game(a->encoding) != a->game ||
	    nn_encoding_planes(a->encoding) != a->in_planes || game_init(g, &p) != GAME_OK ||
	    game_width(g) != a->board_w || game_height(g) != a->board_h ||
	    game_num_actions(g) != a->policy_outputs ||
	    a->in_planes * a->board_w * a->board_h > GR_MAX_IN) {
		snprintf(err, errlen,
			 "gpu replay: the architecture (%s %dx%d, encoding %s, %d planes, %d actions) "
			 "does not describe a game this buffer knows",
			 game_kind_name(a->game), a->board_w, a->board_h,
			 nn_encoding_name(a->encoding), a->in_planes, a->policy_outputs);
		goto out;
	}
	/* The ownership target of a point is expanded beside the policy
	 * entry of the point's action: a game with the head has one for each. */
	if ((a->ownership || a->score) &&
	    (!game_desc_by_kind(a->game)->ownership || a->policy_outputs < a->board_w * a->board_h)) {
		snprintf(err, errlen, "gpu replay: %s has no territory: no ownership or score head",
			 game_kind_name(a->game));
		goto out;
	}
	L->params = p;
	L->enc = a->encoding;
	L->frame_w = a->board_w;
	L->frame_h = a->board_h;
	gr_dims *d = &L->d;
	d->hw = a->board_w * a->board_h;
	d->planes = a->in_planes;
	d->words = nn_pack_words(d->hw);
	d->c_pad = nn_pad8(d->planes);
	d->n_actions = a->policy_outputs;
	d->n_sym = game_num_symmetries(g);
	d->n_sizes = nn_arch_size_list(a, L->size, GR_MAX_SIZES);
	if (d->n_sizes == 0) {
		d->n_sizes = 1;
		L->size[0] = p.size;
	}
	d->plane_off = GR_HEADER_WORDS;
	d->count_off = d->plane_off + (int)nn_pack_stride(d->planes, d->hw);
	d->rec_words = d->count_off + (d->n_actions + 1) / 2;
	/* The heads' words go after the counts, so a record without them is
	 * the same as before they existed. */
	if (a->ownership) {
		d->own_off = d->rec_words;
		d->rec_words += 1 + (d->hw + GR_OWN_PER_WORD - 1) / GR_OWN_PER_WORD;
	}
	if (a->score)
		d->score_off = d->rec_words++;
	if (a->opp_policy) {
		d->opp_off = d->rec_words;
		d->rec_words += 1 + (d->n_actions + 1) / 2;
	}
	if (d->n_sizes > 1)
		d->size_off = d->rec_words++;
	size_t sets = (size_t)d->n_sizes * (size_t)d->n_sym;
	L->point_inv = malloc(sizeof(int16_t) * sets * (size_t)d->hw);
	L->action_inv = malloc(sizeof(int16_t) * sets * (size_t)d->n_actions);
	if (!L->point_inv || !L->action_inv) {
		snprintf(err, errlen, "gpu replay: out of memory");
		goto out;
	}
	for (int k = 0; k < d->n_sizes; k++) {
		game_params pk = p;
		pk.size = L->size[k];
		if (game_init(g, &pk) != GAME_OK || game_num_symmetries(g) != d->n_sym) {
			snprintf(err, errlen, "gpu replay: no %s board of size %d",
				 game_kind_name(a->game), L->size[k]);
			goto out;
		}
		for (int s = 0; s < d->n_sym; s++)
			layout_tables(L, g, k, s);
	}
	rc = 0;
out:
	free(g);
	if (rc != 0)
		gpu_replay_layout_free(L);
	return rc;
}

void gpu_replay_layout_free(gpu_replay_layout *L)
{
	if (!L)
		return;
	free(L->point_inv);
	free(L->action_inv);
	L->point_inv = NULL;
	L->action_inv = NULL;
}

size_t gpu_replay_record_bytes(const gpu_replay_layout *L)
{
	return sizeof(uint32_t) * (size_t)L->d.rec_words;
}

/* Whether the position before move i is one the window keeps: searched
 * fully and with some visits to make a policy target of. */
static bool position_kept(const game_record *r, int i)
{
	if (!r->full[i])
		return false;
	for (int32_t v = r->visit_start[i]; v < r->visit_start[i + 1]; v++)
		if (r->visits[v].count > 0)
			return true;
	return false;
}

int gpu_replay_game_positions(const game_record *r)
{
	int n = 0;
	for (int i = 0; i < r->n_moves; i++)
		n += position_kept(r, i);
	return n;
}

/* Dense uint16 counts of n (move, count) pairs into the zeroed words w
 * (a record's visit or reply counts), their total into *total. 0, or -1
 * with a message (a move outside the actions, more than 65535 visits to
 * one). */
static int pack_counts(const gr_dims *d, const int16_t *moves, const uint16_t *counts, int n,
		       uint32_t *w, uint32_t *total, char *err, size_t errlen)
{
	*total = 0;
	for (int i = 0; i < n; i++) {
		int a = moves[i];
		if (a < 0 || a >= d->n_actions) {
			snprintf(err, errlen, "gpu replay: visit to action %d of %d", a, d->n_actions);
			return -1;
		}
		/* Repeated moves add up, as train_batch_from_position's += does. */
		uint32_t c = gr_count_at(w, a) + counts[i];
		if (c > 0xffffu) {
			snprintf(err, errlen, "gpu replay: more than 65535 visits to action %d", a);
			return -1;
		}
		int sh = (a & 1) * 16;
		w[a >> 1] = (w[a >> 1] & ~(0xffffu << sh)) | c << sh;
		*total += counts[i];
	}
	return 0;
}

/* What L holds, for a refusal: "go 19x19", or with several sizes "go
 * 9x9, 13x13" (nn_arch_sizes_text's words for the net's boards). */
static const char *layout_text(const gpu_replay_layout *L, char *buf, size_t len)
{
	nn_arch a = { .board_w = L->frame_w, .board_h = L->frame_h };
	for (int k = 0; L->d.n_sizes > 1 && k < L->d.n_sizes; k++)
		a.sizes |= 1u << L->size[k];
	char boards[128];
	snprintf(buf, len, "%s %s", game_kind_name(L->params.kind),
		 nn_arch_sizes_text(&a, boards, sizeof(boards)));
	return buf;
}

/* The index of g's board size in L's list, or -1 (with a message) when g
 * is not a game of L's. */
static int size_index(const gpu_replay_layout *L, const game *g, char *err, size_t errlen)
{
	int w = game_width(g), h = game_height(g);
	if (g->params.kind == L->params.kind) {
		/* One size: the frame itself (Connect Four's is not square). */
		if (L->d.n_sizes == 1 && w == L->frame_w && h == L->frame_h)
			return 0;
		for (int k = 0; L->d.n_sizes > 1 && k < L->d.n_sizes; k++)
			if (w == L->size[k] && h == L->size[k])
				return k;
	}
	char held[160];
	snprintf(err, errlen, "gpu replay: a %s %dx%d position does not fit the buffer's %s",
		 game_kind_name(g->params.kind), w, h, layout_text(L, held, sizeof(held)));
	return -1;
}

/* n moves of g into frame actions of L (nn_frame_action), into out. 0, or
 * -1 with a message (a move outside g's actions). */
static int frame_moves(const gpu_replay_layout *L, const game *g, const int16_t *moves, int n,
		       int16_t *out, char *err, size_t errlen)
{
	int na = game_num_actions(g);
	for (int i = 0; i < n; i++) {
		if (moves[i] < 0 || moves[i] >= na) {
			snprintf(err, errlen, "gpu replay: visit to action %d of %d", moves[i], na);
			return -1;
		}
		out[i] = (int16_t)nn_frame_action(g, moves[i], L->frame_w, L->frame_h);
	}
	return 0;
}

/* Everything of a record but the heads' words: planes, counts, value, and
 * the size word of a layout of several sizes; framed (replay_elem.h). */
static int pack_body(const gpu_replay_layout *L, const game *g, const int16_t *moves,
		     const uint16_t *counts, int n_visits, float value, uint32_t *rec, char *err,
		     size_t errlen)
{
	const gr_dims *d = &L->d;
	int k = size_index(L, g, err, errlen);
	if (k < 0)
		return -1;
	float planes[GR_MAX_IN];
	if (nn_encode_frame(g, L->enc, 0, L->frame_w, L->frame_h, planes) != d->planes) {
		snprintf(err, errlen, "gpu replay: encoding %s does not fit the position",
			 nn_encoding_name(L->enc));
		return -1;
	}
	/* Every encoding's planes are one value or zero (stones, side to move,
	 * the constant komi and edge planes); a plane with two different
	 * non-zero values would need a float record. */
	if (!nn_pack_planes(1, d->planes, d->hw, planes, rec + d->plane_off)) {
		snprintf(err, errlen,
			 "gpu replay: encoding %s has a plane with two different non-zero values, "
			 "which a packed record cannot hold",
			 nn_encoding_name(L->enc));
		return -1;
	}
	memset(rec + d->count_off, 0, sizeof(uint32_t) * (size_t)(d->rec_words - d->count_off));
	int16_t framed[GAME_MAX_ACTIONS];
	if (n_visits > GAME_MAX_ACTIONS) {
		snprintf(err, errlen, "gpu replay: %d visit entries", n_visits);
		return -1;
	}
	uint32_t total = 0;
	if (frame_moves(L, g, moves, n_visits, framed, err, errlen) != 0 ||
	    pack_counts(d, framed, counts, n_visits, rec + d->count_off, &total, err, errlen) != 0)
		return -1;
	if (total == 0) {
		snprintf(err, errlen, "gpu replay: a position without visits has no policy target");
		return -1;
	}
	memcpy(&rec[GR_WORD_VALUE], &value, sizeof(value));
	rec[GR_WORD_TOTAL] = total;
	if (d->size_off)
		rec[d->size_off] = (uint32_t)k;
	return 0;
}

int gpu_replay_pack_position(const gpu_replay_layout *L, const game *g, const int16_t *moves,
			     const uint16_t *counts, int n_visits, float value, uint32_t *rec,
			     char *err, size_t errlen)
{
	/* No head targets until gpu_replay_pack_heads says otherwise. */
	if (pack_body(L, g, moves, counts, n_visits, value, rec, err, errlen) != 0)
		return -1;
	return gpu_replay_pack_heads(L, g, NULL, NAN, rec, err, errlen);
}

int gpu_replay_pack_heads(const gpu_replay_layout *L, const game *g, const float *owner,
			  double score, uint32_t *rec, char *err, size_t errlen)
{
	const gr_dims *d = &L->d;
	if (size_index(L, g, err, errlen) < 0)
		return -1;
	int np = game_width(g) * game_height(g);
	/* From the side to move's view, as train_batch_own_target and
	 * train_batch_score_target turn them. */
	bool black = game_to_move(g) == GAME_BLACK;
	if (d->own_off) {
		uint32_t *w = rec + d->own_off;
		memset(w, 0, sizeof(uint32_t) * (size_t)(1 + (d->hw + GR_OWN_PER_WORD - 1) /
							  GR_OWN_PER_WORD));
		if (owner) {
			float side = black ? 1.0f : -1.0f;
			/* Off a smaller board the codes stay 0 (+0), as the CPU
			 * target's row is zeroed there. */
			for (int p = 0; p < np; p++) {
				if (!(owner[p] > -2.0f && owner[p] < 2.0f)) {
					snprintf(err, errlen, "gpu replay: owner %g of point %d",
						 (double)owner[p], p);
					return -1;
				}
				/* The CPU window keeps owners as int8 (game_owner). */
				float v = side * (float)(int8_t)owner[p];
				uint32_t c = (signbit(v) ? 2u : 0u) | (v != 0 ? 1u : 0u);
				int q = nn_frame_action(g, p, L->frame_w, L->frame_h);
				w[1 + q / GR_OWN_PER_WORD] |= c << (q % GR_OWN_PER_WORD * 2);
			}
			w[0] = 1;
		}
	}
	if (d->score_off) {
		uint32_t u = GR_SCORE_NONE;
		if (!isnan(score)) {
			/* train_batch_score_target's rounding: in double, then
			 * to float; over the frame's points. */
			float f = (float)((black ? score : -score) / d->hw);
			if (!isnan(f))
				memcpy(&u, &f, sizeof(u));
		}
		rec[d->score_off] = u;
	}
	return 0;
}

int gpu_replay_pack_opp(const gpu_replay_layout *L, const game *g, const int16_t *moves,
			const uint16_t *counts, int n, uint32_t *rec, char *err, size_t errlen)
{
	const gr_dims *d = &L->d;
	if (!d->opp_off)
		return 0;
	if (size_index(L, g, err, errlen) < 0)
		return -1;
	if (n < 0 || n > GAME_MAX_ACTIONS) {
		snprintf(err, errlen, "gpu replay: %d reply entries", n);
		return -1;
	}
	uint32_t *w = rec + d->opp_off;
	memset(w, 0, sizeof(uint32_t) * (size_t)(1 + (d->n_actions + 1) / 2));
	/* A total of 0 (no reply, or counts all 0, which leave the words 0)
	 * is no target, as train_batch_opp_target's row of zeros. */
	uint32_t total = 0;
	int16_t framed[GAME_MAX_ACTIONS];
	if (frame_moves(L, g, moves, n, framed, err, errlen) != 0 ||
	    pack_counts(d, framed, counts, n, w + 1, &total, err, errlen) != 0)
		return -1;
	w[0] = total;
	return 0;
}

int gpu_replay_pack_game(const gpu_replay_layout *L, const game_record *r, int skip,
			 uint32_t *out, int max, char *err, size_t errlen)
{
	bool size_ok = !game_desc_from_params(&L->params)->has_size;
	for (int k = 0; k < L->d.n_sizes; k++)
		size_ok |= r->params.size == L->size[k];
	if (r->params.kind != L->params.kind || !size_ok) {
		char held[160];
		snprintf(err, errlen, "gpu replay: a %s %d record in a buffer for %s",
			 game_kind_name(r->params.kind), r->params.size, layout_text(L, held, sizeof(held)));
		return -1;
	}
	int written = -1, idx = 0, n = 0;
	int16_t moves[GAME_MAX_ACTIONS];
	uint16_t counts[GAME_MAX_ACTIONS];
	game *g = malloc(sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "gpu replay: out of memory");
		return -1;
	}
	/* The final position's owners, once per game: only a game played out
	 * (nobody resigned) has them, as the CPU window's game_owner says. */
	float own[GAME_MAX_ACTIONS];
	const float *owner = NULL;
	const game_desc *gd = game_desc_from_params(&r->params);
	if (L->d.own_off && gd->ownership && r->resigned < 0) {
		if (record_replay(r, -1, g) != 0) {
			snprintf(err, errlen, "gpu replay: a record that does not replay");
			goto out;
		}
		gd->ownership(g, own);
		owner = own;
	}
	/* A resigned game's score is no target (train/replay.c's NaN). */
	double score = r->resigned >= 0 ? NAN : r->score;
	if (game_init(g, &r->params) != GAME_OK) {
		snprintf(err, errlen, "gpu replay: a record with invalid game parameters");
		goto out;
	}
	/* One pass over the moves: each kept position is encoded from the
	 * game as it stands, then its move is played. */
	for (int i = 0; i < r->n_moves && n < max; i++) {
		if (position_kept(r, i) && idx++ >= skip) {
			float value;
			int nv = record_position_targets(r, i, game_to_move(g), moves, counts, &value);
			value = record_value_target(r, i, game_to_move(g), L->value_q_weight,
						    L->value_lambda, L->value_cut);
			uint32_t *rec = out + (size_t)n * L->d.rec_words;
			if (pack_body(L, g, moves, counts, nv, value, rec, err, errlen) != 0 ||
			    gpu_replay_pack_heads(L, g, owner, score, rec, err, errlen) != 0)
				goto out;
			if (L->d.opp_off) {
				nv = record_reply_targets(r, i, moves, counts);
				if (gpu_replay_pack_opp(L, g, moves, counts, nv, rec, err,
							errlen) != 0)
					goto out;
			}
			n++;
		}
		if (game_play(g, r->moves[i]) != GAME_OK) {
			snprintf(err, errlen, "gpu replay: move %d of a record is illegal", i + 1);
			goto out;
		}
	}
	written = n;
out:
	free(g);
	return written;
}

int gpu_replay_expand_host(const gpu_replay_layout *L, const uint32_t *records,
			   const int64_t *slots, const int *syms, int count, gpu_batch *out)
{
	const gr_dims *d = &L->d;
	if (count < 0 || count > out->cap || out->hw != d->hw || out->c_pad != d->c_pad ||
	    out->n_actions != d->n_actions || ((out->own || out->own_w) && !d->own_off) ||
	    ((out->score || out->score_w) && !d->score_off) || (out->opp && !d->opp_off))
		return -1;
	for (int i = 0; i < count; i++)
		if (syms[i] < 0 || syms[i] >= d->n_sym || slots[i] < 0)
			return -1;
	for (int i = 0; i < count; i++) {
		const uint32_t *rec = records + (size_t)slots[i] * d->rec_words;
		int set = gr_table(rec, d, syms[i]);
		if (set < 0 || set >= d->n_sizes * d->n_sym)
			return -1;
		const int16_t *pt = L->point_inv + (size_t)set * d->hw;
		const int16_t *at = L->action_inv + (size_t)set * d->n_actions;
		size_t base = (size_t)i * d->hw * d->c_pad;
		for (int q = 0; q < d->hw; q++)
			for (int c = 0; c < d->c_pad; c++) {
				float v = gr_plane_elem(rec, d, pt, q, c);
				size_t k = base + (size_t)q * d->c_pad + c;
				if (out->dtype == NN_DTYPE_FP16)
					((uint16_t *)out->planes)[k] = nn_half_from_float(v);
				else if (out->dtype == NN_DTYPE_BF16)
					((uint16_t *)out->planes)[k] = nn_bf16_from_float(v);
				else
					((float *)out->planes)[k] = v;
			}
		for (int b = 0; b < d->n_actions; b++)
			out->policy[(size_t)i * d->n_actions + b] = gr_policy_elem(rec, d, at, b);
		float z = gr_value(rec);
		out->value[i] = z;
		if (out->wdl)
			for (int k = 0; k < 3; k++)
				out->wdl[3 * (size_t)i + k] = gr_wdl_elem(z, k);
		if (out->own)
			for (int q = 0; q < d->hw; q++)
				out->own[(size_t)i * d->hw + q] = gr_own_elem(rec, d, at, q);
		if (out->own_w)
			out->own_w[i] = gr_own_weight(rec, d);
		if (out->score)
			out->score[i] = gr_score(rec, d);
		if (out->score_w)
			out->score_w[i] = gr_score_weight(rec, d);
		if (out->opp)
			for (int b = 0; b < d->n_actions; b++)
				out->opp[(size_t)i * d->n_actions + b] = gr_opp_elem(rec, d, at, b);
	}
	out->n = count;
	return 0;
}

int gpu_replay_add_game(gpu_replay *gr, const game_record *r, char *err, size_t errlen)
{
	return gpu_replay_add_games(gr, &r, 1, err, errlen);
}

int gpu_replay_add_records(gpu_replay *gr, const game_record *recs, int n, char *err,
			   size_t errlen)
{
	const game_record **p = malloc(sizeof(*p) * (size_t)(n > 0 ? n : 1));
	if (!p) {
		snprintf(err, errlen, "gpu replay: out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++)
		p[i] = &recs[i];
	int rc = gpu_replay_add_games(gr, p, n, err, errlen);
	free(p);
	return rc;
}

/* ---- the window ----------------------------------------------------------- */

#include <pthread.h>

#ifdef SENTE_HAVE_CUDA
#include "nn/cuda/cuda_common.h"
#include "train/cuda/replay_kernels.h"
#endif

#define GR_NO_CUDA "gpu replay: built without CUDA (make CUDA=1 needs nvcc)"

/* Staging per chunk: large copies, yet small next to the window. */
#define GR_STAGING_BYTES ((size_t)8 << 20)

struct gpu_replay {
	gpu_replay_layout L;  /* record shape and host symmetry tables */
	int device;           /* CUDA device, or GPU_REPLAY_HOST */
	int64_t window;       /* ring slots */
	uint32_t *records;    /* [window][rec_words]: device, or host memory */
	uint32_t *staging[2]; /* host chunks (pinned on a device), alternated */
	int next_staging;     /* which staging buffer the next chunk fills */
	int chunk;            /* positions per staging buffer (<= window) */
	/* One append at a time (it owns the staging buffers while packing,
	 * which happens outside `lock` so sampling is not held up). */
	pthread_mutex_t add_lock;
	/* Counters, events and stream order shared by appends and samples. */
	pthread_mutex_t lock;
	int64_t written;      /* positions uploaded: the j-th is in slot j % window */
	int64_t added;        /* positions ever added (also those a long append
			       * overwrote at once, which are never uploaded) */
	size_t device_bytes;  /* ring + tables + scratch on the device */
#ifdef SENTE_HAVE_CUDA
	int16_t *tables;      /* device point_inv then action_inv */
	int64_t *slots;       /* device [draw_cap]: last sample's slots */
	int *syms;            /* device [draw_cap]: last sample's symmetries */
	int draw_cap;         /* draws the scratch holds */
	int last_n;           /* draws of the last sample (0: none yet) */
	cudaStream_t copy;    /* the buffer's own stream for uploads */
	/* after the latest chunk's upload: samples wait on it (visibility) */
	cudaEvent_t copied;
	/* after the latest sample's expansion: uploads wait on it (they may
	 * overwrite slots it reads) */
	cudaEvent_t expanded;
	cudaEvent_t staged[2]; /* after staging[i]'s upload: it may be refilled */
#endif
};

#ifdef SENTE_HAVE_CUDA
/* The device half of gpu_replay_new. */
static int device_init(gpu_replay *gr, char *err, size_t errlen)
{
	int rc = 0, n_dev = 0;
	const gr_dims *d = &gr->L.d;
	size_t rec_bytes = gpu_replay_record_bytes(&gr->L);
	size_t ring = rec_bytes * (size_t)gr->window;
	size_t sets = (size_t)d->n_sizes * (size_t)d->n_sym;
	size_t pt = sizeof(int16_t) * sets * d->hw;
	size_t at = sizeof(int16_t) * sets * d->n_actions;
	if (cudaGetDeviceCount(&n_dev) != cudaSuccess || gr->device >= n_dev) {
		cudaGetLastError(); /* clear the sticky "no driver" error */
		snprintf(err, errlen, "gpu replay: no CUDA device %d (%d found)", gr->device, n_dev);
		return -1;
	}
	CUDA_CHECK(cudaSetDevice(gr->device));
	CUDA_CHECK(cudaMalloc((void **)&gr->records, ring));
	CUDA_CHECK(cudaMalloc((void **)&gr->tables, pt + at));
	CUDA_CHECK(cudaMemcpy(gr->tables, gr->L.point_inv, pt, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy((char *)gr->tables + pt, gr->L.action_inv, at,
			      cudaMemcpyHostToDevice));
	/* Those copies went to the default stream, which the non-blocking
	 * streams below (and the caller's) are not ordered after: waited for
	 * here, once, before any kernel reads the tables. */
	CUDA_CHECK(cudaStreamSynchronize(0));
	/* Non-blocking: uploads must not serialise with work on the legacy
	 * default stream; every ordering is made explicit with events. */
	CUDA_CHECK(cudaStreamCreateWithFlags(&gr->copy, cudaStreamNonBlocking));
	CUDA_CHECK(cudaEventCreateWithFlags(&gr->copied, cudaEventDisableTiming));
	CUDA_CHECK(cudaEventCreateWithFlags(&gr->expanded, cudaEventDisableTiming));
	for (int i = 0; i < 2; i++) {
		CUDA_CHECK(cudaEventCreateWithFlags(&gr->staged[i], cudaEventDisableTiming));
		CUDA_CHECK(cudaHostAlloc((void **)&gr->staging[i], rec_bytes * (size_t)gr->chunk,
					 cudaHostAllocDefault));
	}
	gr->device_bytes = ring + pt + at;
out:
	return rc;
}
#endif

void gpu_replay_set_value_target(gpu_replay *gr, float l, float lambda, bool cut)
{
	pthread_mutex_lock(&gr->add_lock);
	gr->L.value_q_weight = l;
	gr->L.value_lambda = lambda;
	gr->L.value_cut = cut;
	pthread_mutex_unlock(&gr->add_lock);
}

gpu_replay *gpu_replay_new(const nn_arch *a, int64_t window, int device, char *err,
			   size_t errlen)
{
	int rc = 0;
	if (window < 1) {
		snprintf(err, errlen, "gpu replay: the window must hold at least one position");
		return NULL;
	}
#ifndef SENTE_HAVE_CUDA
	if (device >= 0) {
		snprintf(err, errlen, GR_NO_CUDA);
		return NULL;
	}
#endif
	gpu_replay *gr = calloc(1, sizeof(*gr));
	if (!gr) {
		snprintf(err, errlen, "gpu replay: out of memory");
		return NULL;
	}
	pthread_mutex_init(&gr->add_lock, NULL);
	pthread_mutex_init(&gr->lock, NULL);
	gr->device = device < 0 ? GPU_REPLAY_HOST : device;
	gr->window = window;
	if (gpu_replay_layout_init(&gr->L, a, err, errlen) != 0) {
		rc = -1;
		goto out;
	}
	size_t rec_bytes = gpu_replay_record_bytes(&gr->L);
	int64_t chunk = (int64_t)(GR_STAGING_BYTES / rec_bytes);
	gr->chunk = (int)(chunk < window ? chunk : window);
	if (gr->device >= 0) {
#ifdef SENTE_HAVE_CUDA
		rc = device_init(gr, err, errlen);
#endif
	} else {
		gr->records = malloc(rec_bytes * (size_t)window);
		gr->staging[0] = malloc(rec_bytes * (size_t)gr->chunk);
		gr->staging[1] = malloc(rec_bytes * (size_t)gr->chunk);
		if (!gr->records || !gr->staging[0] || !gr->staging[1]) {
			snprintf(err, errlen, "gpu replay: out of memory for a window of %lld",
				 (long long)window);
			rc = -1;
		}
	}
out:
	if (rc != 0) {
		gpu_replay_free(gr);
		return NULL;
	}
	return gr;
}

void gpu_replay_free(gpu_replay *gr)
{
	if (!gr)
		return;
	if (gr->device < 0) {
		free(gr->records);
		free(gr->staging[0]);
		free(gr->staging[1]);
	}
#ifdef SENTE_HAVE_CUDA
	if (gr->device >= 0) {
		cudaSetDevice(gr->device);
		if (gr->copy)
			cudaStreamSynchronize(gr->copy);
		cudaFree(gr->records);
		cudaFree(gr->tables);
		cudaFree(gr->slots);
		cudaFree(gr->syms);
		for (int i = 0; i < 2; i++) {
			cudaFreeHost(gr->staging[i]);
			if (gr->staged[i])
				cudaEventDestroy(gr->staged[i]);
		}
		if (gr->copied)
			cudaEventDestroy(gr->copied);
		if (gr->expanded)
			cudaEventDestroy(gr->expanded);
		if (gr->copy)
			cudaStreamDestroy(gr->copy);
	}
#endif
	gpu_replay_layout_free(&gr->L);
	pthread_mutex_destroy(&gr->add_lock);
	pthread_mutex_destroy(&gr->lock);
	free(gr);
}

/* Waits until staging[b]'s last upload is done, so it may be refilled. */
static int staging_wait(gpu_replay *gr, int b, char *err, size_t errlen)
{
#ifdef SENTE_HAVE_CUDA
	int rc = 0;
	if (gr->device >= 0) {
		CUDA_CHECK(cudaSetDevice(gr->device));
		CUDA_CHECK(cudaEventSynchronize(gr->staged[b]));
	}
out:
	return rc;
#else
	return 0; /* a host ring's copies are done when ring_put returns */
#endif
}

/* Copies n records from src to ring slot `slot` on: on a device, on the
 * copy stream. */
static int ring_put(gpu_replay *gr, int64_t slot, const uint32_t *src, int64_t n, char *err,
		    size_t errlen)
{
	size_t rb = gpu_replay_record_bytes(&gr->L);
	char *dst = (char *)gr->records + (size_t)slot * rb;
	if (gr->device < 0) {
		memcpy(dst, src, (size_t)n * rb);
		return 0;
	}
#ifdef SENTE_HAVE_CUDA
	int rc = 0;
	CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * rb, cudaMemcpyHostToDevice, gr->copy));
out:
	return rc;
#else
	return -1; /* unreachable: gpu_replay_new refuses devices */
#endif
}

/* Uploads `fill` packed records of staging[b] as the next positions of
 * the ring, after the last expansion enqueued so far. Takes `lock`. */
static int flush_chunk(gpu_replay *gr, int b, int fill, int64_t added_after, char *err,
		       size_t errlen)
{
	int rc = 0;
	size_t rw = (size_t)gr->L.d.rec_words;
	pthread_mutex_lock(&gr->lock);
	int64_t slot = gr->written % gr->window;
	int64_t first = fill < gr->window - slot ? fill : gr->window - slot;
#ifdef SENTE_HAVE_CUDA
	if (gr->device >= 0)
		CUDA_CHECK(cudaStreamWaitEvent(gr->copy, gr->expanded, 0));
#endif
	if (ring_put(gr, slot, gr->staging[b], first, err, errlen) != 0) {
		rc = -1;
		goto out;
	}
	/* A chunk that passes the ring's end goes on at slot 0. */
	if (fill > first && ring_put(gr, 0, gr->staging[b] + (size_t)first * rw, fill - first, err,
				     errlen) != 0) {
		rc = -1;
		goto out;
	}
#ifdef SENTE_HAVE_CUDA
	if (gr->device >= 0) {
		CUDA_CHECK(cudaEventRecord(gr->staged[b], gr->copy));
		CUDA_CHECK(cudaEventRecord(gr->copied, gr->copy));
	}
#endif
	gr->written += fill;
	gr->added = added_after;
out:
	pthread_mutex_unlock(&gr->lock);
	return rc;
}

int gpu_replay_add_games(gpu_replay *gr, const game_record *const *games, int n, char *err,
			 size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&gr->add_lock);
	int rw = gr->L.d.rec_words;
	int64_t total = 0;
	for (int i = 0; i < n; i++)
		total += gpu_replay_game_positions(games[i]);
	/* Positions the same call would overwrite again are not uploaded. */
	int64_t skip = total > gr->window ? total - gr->window : 0, idx = 0;
	/* `added` counts every position, uploaded or not. */
	pthread_mutex_lock(&gr->lock);
	int64_t added0 = gr->added;
	pthread_mutex_unlock(&gr->lock);
	int b = gr->next_staging, fill = 0;
	if (staging_wait(gr, b, err, errlen) != 0) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		int np = gpu_replay_game_positions(games[i]);
		int done = idx + np <= skip ? np : idx >= skip ? 0 : (int)(skip - idx);
		while (done < np) {
			int k = np - done < gr->chunk - fill ? np - done : gr->chunk - fill;
			int got = gpu_replay_pack_game(&gr->L, games[i], done,
						       gr->staging[b] + (size_t)fill * rw, k, err,
						       errlen);
			if (got != k) {
				if (got >= 0)
					snprintf(err, errlen,
						 "gpu replay: a record gave %d positions, not %d",
						 done + got, np);
				rc = -1;
				goto out;
			}
			fill += k;
			done += k;
			if (fill == gr->chunk) {
				if (flush_chunk(gr, b, fill, added0 + idx + done, err, errlen) != 0 ||
				    staging_wait(gr, 1 - b, err, errlen) != 0) {
					rc = -1;
					goto out;
				}
				b = 1 - b;
				fill = 0;
			}
		}
		idx += np;
	}
	if (fill > 0) {
		if (flush_chunk(gr, b, fill, added0 + idx, err, errlen) != 0) {
			rc = -1;
			goto out;
		}
		b = 1 - b;
	} else { /* all flushed or skipped: still count what was added */
		pthread_mutex_lock(&gr->lock);
		gr->added = added0 + idx;
		pthread_mutex_unlock(&gr->lock);
	}
out:
	/* On failure what was packed of the failing game is dropped with the
	 * unflushed chunk; the games before it stay. */
	gr->next_staging = b;
	pthread_mutex_unlock(&gr->add_lock);
	return rc;
}

int gpu_replay_set_chunk(gpu_replay *gr, int positions)
{
	pthread_mutex_lock(&gr->add_lock);
	size_t made = GR_STAGING_BYTES / gpu_replay_record_bytes(&gr->L);
	int64_t cap = (int64_t)made < gr->window ? (int64_t)made : gr->window;
	int rc = positions >= 1 && positions <= cap ? 0 : -1;
	if (rc == 0)
		gr->chunk = positions;
	pthread_mutex_unlock(&gr->add_lock);
	return rc;
}

int64_t gpu_replay_positions(gpu_replay *gr)
{
	pthread_mutex_lock(&gr->lock);
	int64_t n = gr->written < gr->window ? gr->written : gr->window;
	pthread_mutex_unlock(&gr->lock);
	return n;
}

int64_t gpu_replay_added(gpu_replay *gr)
{
	pthread_mutex_lock(&gr->lock);
	int64_t n = gr->added;
	pthread_mutex_unlock(&gr->lock);
	return n;
}

int64_t gpu_replay_window(const gpu_replay *gr) { return gr->window; }

size_t gpu_replay_device_bytes(gpu_replay *gr)
{
	pthread_mutex_lock(&gr->lock);
	size_t n = gr->device_bytes;
	pthread_mutex_unlock(&gr->lock);
	return n;
}

const gpu_replay_layout *gpu_replay_get_layout(const gpu_replay *gr) { return &gr->L; }

int gpu_replay_download(gpu_replay *gr, int64_t first, int64_t count, uint32_t *out, char *err,
			size_t errlen)
{
	int rc = 0;
	size_t rb = gpu_replay_record_bytes(&gr->L);
	pthread_mutex_lock(&gr->lock);
	if (first < 0 || count < 0 || first + count > gr->window) {
		snprintf(err, errlen, "gpu replay: slots %lld + %lld of %lld", (long long)first,
			 (long long)count, (long long)gr->window);
		rc = -1;
		goto out;
	}
	if (gr->device < 0) {
		memcpy(out, (char *)gr->records + (size_t)first * rb, (size_t)count * rb);
	} else {
#ifdef SENTE_HAVE_CUDA
		CUDA_CHECK(cudaSetDevice(gr->device));
		CUDA_CHECK(cudaStreamSynchronize(gr->copy));
		CUDA_CHECK(cudaMemcpy(out, (char *)gr->records + (size_t)first * rb,
				      (size_t)count * rb, cudaMemcpyDeviceToHost));
#endif
	}
out:
	pthread_mutex_unlock(&gr->lock);
	return rc;
}

#ifdef SENTE_HAVE_CUDA

int gpu_replay_sample(gpu_replay *gr, uint64_t seed, uint64_t counter, int n, int first,
		      int count, gpu_batch *out, void *stream, char *err, size_t errlen)
{
	int rc = 0;
	const gr_dims *d = &gr->L.d;
	cudaStream_t st = (cudaStream_t)stream;
	pthread_mutex_lock(&gr->lock);
	int64_t held = gr->written < gr->window ? gr->written : gr->window;
	if (gr->device < 0) {
		snprintf(err, errlen, "gpu replay: a window in host memory does not sample");
		rc = -1;
		goto out;
	}
	if (held == 0) {
		snprintf(err, errlen, "gpu replay: sampling from an empty window");
		rc = -1;
		goto out;
	}
	if (n < 1 || first < 0 || count < 0 || first + count > n) {
		snprintf(err, errlen, "gpu replay: share %d + %d of a batch of %d", first, count, n);
		rc = -1;
		goto out;
	}
	if (count > 0 && (!out || count > out->cap || out->hw != d->hw || out->c_pad != d->c_pad ||
			  out->n_actions != d->n_actions || !out->planes || !out->policy ||
			  !out->value)) {
		snprintf(err, errlen, "gpu replay: a batch of %d positions does not fit the output",
			 count);
		rc = -1;
		goto out;
	}
	/* The head targets go exactly where the architecture has the heads:
	 * a missing array would lose them, an extra one keep stale values. */
	if (count > 0 && (!out->own != !d->own_off || !out->own_w != !d->own_off ||
			  !out->score != !d->score_off || !out->score_w != !d->score_off ||
			  !out->opp != !d->opp_off)) {
		snprintf(err, errlen,
			 "gpu replay: the output's ownership, score and opponent-reply targets "
			 "(%s, %s, %s) do not match the window's heads (%s, %s, %s)",
			 out->own && out->own_w ? "own" : "no own",
			 out->score && out->score_w ? "score" : "no score",
			 out->opp ? "opp" : "no opp", d->own_off ? "own" : "no own",
			 d->score_off ? "score" : "no score", d->opp_off ? "opp" : "no opp");
		rc = -1;
		goto out;
	}
	CUDA_CHECK(cudaSetDevice(gr->device));
	if (n > gr->draw_cap) {
		/* Grows once to the largest batch; the old scratch may still
		 * be read by an expansion in flight. */
		CUDA_CHECK(cudaDeviceSynchronize());
		cudaFree(gr->slots);
		cudaFree(gr->syms);
		gr->slots = NULL;
		gr->syms = NULL;
		gr->device_bytes -= (sizeof(int64_t) + sizeof(int)) * (size_t)gr->draw_cap;
		gr->draw_cap = 0;
		CUDA_CHECK(cudaMalloc((void **)&gr->slots, sizeof(int64_t) * (size_t)n));
		CUDA_CHECK(cudaMalloc((void **)&gr->syms, sizeof(int) * (size_t)n));
		gr->draw_cap = n;
		gr->device_bytes += (sizeof(int64_t) + sizeof(int)) * (size_t)n;
	}
	/* Every upload issued before this call completes first. */
	CUDA_CHECK(cudaStreamWaitEvent(st, gr->copied, 0));
	CUDA_CHECK(grk_draw(seed, counter, n, held, d->n_sym, gr->slots, gr->syms, st));
	if (count > 0)
		CUDA_CHECK(grk_expand(*d, gr->records, gr->tables, gr->slots, gr->syms, first, count,
				      out, st));
	/* Later uploads wait for this expansion (and these draws). */
	CUDA_CHECK(cudaEventRecord(gr->expanded, st));
	gr->last_n = n;
	if (out)
		out->n = count;
out:
	pthread_mutex_unlock(&gr->lock);
	return rc;
}

int gpu_replay_last_draws(gpu_replay *gr, int n, int64_t *slots, int *syms, char *err,
			  size_t errlen)
{
	int rc = 0;
	pthread_mutex_lock(&gr->lock);
	if (gr->device < 0 || n < 0 || n > gr->last_n) {
		snprintf(err, errlen, "gpu replay: %d draws asked, the last sample made %d", n,
			 gr->last_n);
		rc = -1;
		goto out;
	}
	CUDA_CHECK(cudaSetDevice(gr->device));
	CUDA_CHECK(cudaEventSynchronize(gr->expanded));
	if (slots)
		CUDA_CHECK(cudaMemcpy(slots, gr->slots, sizeof(int64_t) * (size_t)n,
				      cudaMemcpyDeviceToHost));
	if (syms)
		CUDA_CHECK(cudaMemcpy(syms, gr->syms, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost));
out:
	pthread_mutex_unlock(&gr->lock);
	return rc;
}

int gpu_batch_alloc(gpu_batch *b, int cap, const nn_arch *a, nn_dtype dtype, int wdl, char *err,
		    size_t errlen)
{
	int rc = 0;
	memset(b, 0, sizeof(*b));
	if (cap < 1) {
		snprintf(err, errlen, "gpu batch: capacity %d", cap);
		return -1;
	}
	b->cap = cap;
	b->n = 0;
	b->hw = a->board_w * a->board_h;
	b->c_pad = nn_pad8(a->in_planes);
	b->n_actions = a->policy_outputs;
	b->dtype = dtype;
	size_t np = (size_t)cap * b->hw * b->c_pad * nn_dtype_size(dtype);
	CUDA_CHECK(cudaMalloc(&b->planes, np));
	CUDA_CHECK(cudaMalloc((void **)&b->policy, sizeof(float) * (size_t)cap * b->n_actions));
	CUDA_CHECK(cudaMalloc((void **)&b->value, sizeof(float) * (size_t)cap));
	if (wdl)
		CUDA_CHECK(cudaMalloc((void **)&b->wdl, sizeof(float) * 3 * (size_t)cap));
	size_t no = sizeof(float) * (size_t)cap * b->hw;
	if (a->ownership) {
		CUDA_CHECK(cudaMalloc((void **)&b->own, no));
		CUDA_CHECK(cudaMalloc((void **)&b->own_w, sizeof(float) * (size_t)cap));
	}
	if (a->score) {
		CUDA_CHECK(cudaMalloc((void **)&b->score, sizeof(float) * (size_t)cap));
		CUDA_CHECK(cudaMalloc((void **)&b->score_w, sizeof(float) * (size_t)cap));
	}
	size_t nq = sizeof(float) * (size_t)cap * b->n_actions;
	if (a->opp_policy)
		CUDA_CHECK(cudaMalloc((void **)&b->opp, nq));
	/* Zeroed so that a batch read before it is filled is harmless (the
	 * heads' weights 0: no targets); waited for, since the streams that
	 * use the batch may not order themselves after the default stream
	 * (non-blocking ones). */
	CUDA_CHECK(cudaMemset(b->planes, 0, np));
	if (a->ownership) {
		CUDA_CHECK(cudaMemset(b->own, 0, no));
		CUDA_CHECK(cudaMemset(b->own_w, 0, sizeof(float) * (size_t)cap));
	}
	if (a->score) {
		CUDA_CHECK(cudaMemset(b->score, 0, sizeof(float) * (size_t)cap));
		CUDA_CHECK(cudaMemset(b->score_w, 0, sizeof(float) * (size_t)cap));
	}
	if (a->opp_policy)
		CUDA_CHECK(cudaMemset(b->opp, 0, nq));
	CUDA_CHECK(cudaDeviceSynchronize());
out:
	if (rc != 0)
		gpu_batch_free(b);
	return rc;
}

void gpu_batch_free(gpu_batch *b)
{
	if (!b)
		return;
	cudaFree(b->planes);
	cudaFree(b->policy);
	cudaFree(b->value);
	cudaFree(b->wdl);
	cudaFree(b->own);
	cudaFree(b->own_w);
	cudaFree(b->score);
	cudaFree(b->score_w);
	cudaFree(b->opp);
	memset(b, 0, sizeof(*b));
}

int gpu_batch_download(const gpu_batch *b, void *planes, float *policy, float *value, float *wdl,
		       char *err, size_t errlen)
{
	int rc = 0;
	size_t n = (size_t)b->n;
	/* The batch was filled on some stream the caller owns. */
	CUDA_CHECK(cudaDeviceSynchronize());
	if (planes)
		CUDA_CHECK(cudaMemcpy(planes, b->planes,
				      n * b->hw * b->c_pad * nn_dtype_size(b->dtype),
				      cudaMemcpyDeviceToHost));
	if (policy)
		CUDA_CHECK(cudaMemcpy(policy, b->policy, sizeof(float) * n * b->n_actions,
				      cudaMemcpyDeviceToHost));
	if (value)
		CUDA_CHECK(cudaMemcpy(value, b->value, sizeof(float) * n, cudaMemcpyDeviceToHost));
	if (wdl && b->wdl)
		CUDA_CHECK(cudaMemcpy(wdl, b->wdl, sizeof(float) * 3 * n, cudaMemcpyDeviceToHost));
out:
	return rc;
}

int gpu_batch_download_heads(const gpu_batch *b, float *own, float *own_w, float *score,
			     float *score_w, float *opp, char *err, size_t errlen)
{
	int rc = 0;
	size_t n = (size_t)b->n;
	CUDA_CHECK(cudaDeviceSynchronize());
	if (own && b->own)
		CUDA_CHECK(cudaMemcpy(own, b->own, sizeof(float) * n * b->hw, cudaMemcpyDeviceToHost));
	if (own_w && b->own_w)
		CUDA_CHECK(cudaMemcpy(own_w, b->own_w, sizeof(float) * n, cudaMemcpyDeviceToHost));
	if (score && b->score)
		CUDA_CHECK(cudaMemcpy(score, b->score, sizeof(float) * n, cudaMemcpyDeviceToHost));
	if (score_w && b->score_w)
		CUDA_CHECK(cudaMemcpy(score_w, b->score_w, sizeof(float) * n,
				      cudaMemcpyDeviceToHost));
	if (opp && b->opp)
		CUDA_CHECK(cudaMemcpy(opp, b->opp, sizeof(float) * n * b->n_actions,
				      cudaMemcpyDeviceToHost));
out:
	return rc;
}

#else /* !SENTE_HAVE_CUDA: no sampler, no device batches */

int gpu_replay_sample(gpu_replay *gr, uint64_t seed, uint64_t counter, int n, int first,
		      int count, gpu_batch *out, void *stream, char *err, size_t errlen)
{
	snprintf(err, errlen, GR_NO_CUDA);
	return -1;
}

int gpu_replay_last_draws(gpu_replay *gr, int n, int64_t *slots, int *syms, char *err,
			  size_t errlen)
{
	snprintf(err, errlen, GR_NO_CUDA);
	return -1;
}

int gpu_batch_alloc(gpu_batch *b, int cap, const nn_arch *a, nn_dtype dtype, int wdl, char *err,
		    size_t errlen)
{
	memset(b, 0, sizeof(*b));
	snprintf(err, errlen, GR_NO_CUDA);
	return -1;
}

void gpu_batch_free(gpu_batch *b)
{
	if (b)
		memset(b, 0, sizeof(*b));
}

int gpu_batch_download(const gpu_batch *b, void *planes, float *policy, float *value, float *wdl,
		       char *err, size_t errlen)
{
	snprintf(err, errlen, GR_NO_CUDA);
	return -1;
}

int gpu_batch_download_heads(const gpu_batch *b, float *own, float *own_w, float *score,
			     float *score_w, float *opp, char *err, size_t errlen)
{
	snprintf(err, errlen, GR_NO_CUDA);
	return -1;
}

#endif
