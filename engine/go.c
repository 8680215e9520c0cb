/* go.c: the rules of Go (see go.h).
 *
 * Invariants, checked by go_check():
 * - cell[] is 2 (border) outside the size x size square, else a colour or
 *   GO_EMPTY.
 * - Every stone's group[] is the root of its group; the stones of a group
 *   form one ring through next[]; libs[] and stones[] at the root are the
 *   exact number of distinct liberties and of stones. Every group on the
 *   board has a liberty.
 * - empty[0..n_empty) lists each empty point once; empty_at[] inverts it.
 * - hash is the XOR of the Zobrist keys of the stones.
 * - past_hash[i] is the hash after the first i history entries, seen[] holds
 *   a bit for each of them.
 */
#include "engine/go.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "engine/rng.h"
#include "engine/zobrist.h"

#define BORDER 2
#define S GO_STRIDE

static inline int pad(int x, int y)
{
	return (y + 1) * S + x + 1;
}

static inline int pad_move(const go_board *b, int move)
{
	return pad(move % b->size, move / b->size);
}

static inline int unpad(const go_board *b, int p)
{
	return (p / S - 1) * b->size + p % S - 1;
}

static inline bool on_board(const go_board *b, int x, int y)
{
	return x >= 0 && y >= 0 && x < b->size && y < b->size;
}

/* ---- small helpers ------------------------------------------------------ */

static bool komi_valid(double komi)
{
	/* The range test also refuses NaN, and keeps the cast defined. */
	if (!(komi >= -1000.0 && komi <= 1000.0))
		return false;
	double k2 = komi * 2;
	return k2 == (double)(long)k2;
}

static inline void empty_add(go_board *b, int p)
{
	b->empty_at[p] = (int16_t)b->n_empty;
	b->empty[b->n_empty++] = (int16_t)p;
}

static inline void empty_remove(go_board *b, int p)
{
	int i = b->empty_at[p];
	int last = b->empty[--b->n_empty];
	b->empty[i] = (int16_t)last;
	b->empty_at[last] = (int16_t)i;
}

/* Every position that enters the history passes here, the board as it
 * is: the filter takes its hash, min_empty its empty points. */
static inline void seen_add(go_board *b, uint64_t h)
{
	if (b->n_empty < b->min_empty)
		b->min_empty = b->n_empty;
	unsigned bit = (unsigned)(h >> 50) % (GO_SEEN_WORDS * 64);
	b->seen[bit / 64] |= 1ULL << (bit % 64);
}

static inline bool seen_maybe(const go_board *b, uint64_t h)
{
	unsigned bit = (unsigned)(h >> 50) % (GO_SEEN_WORDS * 64);
	return b->seen[bit / 64] >> (bit % 64) & 1;
}

/* Sets the side to move and remembers it for this history length. */
static inline void set_to_move(go_board *b, int c)
{
	int i = b->n_history;
	b->to_move = c;
	if (c == GO_WHITE)
		b->white_at[i / 64] |= 1ULL << (i % 64);
	else
		b->white_at[i / 64] &= ~(1ULL << (i % 64));
}

/* Exact liberties of the group rooted at r, by a scan of its ring. A 441-bit
 * mark set on the stack costs less than clearing a per-board array. */
static int count_libs(const go_board *b, int r)
{
	uint64_t mark[(GO_PADDED + 63) / 64] = { 0 };
	int n = 0, s = r;
	do {
		const int nb[4] = { s - S, s - 1, s + 1, s + S };
		for (int i = 0; i < 4; i++) {
			int q = nb[i];
			if (b->cell[q] == GO_EMPTY && !(mark[q >> 6] >> (q & 63) & 1)) {
				mark[q >> 6] |= 1ULL << (q & 63);
				n++;
			}
		}
		s = b->next[s];
	} while (s != r);
	return n;
}

/* True when empty point q touches group r (colour c) anywhere but at
 * `except`. */
static inline bool touches(const go_board *b, int c, int q, int r, int except)
{
	const int nb[4] = { q - S, q - 1, q + 1, q + S };
	for (int i = 0; i < 4; i++) {
		int n = nb[i];
		if (n != except && b->cell[n] == c && b->group[n] == r)
			return true;
	}
	return false;
}

/* Removes the group rooted at g (colour 1 - c); the groups of `c` around it
 * gain the freed points as liberties. */
