/* game.c: the generic game interface, dispatching to Go and Connect Four. */
#include "engine/game.h"
#include "engine/game_desc.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* GTP column letters: I is skipped. */
static const char go_columns[] = "ABCDEFGHJKLMNOPQRST";

game_params game_params_default(game_kind kind)
{
	return game_desc_from_params(&(game_params){ .kind = kind })->defaults;
}

bool game_kind_from_name(const char *name, game_kind *out)
{
	const game_desc *d = game_desc_by_name(name);
	if (d)
		*out = d->kind;
	return d != NULL;
}

const char *game_kind_name(game_kind kind)
{
	const game_desc *d = game_desc_by_kind(kind);
	return d ? d->name : "?";
}

game_status game_init(game *g, const game_params *p)
{
	g->params = *p;
	switch (p->kind) {
	case GAME_KIND_GO:
		if (go_init(&g->u.go, p->size, p->komi) != 0)
			return GAME_ERR_PARAMS;
		return GAME_OK;
	case GAME_KIND_CONNECT4:
		g->params.size = C4_WIDTH;
		g->params.komi = 0;
		c4_init(&g->u.c4);
		return GAME_OK;
	}
	return GAME_ERR_PARAMS;
}

void game_copy(game *dst, const game *src)
{
	/* The union is as large as a 19x19 go_board with its history (25 KB):
	 * only the live game's part is copied (a search copies its root for
	 * every descent). */
	dst->params = src->params;
	if (src->params.kind == GAME_KIND_GO)
		go_copy(&dst->u.go, &src->u.go);
	else
		dst->u.c4 = src->u.c4;
}

int game_num_actions(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return g->u.go.size * g->u.go.size + 1;
	return C4_WIDTH;
}

int game_width(const game *g)
{
	return g->params.kind == GAME_KIND_GO ? g->u.go.size : C4_WIDTH;
}

int game_height(const game *g)
{
	return g->params.kind == GAME_KIND_GO ? g->u.go.size : C4_HEIGHT;
}

int game_to_move(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_to_move(&g->u.go);
	return c4_to_move(&g->u.c4);
}

int game_move_count(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return g->u.go.n_moves;
	return g->u.c4.n_moves;
}

int game_pass_move(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_pass_move(&g->u.go);
	return GAME_MOVE_NONE;
}

bool game_fills_own_eye(const game *g, int move)
{
	return g->params.kind == GAME_KIND_GO && go_fills_own_eye(&g->u.go, move);
}

int game_history_move(const game *g, int i)
{
	if (i < 0 || i >= game_move_count(g))
		return GAME_MOVE_NONE;
	if (g->params.kind == GAME_KIND_CONNECT4)
		return g->u.c4.moves[i];
	/* Go's history interleaves setup stones with moves. */
	const go_board *b = &g->u.go;
	for (int k = 0, seen = 0; k < b->n_history; k++) {
		if (b->history[k].setup)
			continue;
		if (seen++ == i)
			return b->history[k].point;
	}
	return GAME_MOVE_NONE;
}

bool game_is_legal(const game *g, int move)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_is_legal(&g->u.go, move);
	return c4_is_legal(&g->u.c4, move);
}

int game_legal_moves(const game *g, int *out)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_is_over(&g->u.go) ? 0 : go_legal_moves(&g->u.go, out);
	return c4_legal_moves(&g->u.c4, out);
}

game_status game_play(game *g, int move)
{
	int rc;
	if (g->params.kind == GAME_KIND_GO) {
		if (go_is_over(&g->u.go))
			return GAME_ERR_ILLEGAL;
		rc = go_play(&g->u.go, move);
		return rc == 0 ? GAME_OK : rc == -2 ? GAME_ERR_FULL : GAME_ERR_ILLEGAL;
	}
	rc = c4_play(&g->u.c4, move);
	return rc == 0 ? GAME_OK : GAME_ERR_ILLEGAL;
}

bool game_set_to_move(game *g, int player)
{
	if (g->params.kind == GAME_KIND_GO) {
		go_set_to_move(&g->u.go, player);
		return true;
	}
	return c4_to_move(&g->u.c4) == player;
}

