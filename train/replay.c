/* replay.c: replay buffer in RAM (see replay.h). */
#include "train/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "engine/rng.h"

/* One game of the window, with its positions' move indices. */
typedef struct replay_game {
	game_record rec;  /* the game (deep copy) */
	int32_t *full;    /* move indices of its recorded positions */
	int n_full;       /* entries in full[] */
	double drawn_at;  /* the buffer's `drawn` when the game came */
	int8_t *owner;    /* who owns each point at the end, first player +1
			   * (games with territory played out), or NULL */
} replay_game;

struct replay_buffer {
	int64_t window;        /* positions to keep */
	int64_t max_window;    /* replay_new's: the most replay_set_window allows */
	double reuse_cap;      /* expected draws per position before retiring; 0: none */
	double drawn;          /* expected draws of one position held all along:
				* the sum over draws of 1 / positions held */
	replay_game *games;    /* ring of games, oldest at head */
	int64_t cap, head, n;  /* ring capacity, oldest index, games held */
	int64_t positions;     /* recorded positions held */
	int64_t added;         /* positions ever added */
	/* Sampling picks a position index in [0, positions) and finds its game
	 * through this prefix sum over the ring order (rebuilt lazily). */
	int64_t *prefix;       /* [n + 1] */
	bool prefix_ok;        /* prefix matches the ring */
	float value_q_weight;  /* value target mix (record_value_target) */
	float value_lambda;    /* the value target's lambda-return (the same) */
	bool value_cut;        /* ... cut at exploring moves (the same) */
};


replay_buffer *replay_new(int64_t window)
{
	replay_buffer *rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->window = window > 0 ? window : 1;
	rb->max_window = rb->window;
	rb->value_lambda = 1;
	return rb;
}

void replay_set_value_target(replay_buffer *rb, float l, float lambda, bool cut)
{
	rb->value_q_weight = l;
	rb->value_lambda = lambda;
	rb->value_cut = cut;
}

int64_t replay_window_size(int64_t seen, int64_t min, double alpha, double beta, int64_t max)
{
	if (min < 1)
		min = 1;
	double w = (double)min;
	if (seen > min && alpha > 0)
		w += beta * (double)min * (pow((double)seen / (double)min, alpha) - 1) / alpha;
	int64_t n = w > 9e18 ? INT64_MAX : (int64_t)w;
	if (n < min)
		n = min;
	return max > 0 && n > max ? max : n;
}

void replay_set_reuse_cap(replay_buffer *rb, double cap) { rb->reuse_cap = cap > 0 ? cap : 0; }

double replay_oldest_reuse(const replay_buffer *rb)
{
	return rb->n ? rb->drawn - rb->games[rb->head].drawn_at : 0;
}

static void game_drop(replay_game *g)
{
	record_free(&g->rec);
	free(g->full);
	free(g->owner);
	memset(g, 0, sizeof(*g));
}

void replay_free(replay_buffer *rb)
{
	if (!rb)
		return;
	for (int64_t i = 0; i < rb->n; i++)
		game_drop(&rb->games[(rb->head + i) % rb->cap]);
	free(rb->games);
	free(rb->prefix);
	free(rb);
}

/* The ownership targets of a game with territory that was played out (no
 * resignation): its final position's owners, kept as int8. 0 (owner NULL
 * when there is none), or -1 when memory is short. */
static int game_owner(replay_game *rg)
{
	const game_record *r = &rg->rec;
	const game_desc *d = game_desc_from_params(&r->params);
	if (!d->ownership || r->resigned >= 0)
		return 0;
	static _Thread_local game g;
	static _Thread_local float own[GAME_MAX_ACTIONS];
	if (record_replay(r, -1, &g) != 0)
		return 0;
	int np = game_width(&g) * game_height(&g);
	d->ownership(&g, own);
	rg->owner = malloc((size_t)np);
	if (!rg->owner)
		return -1;
	for (int i = 0; i < np; i++)
		rg->owner[i] = (int8_t)own[i];
	return 0;
}

/* Drops the oldest game. */
static void drop_oldest(replay_buffer *rb)
{
	rb->positions -= rb->games[rb->head].n_full;
	game_drop(&rb->games[rb->head]);
	rb->head = (rb->head + 1) % rb->cap;
	rb->n--;
	rb->prefix_ok = false;
}

/* Drops the oldest games while the rest still fill the window. */
static void trim_to_window(replay_buffer *rb)
{
	while (rb->n > 1 && rb->positions - rb->games[rb->head].n_full >= rb->window)
		drop_oldest(rb);
}

void replay_set_window(replay_buffer *rb, int64_t window)
{
	rb->window = window < 1 ? 1 : window > rb->max_window ? rb->max_window : window;
	trim_to_window(rb);
}

int replay_add_game(replay_buffer *rb, const game_record *r)
{
	if (rb->n == rb->cap) {
		int64_t cap = rb->cap ? rb->cap * 2 : 256;
		replay_game *g = calloc((size_t)cap, sizeof(*g));
		int64_t *p = malloc(sizeof(int64_t) * (size_t)(cap + 1));
		if (!g || !p) {
			free(g);
			free(p);
			return -1;
		}
		for (int64_t i = 0; i < rb->n; i++)
			g[i] = rb->games[(rb->head + i) % rb->cap];
		free(rb->games);
		free(rb->prefix);
		rb->games = g;
		rb->prefix = p;
		rb->cap = cap;
		rb->head = 0;
	}
	replay_game *g = &rb->games[(rb->head + rb->n) % rb->cap];
	memset(g, 0, sizeof(*g));
	int n_full = record_full_count(r);
	if (n_full == 0)
		return 0; /* nothing to learn from */
	if (record_copy(&g->rec, r) != 0)
		return -1;
	g->full = malloc(sizeof(int32_t) * (size_t)n_full);
	if (!g->full) {
		record_free(&g->rec);
		return -1;
	}
	for (int i = 0; i < r->n_moves; i++)
		if (r->full[i])
			g->full[g->n_full++] = i;
	g->drawn_at = rb->drawn;
	if (game_owner(g) != 0) {
		game_drop(g);
		return -1;
	}
	rb->n++;
	rb->positions += g->n_full;
	rb->added += g->n_full;
	rb->prefix_ok = false;
	trim_to_window(rb);
	return 0;
}