static void remove_group(go_board *b, int c, int g)
{
	int o = 1 - c, s = g;
	do {
		b->cell[s] = GO_EMPTY;
		b->hash ^= zobrist_stone(o, s);
		empty_add(b, s);
		const int nb[4] = { s - S, s - 1, s + 1, s + S };
		int done[4], n_done = 0;
		for (int i = 0; i < 4; i++) {
			int q = nb[i];
			if (b->cell[q] != c)
				continue;
			int r = b->group[q], k;
			for (k = 0; k < n_done && done[k] != r; k++)
				;
			if (k == n_done) {
				done[n_done++] = r;
				b->libs[r]++;
			}
		}
		s = b->next[s];
	} while (s != g);
}

/* Puts a stone of colour c on empty point p: merges, then captures what
 * has no liberty left. Does not check legality. Sets ko_point. Returns the
 * number of stones captured. */
static inline __attribute__((always_inline)) int place(go_board *b, int c, int p)
{
	const int o = 1 - c;
	const int nb[4] = { p - S, p - 1, p + 1, p + S };
	int own[4], n_own = 0, opp[4], n_opp = 0, n_lib = 0;

	b->cell[p] = (int8_t)c;
	b->hash ^= zobrist_stone(c, p);
	empty_remove(b, p);
	for (int i = 0; i < 4; i++) {
		int q = nb[i], v = b->cell[q], k;
		if (v == GO_EMPTY) {
			n_lib++;
		} else if (v == c) {
			int r = b->group[q];
			for (k = 0; k < n_own && own[k] != r; k++)
				;
			if (k == n_own)
				own[n_own++] = r;
		} else if (v == o) {
			int r = b->group[q];
			for (k = 0; k < n_opp && opp[k] != r; k++)
				;
			if (k == n_opp)
				opp[n_opp++] = r;
		}
	}

	int r;
	if (n_own == 0) {
		r = p;
		b->group[p] = (int16_t)p;
		b->next[p] = (int16_t)p;
		b->stones[p] = 1;
		b->libs[p] = (int16_t)n_lib;
	} else if (n_own == 1) {
		/* Joining one group: it loses p and gains the empty neighbours
		 * of p it did not touch already. */
		r = own[0];
		b->group[p] = (int16_t)r;
		b->next[p] = b->next[r];
		b->next[r] = (int16_t)p;
		b->stones[r]++;
		int gain = -1;
		for (int i = 0; i < 4; i++)
			if (b->cell[nb[i]] == GO_EMPTY && !touches(b, c, nb[i], r, p))
				gain++;
		b->libs[r] = (int16_t)(b->libs[r] + gain);
	} else {
		/* Merging into the largest group r: it keeps its liberties
		 * but p, and gains those of the others and of p that it did
		 * not touch (each counted once). Then relabel and splice. */
		r = own[0];
		for (int k = 1; k < n_own; k++)
			if (b->stones[own[k]] > b->stones[r])
				r = own[k];
		uint64_t mark[(GO_PADDED + 63) / 64] = { 0 };
		int n_libs = b->libs[r] - 1;
		for (int i = 0; i < 4; i++) {
			int q = nb[i];
			if (b->cell[q] == GO_EMPTY && !touches(b, c, q, r, p)) {
				mark[q >> 6] |= 1ULL << (q & 63);
				n_libs++;
			}
		}
		for (int k = 0; k < n_own; k++) {
			int g = own[k], s = g;
			if (g == r)
				continue;
			do {
				const int sn[4] = { s - S, s - 1, s + 1, s + S };
				for (int i = 0; i < 4; i++) {
					int q = sn[i];
					if (b->cell[q] == GO_EMPTY &&
					    !(mark[q >> 6] >> (q & 63) & 1)) {
						mark[q >> 6] |= 1ULL << (q & 63);
						if (!touches(b, c, q, r, p))
							n_libs++;
					}
				}
				s = b->next[s];
			} while (s != g);
		}
		for (int k = 0; k < n_own; k++) {
			int g = own[k], s = g;
			if (g == r)
				continue;
			do {
				b->group[s] = (int16_t)r;
				s = b->next[s];
			} while (s != g);
			int16_t t = b->next[r];
			b->next[r] = b->next[g];
			b->next[g] = t;
			b->stones[r] = (int16_t)(b->stones[r] + b->stones[g]);
		}
		b->group[p] = (int16_t)r;
		b->next[p] = b->next[r];
		b->next[r] = (int16_t)p;
		b->stones[r]++;
		b->libs[r] = (int16_t)n_libs;
	}

	int captured = 0, last = 0;
	for (int k = 0; k < n_opp; k++) {
		int g = opp[k];
		if (--b->libs[g] == 0) {
			captured += b->stones[g];
			last = g;
			remove_group(b, c, g);
		}
	}
	/* A lone stone that took a lone stone and sits in its only liberty
	 * may not be taken back at once. */
	b->ko_point = captured == 1 && b->stones[r] == 1 && b->libs[r] == 1 ? last : 0;
	return captured;
}