bool game_undo(game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_undo(&g->u.go);
	return c4_undo(&g->u.c4);
}

void game_resign(game *g, int player)
{
	if (g->params.kind == GAME_KIND_GO)
		go_resign(&g->u.go, player);
	else
		c4_resign(&g->u.c4, player);
}

double game_komi(const game *g)
{
	return g->params.kind == GAME_KIND_GO ? g->u.go.komi : 0;
}

int game_resigned(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return g->u.go.resigned;
	return g->u.c4.resigned;
}

bool game_is_over(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_is_over(&g->u.go);
	return c4_is_over(&g->u.c4);
}

int game_result(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_result(&g->u.go);
	return c4_result(&g->u.c4);
}

double game_score(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_score(&g->u.go);
	return c4_result(&g->u.c4);
}

uint64_t game_hash(const game *g)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_hash(&g->u.go);
	return c4_hash(&g->u.c4);
}

int game_num_symmetries(const game *g)
{
	return g->params.kind == GAME_KIND_GO ? 8 : 2;
}

/* Go symmetry s, numbered as Leela Zero's (its `heatmap N`): mirror x when
 * s & 2, mirror y when s & 1, then transpose when s & 4. This is the inverse
 * of LZ's Network::get_symmetry, which says where the input at a point is
 * read from; here we say where a point goes, so the network sees the same
 * planes under the same number. Connect Four: s = 1 mirrors the columns. */
/* Point (x, y) of an n x n board under Go symmetry sym (bit 1 flips the
 * rows, bit 2 the columns, bit 4 then transposes), as y * n + x. */
static inline int go_symmetry_point(int n, int sym, int x, int y)
{
	if (sym & 2)
		x = n - 1 - x;
	if (sym & 1)
		y = n - 1 - y;
	if (sym & 4) {
		int t = x;
		x = y;
		y = t;
	}
	return y * n + x;
}

/* Every game's symmetry tables, made when the program loads: the action
 * that each action goes to under each symmetry, a Go board's pass last
 * (a search maps every legal move of every leaf it evaluates, and encodes
 * every leaf's points, which the divisions of go_symmetry_point's
 * arguments made a cost). About 87 KB. */
static int16_t go_sym_tables[GO_MAX_SIZE - GO_MIN_SIZE + 1][8][GAME_MAX_ACTIONS];
static int16_t c4_sym_tables[2][C4_WIDTH];

__attribute__((constructor)) static void go_sym_make(void)
{
	for (int n = GO_MIN_SIZE; n <= GO_MAX_SIZE; n++)
		for (int s = 0; s < 8; s++) {
			int16_t *t = go_sym_tables[n - GO_MIN_SIZE][s];
			for (int y = 0; y < n; y++)
				for (int x = 0; x < n; x++)
					t[y * n + x] = (int16_t)go_symmetry_point(n, s, x, y);
			t[n * n] = (int16_t)(n * n); /* the pass */
		}
	for (int a = 0; a < C4_WIDTH; a++) {
		c4_sym_tables[0][a] = (int16_t)a;
		c4_sym_tables[1][a] = (int16_t)(C4_WIDTH - 1 - a);
	}
}

static const int16_t *go_sym_table(int n, int sym)
{
	return go_sym_tables[n - GO_MIN_SIZE][sym];
}

int game_symmetry_move(const game *g, int sym, int move)
{
	assert(sym >= 0 && sym < game_num_symmetries(g));
	if (g->params.kind == GAME_KIND_CONNECT4)
		return sym ? C4_WIDTH - 1 - move : move;
	int n = g->u.go.size;
	if (move < 0 || move >= n * n)
		return move; /* pass and "none" are fixed points */
	return go_sym_table(n, sym)[move];
}

const int16_t *game_symmetry_table(const game *g, int sym)
{
	assert(sym >= 0 && sym < game_num_symmetries(g));
	if (g->params.kind == GAME_KIND_CONNECT4)
		return c4_sym_tables[sym];
	return go_sym_table(g->u.go.size, sym);
}