int64_t replay_positions(const replay_buffer *rb) { return rb->positions; }
int64_t replay_games(const replay_buffer *rb) { return rb->n; }
int64_t replay_added(const replay_buffer *rb) { return rb->added; }

/* game_num_symmetries of a record's game, without replaying it. */
static int replay_symmetries(const game_record *r)
{
	return game_desc_from_params(&r->params)->num_symmetries;
}

static int sample(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, int first, int count,
		  bool counted, train_batch *b);

int replay_sample(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, train_batch *b)
{
	return sample(rb, rng, enc, n, 0, n, true, b);
}

int replay_sample_share(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, int first,
			int count, train_batch *b)
{
	return sample(rb, rng, enc, n, first, count, true, b);
}

int replay_sample_uncounted(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n,
			    train_batch *b)
{
	if (rb->positions == 0)
		return -1;
	return sample(rb, rng, enc, n, 0, n, false, b);
}

/* The opponent-reply target of the position before move i (g, encoded
 * under sym into slot): record_reply_targets'. */
static int opp_target(const game_record *r, int i, const game *g, int sym, train_batch *b,
		      int slot)
{
	int16_t moves[GAME_MAX_ACTIONS];
	uint16_t counts[GAME_MAX_ACTIONS];
	int n = record_reply_targets(r, i, moves, counts);
	return train_batch_opp_target(g, sym, moves, counts, n, b, slot);
}

/* The ownership target of a position g of game rg: none when rg was not
 * played out. */
static int own_target(const replay_game *rg, const game *g, int sym, train_batch *b, int slot)
{
	static _Thread_local float own[GAME_MAX_ACTIONS];
	if (!rg->owner)
		return train_batch_own_target(g, sym, NULL, b, slot);
	int np = game_width(g) * game_height(g);
	for (int i = 0; i < np; i++)
		own[i] = rg->owner[i];
	return train_batch_own_target(g, sym, own, b, slot);
}

/* The draws of replay_sample_share; `counted`: they count toward the reuse
 * cap (retiring games first where the cap asks). */
static int sample(replay_buffer *rb, uint64_t *rng, nn_encoding enc, int n, int first, int count,
		  bool counted, train_batch *b)
{
	if (rb->positions == 0 && rb->reuse_cap > 0 && rb->added > 0)
		return REPLAY_USED_UP;
	if (rb->positions == 0 || count > b->cap || first < 0 || count < 0 || first + count > n)
		return -1;
	/* The reuse cap: the oldest games (drawn the most) leave before these
	 * n draws would take them past it. */
	while (counted && rb->reuse_cap > 0 && rb->n > 0 &&
	       rb->drawn + (double)n / (double)rb->positions - rb->games[rb->head].drawn_at >
		       rb->reuse_cap * (1 + 1e-12))
		drop_oldest(rb);
	if (rb->positions == 0)
		return REPLAY_USED_UP;
	if (counted)
		rb->drawn += (double)n / (double)rb->positions;
	if (!rb->prefix_ok) {
		rb->prefix[0] = 0;
		for (int64_t i = 0; i < rb->n; i++)
			rb->prefix[i + 1] = rb->prefix[i] + rb->games[(rb->head + i) % rb->cap].n_full;
		rb->prefix_ok = true;
	}
	static _Thread_local game g;
	int16_t moves[GAME_MAX_ACTIONS];
	uint16_t counts[GAME_MAX_ACTIONS];
	for (int k = 0; k < n; k++) {
		int64_t pos = (int64_t)(rng_next(rng) % (uint64_t)rb->positions);
		/* The game holding position `pos`: binary search on the prefix. */
		int64_t lo = 0, hi = rb->n - 1;
		while (lo < hi) {
			int64_t mid = (lo + hi + 1) / 2;
			if (rb->prefix[mid] <= pos)
				lo = mid;
			else
				hi = mid - 1;
		}
		const replay_game *rg = &rb->games[(rb->head + lo) % rb->cap];
		const game_record *r = &rg->rec;
		/* Positions of other shares draw the same numbers, unencoded. */
		if (k < first || k >= first + count) {
			rng_next(rng);
			continue;
		}
		int move_index = rg->full[pos - rb->prefix[lo]];
		if (record_replay(r, move_index, &g) != 0)
			return -1;
		float value;
		int nv = record_position_targets(r, move_index, game_to_move(&g), moves, counts, &value);
		value = record_value_target(r, move_index, game_to_move(&g), rb->value_q_weight,
					    rb->value_lambda, rb->value_cut);
		int sym = (int)(rng_next(rng) % (uint64_t)replay_symmetries(r));
		if (train_batch_from_position(&g, enc, sym, moves, counts, nv, value, b, k - first) != 0)
			return -1;
		if (b->opp && opp_target(r, move_index, &g, sym, b, k - first) != 0)
			return -1;
		if (b->own && own_target(rg, &g, sym, b, k - first) != 0)
			return -1;
		/* The score of a game played out (a resignation's is 0, no
		 * count). */
		if (b->score && train_batch_score_target(&g, r->resigned >= 0 ? NAN : r->score, b,
							 k - first) != 0)
			return -1;
	}
	b->n = count;
	return 0;
}