/* Copies a row of n (GO_MIN_SIZE..GO_MAX_SIZE) bytes in word-sized moves,
 * the last one overlapping: a move runs once per row of every move a
 * search's descent plays, where a library call per row of 9 bytes cost
 * more than the bytes. */
static inline void copy_row(int8_t *dst, const int8_t *src, int n)
{
	_Static_assert(GO_MIN_SIZE >= 4, "copy_row's overlapping word");
	if (n < 8) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
		return;
	}
	for (int i = 0; i + 8 < n; i += 8)
		memcpy(dst + i, src + i, 8);
	memcpy(dst + n - 8, src + n - 8, 8);
}

/* Copies the stones into past[] as a new newest entry. */
static void past_push(go_board *b)
{
	int n = b->size;
	b->past_head = (b->past_head + 1) % GO_PAST_POSITIONS;
	if (b->past_count < GO_PAST_POSITIONS)
		b->past_count++;
	int8_t *dst = b->past[b->past_head];
	for (int y = 0; y < n; y++)
		copy_row(dst + y * n, &b->cell[pad(0, y)], n);
}

/* Legality of a stone of colour c (a colour) on the empty padded point
 * p: not suicide, no repetition of an earlier position. */
static inline bool legal_on_empty(const go_board *b, int c, int p)
{
	const int nb[4] = { p - S, p - 1, p + 1, p + S };
	/* A stone that captures nothing leaves one empty point fewer: fewer
	 * than any earlier position had, the position is new (superko needs
	 * no hash and no filter lookup). */
	bool new_if_no_capture = b->n_empty - 1 < b->min_empty;
	/* Most points of most boards: an empty neighbour (not suicide) and
	 * no stone of the other colour beside it (no capture), decided
	 * without a branch per neighbour. */
	if (new_if_no_capture) {
		int v0 = b->cell[nb[0]], v1 = b->cell[nb[1]], v2 = b->cell[nb[2]], v3 = b->cell[nb[3]];
		int o = 1 - c;
		bool empty = (v0 == GO_EMPTY) | (v1 == GO_EMPTY) | (v2 == GO_EMPTY) | (v3 == GO_EMPTY);
		bool other = (v0 == o) | (v1 == o) | (v2 == o) | (v3 == o);
		if (empty & !other)
			return true;
	}
	int caps[4], n_caps = 0;
	bool alive = false;
	for (int i = 0; i < 4; i++) {
		int q = nb[i], v = b->cell[q];
		if (v == GO_EMPTY) {
			alive = true;
		} else if (v == c) {
			if (b->libs[b->group[q]] > 1)
				alive = true;
		} else if (v == 1 - c) {
			int g = b->group[q], k;
			if (b->libs[g] != 1)
				continue;
			alive = true;
			for (k = 0; k < n_caps && caps[k] != g; k++)
				;
			if (k == n_caps)
				caps[n_caps++] = g;
		}
	}
	if (!alive)
		return false; /* suicide */

	/* Positional superko: the stones after the move against every
	 * earlier position. */
	if (n_caps == 0 && new_if_no_capture)
		return true;
	uint64_t h = b->hash ^ zobrist_stone(c, p);
	for (int k = 0; k < n_caps; k++) {
		int s = caps[k];
		do {
			h ^= zobrist_stone(1 - c, s);
			s = b->next[s];
		} while (s != caps[k]);
	}
	if (!seen_maybe(b, h))
		return true;
	for (int i = 0; i <= b->n_history; i++)
		if (b->past_hash[i] == h)
			return false;
	return true;
}

/* Legality for colour c, game-over aside. */
static bool legal_for(const go_board *b, int c, int move)
{
	int pass = go_pass_move(b);
	if (move < 0 || move > pass || (c != GO_BLACK && c != GO_WHITE))
		return false;
	if (move == pass)
		return true;
	int p = pad_move(b, move);
	return b->cell[p] == GO_EMPTY && legal_on_empty(b, c, p);
}

/* Plays a move known to be legal for colour c, recording it. */
static void apply_move(go_board *b, int c, int move)
{
	if (move == go_pass_move(b)) {
		b->passes++;
		b->ko_point = 0;
	} else {
		place(b, c, pad_move(b, move));
		b->passes = 0;
	}
	b->history[b->n_history].point = (int16_t)move;
	b->history[b->n_history].color = (int8_t)c;
	b->history[b->n_history].setup = 0;
	b->n_history++;
	b->past_hash[b->n_history] = b->hash;
	seen_add(b, b->hash);
	b->n_moves++;
	set_to_move(b, 1 - c);
	past_push(b);
}

/* ---- public API --------------------------------------------------------- */

