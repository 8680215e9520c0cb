/* encode.c: input planes; the layouts are documented in encode.h. */
#include "nn/encode.h"

#include <assert.h>
#include <string.h>

#include "engine/game_desc.h"
#include "engine/rng.h"

static const struct {
	const char *name; /* as written in files and on the command line */
	int planes;       /* plane count */
	game_kind game;   /* the game it encodes */
} encodings[NN_ENC_COUNT] = {
	[NN_ENC_LZ18] = { "lz18", 18, GAME_KIND_GO },
	[NN_ENC_GO_NATIVE] = { "go_native", 27, GAME_KIND_GO },
	[NN_ENC_C4] = { "c4", 3, GAME_KIND_CONNECT4 },
};

int nn_encoding_planes(nn_encoding enc)
{
	return (unsigned)enc < NN_ENC_COUNT ? encodings[enc].planes : 0;
}

const char *nn_encoding_name(nn_encoding enc)
{
	return (unsigned)enc < NN_ENC_COUNT ? encodings[enc].name : "?";
}

bool nn_encoding_from_name(const char *name, nn_encoding *out)
{
	for (int i = 0; i < NN_ENC_COUNT; i++)
		if (strcmp(name, encodings[i].name) == 0) {
			*out = (nn_encoding)i;
			return true;
		}
	return false;
}

game_kind nn_encoding_game(nn_encoding enc)
{
	assert((unsigned)enc < NN_ENC_COUNT);
	return encodings[enc].game;
}

/* A name from a descriptor: a table of the build, so unknown is a bug. */
static nn_encoding encoding_named(const char *name)
{
	nn_encoding enc = NN_ENC_COUNT;
	bool found = nn_encoding_from_name(name, &enc);
	assert(found);
	(void)found;
	return enc;
}

nn_encoding nn_encoding_for_game(const game_params *p)
{
	return encoding_named(game_desc_from_params(p)->encoding);
}

nn_encoding nn_encoding_for_new_net(const game_params *p)
{
	return encoding_named(game_desc_from_params(p)->net_encoding);
}

uint64_t nn_encode_key(const game *g, nn_encoding enc)
{
	uint64_t k = rng_mix(game_hash(g) ^ (uint64_t)enc << 56);
	if (g->params.kind != GAME_KIND_GO)
		return k;
	/* Go encodings see the last 8 positions: fold in their hashes. */
	const go_board *b = &g->u.go;
	for (int i = 1; i < GO_PAST_POSITIONS && b->n_history - i >= 0; i++)
		k = rng_mix(k ^ b->past_hash[b->n_history - i]);
	if (enc == NN_ENC_GO_NATIVE)
		k = rng_mix(k ^ (uint64_t)(int64_t)(b->komi * 2));
	return k;
}

/* Where point (x, y) goes under symmetry sym, as a plane index. Connect
 * Four's symmetry is defined on columns (its moves), so rows stay. */
static int encode_sym_point(const game *g, int sym, int w, int x, int y)
{
	if (g->params.kind == GAME_KIND_CONNECT4)
		return y * w + game_symmetry_move(g, sym, x);
	return game_symmetry_move(g, sym, y * w + x);
}

int nn_encode_sym_point(const game *g, int sym, int q)
{
	int w = game_width(g);
	return encode_sym_point(g, sym, w, q % w, q / w);
}

static void encode_go(const game *g, nn_encoding enc, int sym, float *planes)
{
	const go_board *b = &g->u.go;
	int n = b->size, area = n * n;
	int me = go_to_move(b), opp = 1 - me;
	/* Where each point goes, then the history planes a board at a time,
	 * every point of both planes written (the encoding runs once per
	 * leaf of every search: no clearing pass, no branch per point). */
	const int16_t *to = game_symmetry_table(g, sym);
	/* A point's two plane values by its colour + 1 (GO_EMPTY is -1): a
	 * table load each, no compare and conversion per point. */
	float mine_of[3] = { 0, 0, 0 }, theirs_of[3] = { 0, 0, 0 };
	mine_of[me + 1] = 1.0f;
	theirs_of[opp + 1] = 1.0f;
	int k = 0;
	for (; k < GO_PAST_POSITIONS; k++) {
		const int8_t *restrict past = go_past_board(b, k);
		if (!past)
			break;
		float *restrict mine = planes + k * area, *restrict theirs = planes + (8 + k) * area;
		for (int i = 0; i < area; i++) {
			int c = past[i] + 1, t = to[i];
			mine[t] = mine_of[c];
			theirs[t] = theirs_of[c];
		}
	}
	/* Before the first position: empty boards. */
	if (k < GO_PAST_POSITIONS) {
		size_t rest = sizeof(float) * (size_t)(GO_PAST_POSITIONS - k) * (size_t)area;
		memset(planes + k * area, 0, rest);
		memset(planes + (8 + k) * area, 0, rest);
	}
	if (enc == NN_ENC_LZ18) {
		float *p = planes + 16 * area;
		float black = me == GO_BLACK ? 1.0f : 0.0f;
		for (int i = 0; i < area; i++) {
			p[i] = black;
			p[area + i] = 1.0f - black;
		}
		return;
	}
	/* Liberties of the stones now (the first past board is the board):
	 * a lookup for each stone, none for the empty points. */
	memset(planes + 16 * area, 0, sizeof(float) * 8 * (size_t)area);
	const int8_t *now = go_past_board(b, 0);
	assert(now);
	for (int y = 0; y < n; y++)
		for (int x = 0, i = y * n; x < n; x++, i++) {
			int c = now[i];
			if (c == GO_EMPTY)
				continue;
			int libs = go_liberties_at(b, x, y);
			int l = libs >= 4 ? 3 : libs - 1;
			assert(l >= 0);
			planes[((c == me ? 16 : 20) + l) * area + to[i]] = 1.0f;
		}
	float komi = (float)(b->komi / 15.0) * (me == GO_BLACK ? -1.0f : 1.0f);
	float black = me == GO_BLACK ? 1.0f : 0.0f;
	for (int i = 0; i < area; i++) {
		planes[24 * area + i] = komi;
		planes[25 * area + i] = black;
		planes[26 * area + i] = 1.0f;
	}
}