int game_symmetry_inverse(const game *g, int sym)
{
	if (g->params.kind == GAME_KIND_CONNECT4 || !(sym & 4))
		return sym; /* mirrors are their own inverse */
	/* (transpose . mirrors)^-1 = mirrors . transpose = transpose . mirrors
	 * with the x and y mirrors exchanged. */
	return 4 | ((sym & 1) << 1) | ((sym & 2) >> 1);
}

const char *game_move_to_text(const game *g, int move, char *buf)
{
	if (g->params.kind == GAME_KIND_CONNECT4) {
		if (move >= 0 && move < C4_WIDTH)
			snprintf(buf, 8, "%d", move + 1);
		else
			snprintf(buf, 8, "none");
		return buf;
	}
	int n = g->u.go.size;
	if (move == n * n)
		snprintf(buf, 8, "pass");
	else if (move >= 0 && move < n * n)
		snprintf(buf, 8, "%c%d", go_columns[move % n], (move / n + 1) % 100);
	else
		snprintf(buf, 8, "none");
	return buf;
}

game_status game_move_from_text(const game *g, const char *text, int *move)
{
	if (g->params.kind == GAME_KIND_CONNECT4) {
		if (text[0] >= '1' && text[0] <= '0' + C4_WIDTH && text[1] == '\0') {
			*move = text[0] - '1';
			return GAME_OK;
		}
		return GAME_ERR_SYNTAX;
	}
	int n = g->u.go.size;
	if (!strcasecmp(text, "pass")) {
		*move = n * n;
		return GAME_OK;
	}
	int c = toupper((unsigned char)text[0]);
	const char *col = c ? strchr(go_columns, c) : NULL;
	if (!col || !isdigit((unsigned char)text[1]))
		return GAME_ERR_SYNTAX;
	int x = (int)(col - go_columns);
	int row = 0;
	const char *s = text + 1;
	for (; isdigit((unsigned char)*s) && row <= 99; s++)
		row = row * 10 + (*s - '0');
	if (*s != '\0' || x >= n || row < 1 || row > n)
		return GAME_ERR_SYNTAX;
	*move = (row - 1) * n + x;
	return GAME_OK;
}

int game_cell(const game *g, int x, int y)
{
	if (g->params.kind == GAME_KIND_GO)
		return go_color_at(&g->u.go, x, y);
	return c4_cell(&g->u.c4, x, y);
}

size_t game_print(const game *g, char *buf, size_t len)
{
	size_t n = 0;
	int w = game_width(g), h = game_height(g);
	bool go = g->params.kind == GAME_KIND_GO;
	static const char stone[] = ".XO";
#define OUT(...)                                                          \
	do {                                                              \
		int k_ = snprintf(buf + n, n < len ? len - n : 0, __VA_ARGS__); \
		if (k_ > 0)                                               \
			n += (size_t)k_;                                  \
	} while (0)
	OUT("   ");
	for (int x = 0; x < w; x++)
		OUT(" %c", go ? go_columns[x] : '1' + x);
	OUT("\n");
	for (int y = h - 1; y >= 0; y--) {
		OUT("%2d ", y + 1);
		for (int x = 0; x < w; x++)
			OUT(" %c", stone[game_cell(g, x, y) + 1]);
		OUT(" %2d\n", y + 1);
	}
	OUT("   ");
	for (int x = 0; x < w; x++)
		OUT(" %c", go ? go_columns[x] : '1' + x);
	OUT("\n");
	if (go)
		OUT("%s to move, komi %.1f, move %d\n",
		    game_to_move(g) == GAME_BLACK ? "Black (X)" : "White (O)",
		    g->u.go.komi, game_move_count(g));
	else
		OUT("%s to move, move %d\n",
		    game_to_move(g) == GAME_BLACK ? "first player (X)" : "second player (O)",
		    game_move_count(g));
#undef OUT
	if (n >= len && len > 0)
		n = len - 1;
	return n;
}