int go_init(go_board *b, int size, double komi)
{
	if (size < GO_MIN_SIZE || size > GO_MAX_SIZE || !komi_valid(komi))
		return -1;
	memset(b, 0, sizeof(*b));
	b->size = size;
	b->komi = komi;
	b->to_move = GO_BLACK;
	b->resigned = -1;
	for (int p = 0; p < GO_PADDED; p++)
		b->cell[p] = BORDER;
	for (int y = 0; y < size; y++)
		for (int x = 0; x < size; x++) {
			b->cell[pad(x, y)] = GO_EMPTY;
			empty_add(b, pad(x, y));
		}
	b->past_hash[0] = 0;
	b->min_empty = b->n_empty;
	seen_add(b, 0);
	memset(b->past[0], GO_EMPTY, sizeof(b->past[0]));
	b->past_count = 1;
	return 0;
}

int go_set_komi(go_board *b, double komi)
{
	if (!komi_valid(komi))
		return -1;
	b->komi = komi;
	return 0;
}

int go_to_move(const go_board *b)
{
	return b->to_move;
}

int go_color_at(const go_board *b, int x, int y)
{
	return on_board(b, x, y) ? b->cell[pad(x, y)] : GO_EMPTY;
}

_Static_assert(offsetof(go_board, cell) < offsetof(go_board, next) &&
		       offsetof(go_board, next) < offsetof(go_board, group) &&
		       offsetof(go_board, group) < offsetof(go_board, libs) &&
		       offsetof(go_board, libs) < offsetof(go_board, stones) &&
		       offsetof(go_board, stones) < offsetof(go_board, empty) &&
		       offsetof(go_board, empty) < offsetof(go_board, empty_at) &&
		       offsetof(go_board, empty_at) < offsetof(go_board, history) &&
		       offsetof(go_board, history) < offsetof(go_board, past_hash) &&
		       offsetof(go_board, past_hash) < offsetof(go_board, seen) &&
		       offsetof(go_board, seen) < offsetof(go_board, white_at) &&
		       offsetof(go_board, white_at) < offsetof(go_board, past) &&
		       offsetof(go_board, past) < offsetof(go_board, past_head),
	       "go_copy copies go_board's fields in their order");

void go_copy(go_board *dst, const go_board *src)
{
	int n = src->n_history;
	/* The padded rows of this board and its border: the per-point arrays
	 * beyond them are never read (cell[] is copied whole: go_check reads
	 * every border cell). */
	size_t rows = (size_t)(src->size + 2) * S;
	memcpy(dst, src, offsetof(go_board, next));
	memcpy(dst->next, src->next, sizeof(src->next[0]) * rows);
	memcpy(dst->group, src->group, sizeof(src->group[0]) * rows);
	memcpy(dst->libs, src->libs, sizeof(src->libs[0]) * rows);
	memcpy(dst->stones, src->stones, sizeof(src->stones[0]) * rows);
	memcpy(dst->empty, src->empty, sizeof(src->empty[0]) * (size_t)src->n_empty);
	memcpy(dst->empty_at, src->empty_at, sizeof(src->empty_at[0]) * rows);
	memcpy(dst->history, src->history, sizeof(src->history[0]) * (size_t)n);
	memcpy(dst->past_hash, src->past_hash, sizeof(src->past_hash[0]) * (size_t)(n + 1));
	memcpy(dst->seen, src->seen, offsetof(go_board, past) - offsetof(go_board, seen));
	/* Each past board's points (rows of the largest board's length). */
	size_t area = (size_t)src->size * (size_t)src->size;
	for (int k = 0; k < GO_PAST_POSITIONS; k++)
		memcpy(dst->past[k], src->past[k], area);
	memcpy(&dst->past_head, &src->past_head, sizeof(*src) - offsetof(go_board, past_head));
}

const int8_t *go_past_board(const go_board *b, int k)
{
	if (k < 0 || k >= b->past_count)
		return NULL;
	return b->past[(b->past_head - k + GO_PAST_POSITIONS) % GO_PAST_POSITIONS];
}

int go_color_at_past(const go_board *b, int k, int x, int y)
{
	const int8_t *past = go_past_board(b, k);
	return past && on_board(b, x, y) ? past[y * b->size + x] : GO_EMPTY;
}

int go_liberties_at(const go_board *b, int x, int y)
{
	if (!on_board(b, x, y))
		return 0;
	int p = pad(x, y);
	return b->cell[p] == GO_EMPTY ? 0 : b->libs[b->group[p]];
}

bool go_is_legal(const go_board *b, int move)
{
	return !go_is_over(b) && legal_for(b, b->to_move, move);
}