static void encode_c4(const game *g, int sym, float *planes)
{
	const int area = C4_CELLS;
	int me = game_to_move(g);
	memset(planes, 0, sizeof(float) * 3 * area);
	for (int y = 0; y < C4_HEIGHT; y++)
		for (int x = 0; x < C4_WIDTH; x++) {
			int c = c4_cell(&g->u.c4, x, y);
			if (c < 0)
				continue;
			planes[(c == me ? 0 : 1) * area + encode_sym_point(g, sym, C4_WIDTH, x, y)] = 1.0f;
		}
	if (me == GAME_BLACK)
		for (int i = 0; i < area; i++)
			planes[2 * area + i] = 1.0f;
}

int nn_encode_sym(const game *g, nn_encoding enc, int sym, float *planes)
{
	if ((unsigned)enc >= NN_ENC_COUNT || encodings[enc].game != g->params.kind)
		return -1;
	assert(sym >= 0 && sym < game_num_symmetries(g));
	if (g->params.kind == GAME_KIND_GO)
		encode_go(g, enc, sym, planes);
	else
		encode_c4(g, sym, planes);
	return encodings[enc].planes;
}

int nn_encode(const game *g, nn_encoding enc, float *planes)
{
	return nn_encode_sym(g, enc, 0, planes);
}

int nn_encode_frame(const game *g, nn_encoding enc, int sym, int fw, int fh, float *planes)
{
	int w = game_width(g), h = game_height(g);
	if (w == fw && h == fh)
		return nn_encode_sym(g, enc, sym, planes);
	if (w > fw || h > fh || (unsigned)enc >= NN_ENC_COUNT)
		return -1;
	/* The board's planes first, at the end of the frame's room (the frame
	 * is larger, so the two never overlap while rows move down front to
	 * back), then each row to its place in the frame. */
	int np = encodings[enc].planes;
	size_t board = (size_t)np * w * h, frame = (size_t)np * fw * fh;
	float *tmp = planes + frame - board;
	if (nn_encode_sym(g, enc, sym, tmp) < 0)
		return -1;
	for (int p = 0; p < np; p++)
		for (int y = 0; y < h; y++) {
			float *dst = planes + ((size_t)p * fh + y) * fw;
			const float *src = tmp + ((size_t)p * h + y) * w;
			memmove(dst, src, sizeof(float) * (size_t)w);
		}
	/* What lies outside the board: zero it, after the rows moved. */
	for (int p = 0; p < np; p++)
		for (int y = 0; y < fh; y++) {
			float *row = planes + ((size_t)p * fh + y) * fw;
			if (y < h)
				memset(row + w, 0, sizeof(float) * (size_t)(fw - w));
			else
				memset(row, 0, sizeof(float) * (size_t)fw);
		}
	return np;
}

int nn_frame_action(const game *g, int a, int fw, int fh)
{
	int w = game_width(g), h = game_height(g);
	if (w == fw && h == fh)
		return a;
	if (a == game_pass_move(g))
		return fw * fh;
	return a / w * fw + a % w;
}

void nn_board_planes(nn_encoding enc, int *on, int *also)
{
	*on = *also = -1;
	if (enc == NN_ENC_GO_NATIVE)
		*on = 26;
	else if (enc == NN_ENC_LZ18) {
		*on = 16;
		*also = 17;
	}
}

int nn_board_pool_weights(nn_encoding enc, const float *planes, int hw, float *w)
{
	int pon, palso;
	nn_board_planes(enc, &pon, &palso);
	const float *on = pon < 0 ? NULL : planes + (size_t)pon * hw;
	const float *also = palso < 0 ? NULL : planes + (size_t)palso * hw;
	int n = 0;
	for (int p = 0; p < hw; p++) {
		bool in = !on || on[p] > 0.5f || (also && also[p] > 0.5f);
		w[p] = in ? 1.0f : 0.0f;
		n += in;
	}
	if (!n) {
		for (int p = 0; p < hw; p++)
			w[p] = 1.0f;
		n = hw;
	}
	for (int p = 0; p < hw; p++)
		w[p] /= (float)n;
	return n;
}