/* A row at a time over the padded board (every leaf of a search asks
 * for its legal moves: no division per point, no range checks). */
int go_legal_moves(const go_board *b, int *out)
{
	int n = 0, size = b->size, c = b->to_move;
	if (go_is_over(b))
		return 0;
	for (int y = 0, m = 0; y < size; y++)
		for (int x = 0, p = pad(0, y); x < size; x++, p++, m++)
			if (b->cell[p] == GO_EMPTY && legal_on_empty(b, c, p))
				out[n++] = m;
	out[n++] = go_pass_move(b);
	return n;
}

int go_play_color(go_board *b, int color, int move)
{
	if (!legal_for(b, color, move))
		return -1;
	if (b->n_history >= GO_MAX_HISTORY)
		return -2;
	apply_move(b, color, move);
	return 0;
}

void go_set_to_move(go_board *b, int color)
{
	set_to_move(b, color == GO_WHITE ? GO_WHITE : GO_BLACK);
}

int go_play(go_board *b, int move)
{
	return go_play_color(b, b->to_move, move);
}

bool go_undo(go_board *b)
{
	go_action hist[GO_MAX_HISTORY];
	uint64_t white_at[sizeof(b->white_at) / sizeof(b->white_at[0])];
	int n = b->n_history - 1;

	if (n < 0)
		return false;
	memcpy(hist, b->history, (size_t)n * sizeof(hist[0]));
	memcpy(white_at, b->white_at, sizeof(white_at));
	go_init(b, b->size, b->komi);
	for (int i = 0; i < n; i++) {
		if (hist[i].setup) {
			go_place_stone(b, hist[i].color, hist[i].point);
		} else {
			b->to_move = hist[i].color;
			apply_move(b, hist[i].color, hist[i].point);
		}
	}
	memcpy(b->white_at, white_at, sizeof(white_at));
	b->to_move = (int)(white_at[n / 64] >> (n % 64) & 1) ? GO_WHITE : GO_BLACK;
	return true;
}

int go_place_stone(go_board *b, int color, int point)
{
	if ((color != GO_BLACK && color != GO_WHITE) || point < 0 ||
	    point >= go_pass_move(b) || b->n_history >= GO_MAX_HISTORY)
		return -1;
	int p = pad_move(b, point);
	if (b->cell[p] != GO_EMPTY)
		return -1;
	/* No captures for setup stones, so refuse one that would leave a
	 * group without a liberty. */
	const int nb[4] = { p - S, p - 1, p + 1, p + S };
	bool alive = false;
	for (int i = 0; i < 4; i++) {
		int q = nb[i], v = b->cell[q];
		if (v == GO_EMPTY)
			alive = true;
		else if (v == color && b->libs[b->group[q]] > 1)
			alive = true;
		else if (v == 1 - color && b->libs[b->group[q]] == 1)
			return -1;
	}
	if (!alive)
		return -1;

	place(b, color, p);
	b->ko_point = 0;
	b->history[b->n_history].point = (int16_t)point;
	b->history[b->n_history].color = (int8_t)color;
	b->history[b->n_history].setup = 1;
	b->n_history++;
	b->past_hash[b->n_history] = b->hash;
	seen_add(b, b->hash);
	set_to_move(b, b->to_move);
	b->past[b->past_head][point] = (int8_t)color;
	return 0;
}

int go_fixed_handicap_points(int size, int n, int *points)
{
	/* GTP 2 section 4.1.1: third line up to 12x12, fourth from 13x13;
	 * sides and centre only on odd boards from 9x9. */
	if (size < 7 || size > GO_MAX_SIZE || n < 2 || n > 9)
		return -1;
	if (n > 4 && (size % 2 == 0 || size < 9))
		return -1;
	int lo = size >= 13 ? 3 : 2, hi = size - 1 - lo, mid = size / 2;
	int k = 0;
#define AT(x, y) (points[k++] = (y) * size + (x))
	AT(lo, lo);              /* D4 */
	AT(hi, hi);              /* Q16 */
	if (n >= 3)
		AT(lo, hi);      /* D16 */
	if (n >= 4)
		AT(hi, lo);      /* Q4 */
	if (n >= 6) {
		AT(lo, mid);     /* D10 */
		AT(hi, mid);     /* Q10 */
	}
	if (n >= 8) {
		AT(mid, lo);     /* K4 */
		AT(mid, hi);     /* K16 */
	}
	if (n >= 5 && n % 2)
		AT(mid, mid);    /* K10, last */
#undef AT
	return k;
}

int go_set_handicap(go_board *b, const int *points, int n)
{
	int area = b->size * b->size;
	uint64_t used[(GO_MAX_SIZE * GO_MAX_SIZE + 63) / 64] = { 0 };

	if (b->n_history > 0 || b->n_moves > 0 || n < 1 || n >= area ||
	    n > GO_MAX_HISTORY)
		return -1;
	for (int i = 0; i < n; i++) {
		int m = points[i];
		if (m < 0 || m >= area || (used[m / 64] >> (m % 64) & 1))
			return -1;
		used[m / 64] |= 1ULL << (m % 64);
	}
	/* Black stones with an empty point left always keep a liberty, so
	 * none of these can fail. */
	for (int i = 0; i < n; i++)
		go_place_stone(b, GO_BLACK, points[i]);
	set_to_move(b, GO_WHITE);
	return 0;
}

void go_resign(go_board *b, int color)
{
	b->resigned = color;
}

bool go_is_over(const go_board *b)
{
	return b->passes >= 2 || b->resigned >= 0 ||
	       b->n_moves >= 3 * b->size * b->size;
}

void go_area(const go_board *b, int8_t *owner)
{
	uint64_t mark[(GO_PADDED + 63) / 64] = { 0 };
	int16_t stack[GO_MAX_SIZE * GO_MAX_SIZE], region[GO_MAX_SIZE * GO_MAX_SIZE];
	int n = b->size;

	for (int y = 0; y < n; y++)
		for (int x = 0; x < n; x++) {
			int p = pad(x, y);
			if (b->cell[p] != GO_EMPTY) {
				owner[y * n + x] = b->cell[p];
				continue;
			}
			if (mark[p >> 6] >> (p & 63) & 1)
				continue;
			/* Flood the empty region, noting which colours it
			 * reaches (bit 0 Black, bit 1 White). */
			int sp = 0, nr = 0, reach = 0;
			mark[p >> 6] |= 1ULL << (p & 63);
			stack[sp++] = (int16_t)p;
			while (sp) {
				int s = stack[--sp];
				region[nr++] = (int16_t)s;
				const int nb[4] = { s - S, s - 1, s + 1, s + S };
				for (int i = 0; i < 4; i++) {
					int q = nb[i], v = b->cell[q];
					if (v == GO_BLACK || v == GO_WHITE) {
						reach |= 1 << v;
					} else if (v == GO_EMPTY && !(mark[q >> 6] >> (q & 63) & 1)) {
						mark[q >> 6] |= 1ULL << (q & 63);
						stack[sp++] = (int16_t)q;
					}
				}
			}
			int8_t who = reach == 1 ? GO_BLACK : reach == 2 ? GO_WHITE : GO_EMPTY;
			for (int i = 0; i < nr; i++)
				owner[unpad(b, region[i])] = who;
		}
}

double go_score(const go_board *b)
{
	int8_t owner[GO_MAX_SIZE * GO_MAX_SIZE];
	int diff = 0;
	go_area(b, owner);
	for (int i = 0; i < b->size * b->size; i++)
		diff += owner[i] == GO_BLACK ? 1 : owner[i] == GO_WHITE ? -1 : 0;
	return diff - b->komi;
}

int go_result(const go_board *b)
{
	if (b->resigned >= 0)
		return b->resigned == GO_BLACK ? -1 : 1;
	double s = go_score(b);
	return s > 0 ? 1 : s < 0 ? -1 : 0;
}

uint64_t go_hash(const go_board *b)
{
	return b->hash ^ (b->to_move == GO_BLACK ? zobrist_black_to_move() : 0);
}

uint64_t go_hash_recompute(const go_board *b)
{
	uint64_t h = 0;
	for (int y = 0; y < b->size; y++)
		for (int x = 0; x < b->size; x++) {
			int p = pad(x, y), v = b->cell[p];
			if (v == GO_BLACK || v == GO_WHITE)
				h ^= zobrist_key(v, p);
		}
	return h;
}

/* ---- playouts ----------------------------------------------------------- */

/* A point whose four neighbours are c (or the edge) and that the opponent
 * cannot make false: fewer than two enemy diagonals, none on the edge. */
static inline bool is_eye(const int8_t *cell, int c, int p)
{
	int v;
	if (((v = cell[p - 1]) != c && v != BORDER) ||
	    ((v = cell[p + 1]) != c && v != BORDER) ||
	    ((v = cell[p - S]) != c && v != BORDER) ||
	    ((v = cell[p + S]) != c && v != BORDER))
		return false;
	const int o = 1 - c;
	int bad = (cell[p - S - 1] == o) + (cell[p - S + 1] == o) +
		  (cell[p + S - 1] == o) + (cell[p + S + 1] == o);
	int edge = (cell[p - S - 1] == BORDER) | (cell[p - S + 1] == BORDER) |
		   (cell[p + S - 1] == BORDER) | (cell[p + S + 1] == BORDER);
	return bad + edge < 2;
}

bool go_fills_own_eye(const go_board *b, int move)
{
	if (move < 0 || move >= go_pass_move(b))
		return false;
	int p = pad_move(b, move);
	return b->cell[p] == GO_EMPTY && is_eye(b->cell, b->to_move, p);
}

/* False when playing c at p would be suicide. */
static inline bool has_life(const go_board *b, int c, int p)
{
	const int nb[4] = { p - S, p - 1, p + 1, p + S };
	for (int i = 0; i < 4; i++) {
		int v = b->cell[nb[i]];
		if (v == GO_EMPTY)
			return true;
		if (v == c) {
			if (b->libs[b->group[nb[i]]] > 1)
				return true;
		} else if (v == 1 - c) {
			if (b->libs[b->group[nb[i]]] == 1)
				return true;
		}
	}
	return false;
}

int go_playout(go_board *b, uint64_t *rng)
{
	const int limit = 3 * b->size * b->size;
	int played = 0;

	while (b->passes < 2 && b->n_moves < limit) {
		const int c = b->to_move;
		int k = b->n_empty, p = 0;
		/* Draw among the untried empty points; a refused one is
		 * swapped behind them. */
		while (k > 0) {
			int i = (int)(((rng_xorshift64(rng) >> 32) * (uint64_t)k) >> 32);
			int q = b->empty[i];
			if (q != b->ko_point && !is_eye(b->cell, c, q) && has_life(b, c, q)) {
				p = q;
				break;
			}
			int last = b->empty[--k];
			b->empty[i] = (int16_t)last;
			b->empty_at[last] = (int16_t)i;
			b->empty[k] = (int16_t)q;
			b->empty_at[q] = (int16_t)k;
		}
		if (p) {
			place(b, c, p);
			b->passes = 0;
		} else {
			b->passes++;
			b->ko_point = 0;
		}
		b->to_move = 1 - c;
		b->n_moves++;
		played++;
	}
	return played;
}

/* ---- consistency -------------------------------------------------------- */

bool go_check(const go_board *b)
{
	int n = b->size, n_stones = 0, n_empty = 0;
	uint64_t mark[(GO_PADDED + 63) / 64] = { 0 };
	int16_t stack[GO_MAX_SIZE * GO_MAX_SIZE];

	if (n < GO_MIN_SIZE || n > GO_MAX_SIZE || (b->to_move != GO_BLACK && b->to_move != GO_WHITE))
		return false;
	for (int p = 0; p < GO_PADDED; p++) {
		int x = p % S - 1, y = p / S - 1, v = b->cell[p];
		if (!on_board(b, x, y)) {
			if (v != BORDER)
				return false;
			continue;
		}
		if (v == GO_EMPTY) {
			n_empty++;
			int i = b->empty_at[p];
			if (i < 0 || i >= b->n_empty || b->empty[i] != p)
				return false;
			continue;
		}
		if (v != GO_BLACK && v != GO_WHITE)
			return false;
		n_stones++;
		int r = b->group[p];
		if (r < 0 || r >= GO_PADDED || b->cell[r] != v || b->group[r] != r)
			return false;
		const int nb[4] = { p - S, p - 1, p + 1, p + S };
		for (int i = 0; i < 4; i++)
			if (b->cell[nb[i]] == v && b->group[nb[i]] != r)
				return false;
	}
	if (n_empty != b->n_empty)
		return false;

	/* Each root: its ring holds exactly its connected stones, and the
	 * counts match. */
	int ring_total = 0;
	for (int r = 0; r < GO_PADDED; r++) {
		int v = b->cell[r];
		if ((v != GO_BLACK && v != GO_WHITE) || b->group[r] != r)
			continue;
		int count = 0, s = r;
		do {
			if (b->cell[s] != v || b->group[s] != r || ++count > n * n)
				return false;
			s = b->next[s];
		} while (s != r);
		if (count != b->stones[r])
			return false;
		int libs = count_libs(b, r);
		if (libs != b->libs[r] || libs == 0)
			return false;
		/* Connected: a flood from the root reaches them all. */
		int sp = 0, reached = 0;
		mark[r >> 6] |= 1ULL << (r & 63);
		stack[sp++] = (int16_t)r;
		while (sp) {
			int q0 = stack[--sp];
			reached++;
			const int nb[4] = { q0 - S, q0 - 1, q0 + 1, q0 + S };
			for (int i = 0; i < 4; i++) {
				int q = nb[i];
				if (b->cell[q] == v && !(mark[q >> 6] >> (q & 63) & 1)) {
					mark[q >> 6] |= 1ULL << (q & 63);
					stack[sp++] = (int16_t)q;
				}
			}
		}
		if (reached != count)
			return false;
		ring_total += count;
	}
	if (ring_total != n_stones)
		return false;
	if (b->ko_point && b->cell[b->ko_point] != GO_EMPTY)
		return false;
	return b->hash == go_hash_recompute(b);
}

/* ---- the descriptor ------------------------------------------------------- */

static void go_numbers(const game_params *p, game_numbers *out)
{
	int n = p->size;
	out->width = out->height = n;
	out->actions = n * n + 1;
	out->typical_length = n * n;
	out->temperature_moves = n;
	out->temperature_end = n; /* a step to the most visited move */
	out->temperature_floor = 0;
	out->selfplay_cpuct = 0; /* the search's */
	out->selfplay_random_opening = 0; /* not measured on Go */
	/* Random match openings: 4 plies from 9x9 up, 2 on the small boards. */
	out->opening_moves = n >= 9 ? 4 : 2;
	out->max_moves = 3 * n * n;
	/* A quarter of the board: 20 moves on 9x9, 90 on 19x19. */
	out->resign_after = n * n / 4;
}

static void go_run_defaults(const game_params *p, game_run_defaults *out)
{
	/* Up to 9x9 a small network learns to count in the first hour on
	 * two cores; larger boards get a wider one. */
	bool small = p->size <= 9;
	out->blocks = small ? 4 : 6;
	out->channels = small ? 48 : 64;
	out->visits = 100;
	out->cheap_visits = 25;
	out->parallel_games = 64;
	out->window = 100000;
	out->positions_per_game = 0.25 * p->size * p->size;
	/* docs/LEARNING.md, "Carrying self-play games across iterations" */
	out->carry_games = true;
}

/* Distance of coordinate v from the nearer edge of a board of `size`
 * (0: the first line). */
static int edge_distance(int v, int size) { return v < size - 1 - v ? v : size - 1 - v; }

static void go_plain_prior(const game *g, const int *legal, int n, float *w)
{
	const go_board *b = &g->u.go;
	int size = b->size;
	for (int i = 0; i < n; i++) {
		int m = legal[i];
		if (m == size * size) {
			w[i] = 0.01f; /* pass: when nothing else is worth playing */
			continue;
		}
		int x = m % size, y = m / size;
		int dx = edge_distance(x, size), dy = edge_distance(y, size);
		int d = dx < dy ? dx : dy;
		/* By line: the fourth first, then the third, the centre, the
		 * second, the edge; the corners' 3-3, 3-4 and 4-4 points above
		 * all, as openings take them. */
		static const float line[] = { 0.1f, 0.4f, 1.5f, 1.6f, 1.0f };
		w[i] = line[d < 4 ? d : 4];
		if (dx >= 2 && dx <= 3 && dy >= 2 && dy <= 3)
			w[i] = 2.0f + 0.2f * (float)(dx + dy);
		/* Away from the stones already there (no reading behind it). */
		for (int ny = y - 2; ny <= y + 2; ny++)
			for (int nx = x - 2; nx <= x + 2; nx++)
				if (nx >= 0 && ny >= 0 && nx < size && ny < size &&
				    abs(nx - x) + abs(ny - y) <= 2 && go_color_at(b, nx, ny) >= 0) {
					w[i] *= 0.3f;
					ny = y + 3; /* once */
					break;
				}
		if (go_fills_own_eye(b, m))
			w[i] = 0.001f;
	}
}

/* game_desc.ownership: the area count's owner of every point, Black +1. */
static void go_ownership(const game *g, float *owner)
{
	int8_t o[GO_MAX_SIZE * GO_MAX_SIZE];
	const go_board *b = &g->u.go;
	go_area(b, o);
	for (int i = 0; i < b->size * b->size; i++)
		owner[i] = o[i] == GO_BLACK ? 1.0f : o[i] == GO_WHITE ? -1.0f : 0.0f;
}

const game_desc game_go = {
	.kind = GAME_KIND_GO,
	.name = "go",
	.title = "Go",
	.aliases = (const char *const[]){ NULL },
	.defaults = { .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 },
	.has_size = true,
	.min_size = GO_MIN_SIZE,
	.max_size = GO_MAX_SIZE,
	.has_komi = true,
	.has_pass = true,
	.has_go_board = true,
	.num_symmetries = 8,
	.encoding = "lz18",
	.net_encoding = "go_native",
	.value_hidden = 256,
	.value_outputs = 1,
	.numbers = go_numbers,
	.run_defaults = go_run_defaults,
	.plain_prior = go_plain_prior,
	.ownership = go_ownership,
};
