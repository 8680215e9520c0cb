/* Game records: round trips through the blob for Go 9x9 and 19x19 and
 * Connect Four random games, refusal of truncated, flipped and crafted
 * blobs (never a crash: run under `make asan`), and the size bound. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "data/record.h"

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random game of at most max_moves: about full_pct% of the moves are
 * full searches with up to max_visits random visit entries over legal moves;
 * values random, sometimes unknown; some games end by resignation. */
static void random_record(game_record *r, const game_params *p, uint64_t *rng, int max_moves,
			  int full_pct, int max_visits)
{
	game *g = malloc(sizeof(*g));
	cr_assert(g);
	cr_assert_eq(game_init(g, p), GAME_OK);
	record_init(r, p);
	int legal[GAME_MAX_ACTIONS];
	record_visit v[GAME_MAX_ACTIONS];
	while (!game_is_over(g) && r->n_moves < max_moves) {
		int n = game_legal_moves(g, legal);
		cr_assert(n > 0);
		int mv = legal[xs(rng) % (uint64_t)n];
		bool full = (int)(xs(rng) % 100) < full_pct;
		int nv = 0;
		if (full || xs(rng) % 4 == 0) {
			int want = 1 + (int)(xs(rng) % (uint64_t)max_visits);
			/* Partial shuffle: distinct legal moves, in random order. */
			for (int i = 0; i < n && nv < want; i++) {
				int j = i + (int)(xs(rng) % (uint64_t)(n - i));
				int t = legal[i];
				legal[i] = legal[j];
				legal[j] = t;
				v[nv].move = (int16_t)legal[i];
				v[nv].count = (uint16_t)(xs(rng) % 3 == 0 ? xs(rng) % 65536 : xs(rng) % 200);
				nv++;
			}
		}
		float value = xs(rng) % 10 == 0 ? NAN : (float)((double)(xs(rng) % 2001) / 1000.0 - 1.0);
		cr_assert_eq(record_add_move(r, mv, full, value, v, nv), 0);
		if (((unsigned)mv + (unsigned)r->n_moves) % 3 == 0)
			record_mark_explored(r); /* no draw: the games stay as they were */
		cr_assert_eq(game_play(g, mv), GAME_OK);
	}
	if (!game_is_over(g) && xs(rng) % 3 == 0)
		game_resign(g, game_to_move(g));
	record_set_outcome(r, g);
	free(g);
}

static void assert_same(const game_record *a, const game_record *b)
{
	cr_assert_eq(a->params.kind, b->params.kind);
	if (a->params.kind == GAME_KIND_GO) {
		cr_assert_eq(a->params.size, b->params.size);
		cr_assert_eq(a->params.komi, b->params.komi);
	}
	cr_assert_eq(a->n_moves, b->n_moves);
	cr_assert_eq(a->n_visits, b->n_visits);
	cr_assert_eq(a->result, b->result);
	cr_assert_eq(a->score, b->score);
	cr_assert_eq(a->resigned, b->resigned);
	cr_assert_eq(a->target, b->target);
	for (int i = 0; i < a->n_moves; i++) {
		cr_assert_eq(a->moves[i], b->moves[i], "move %d", i);
		cr_assert_eq(a->full[i], b->full[i], "full %d", i);
		cr_assert_eq(a->explored[i], b->explored[i], "explored %d", i);
		if (isnan(a->root_value[i]))
			cr_assert(isnan(b->root_value[i]), "value %d", i);
		else
			cr_assert(fabsf(a->root_value[i] - b->root_value[i]) <= 0.5f / 127 + 1e-6f,
				  "value %d: %f vs %f", i, a->root_value[i], b->root_value[i]);
		cr_assert_eq(a->visit_start[i + 1], b->visit_start[i + 1], "visit_start %d", i);
	}
	for (int k = 0; k < a->n_visits; k++) {
		cr_assert_eq(a->visits[k].move, b->visits[k].move, "visit %d", k);
		cr_assert_eq(a->visits[k].count, b->visits[k].count, "visit %d", k);
	}
}

static void round_trip(game_kind kind, int size, int games, int max_moves, uint64_t seed)
{
	game_params p = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		p.size = size;
	uint64_t rng = seed;
	for (int n = 0; n < games; n++) {
		game_record r, d;
		random_record(&r, &p, &rng, max_moves, 50, 40);
		uint8_t *blob;
		size_t len;
		cr_assert_eq(record_encode(&r, &blob, &len), 0);
		char err[256];
		cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), 0, "game %d: %s", n, err);
		assert_same(&r, &d);
		/* Re-encoding what was decoded gives the same bytes. */
		uint8_t *blob2;
		size_t len2;
		cr_assert_eq(record_encode(&d, &blob2, &len2), 0);
		cr_assert_eq(len, len2);
		cr_assert_eq(memcmp(blob, blob2, len), 0);
		/* The positions can be rebuilt from the record. */
		game *g = malloc(sizeof(*g));
		cr_assert_eq(record_replay(&d, -1, g), 0);
		cr_assert_eq(game_move_count(g), d.n_moves);
		free(g);
		free(blob);
		free(blob2);
		record_free(&r);
		record_free(&d);
	}
}

Test(record, round_trip_go9)
{
	round_trip(GAME_KIND_GO, 9, 40, 400, 11);
}

Test(record, round_trip_go19)
{
	round_trip(GAME_KIND_GO, 19, 6, 700, 12);
}

Test(record, round_trip_connect4)
{
	round_trip(GAME_KIND_CONNECT4, 7, 200, 100, 13);
}

Test(record, empty_record_round_trips)
{
	game_params p = game_params_default(GAME_KIND_GO);
	game_record r, d;
	record_init(&r, &p);
	uint8_t *blob;
	size_t len;
	cr_assert_eq(record_encode(&r, &blob, &len), 0);
	cr_assert_eq(record_decode(blob, len, &d, NULL, 0), 0);
	cr_assert_eq(d.n_moves, 0);
	cr_assert_eq(d.params.size, 19);
	cr_assert_eq(d.resigned, -1);
	free(blob);
	record_free(&d);
	record_free(&r);
	record_free(NULL);
}

Test(record, add_move_refuses_bad_arguments)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_record r;
	record_init(&r, &p);
	record_visit dup[2] = { { 3, 10 }, { 3, 5 } }, out[1] = { { 7, 1 } };
	cr_assert_eq(record_add_move(&r, 7, true, 0, NULL, 0), -1, "column 7 does not exist");
	cr_assert_eq(record_add_move(&r, 3, true, 0, dup, 2), -1, "repeated visit move");
	cr_assert_eq(record_add_move(&r, 3, true, 0, out, 1), -1, "visit move out of range");
	cr_assert_eq(r.n_moves, 0);
	cr_assert_eq(r.n_visits, 0);
	record_visit ok[3] = { { 5, 1 }, { 0, 7 }, { 3, 2 } };
	cr_assert_eq(record_add_move(&r, 3, true, 0.25f, ok, 3), 0);
	cr_assert_eq(r.visits[0].move, 0, "sorted by move");
	cr_assert_eq(r.visits[2].move, 5);
	cr_assert_eq(record_full_count(&r), 1);
	record_free(&r);
}

/* A small Connect Four blob for the corruption tests. */
static void small_blob(uint8_t **blob, size_t *len, uint64_t seed)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	uint64_t rng = seed;
	game_record r;
	random_record(&r, &p, &rng, 12, 60, 7);
	cr_assert_eq(record_encode(&r, blob, len), 0);
	record_free(&r);
}

Test(record, every_truncation_is_refused)
{
	uint8_t *blob;
	size_t len;
	small_blob(&blob, &len, 21);
	for (size_t n = 0; n < len; n++) {
		/* A copy of exactly n bytes, so ASan sees any read past it. */
		uint8_t *t = malloc(n ? n : 1);
		memcpy(t, blob, n);
		game_record d;
		char err[256] = "";
		cr_assert_eq(record_decode(t, n, &d, err, sizeof(err)), -1, "truncated to %zu of %zu", n, len);
		cr_assert(err[0], "a message for length %zu", n);
		cr_assert_eq(d.n_moves, 0);
		record_free(&d);
		free(t);
	}
	free(blob);
}

Test(record, byte_flips_are_refused)
{
	uint8_t *blob;
	size_t len;
	small_blob(&blob, &len, 22);
	uint64_t rng = 99;
	uint8_t *t = malloc(len);
	for (int trial = 0; trial < 3000; trial++) {
		memcpy(t, blob, len);
		size_t at = xs(&rng) % len;
		t[at] ^= (uint8_t)(1 + xs(&rng) % 255);
		game_record d;
		char err[256];
		cr_assert_eq(record_decode(t, len, &d, err, sizeof(err)), -1, "flip at %zu accepted", at);
		record_free(&d);
	}
	free(t);
	free(blob);
}

/* Rewrites the trailing CRC so that the parser, not the checksum, must
 * catch what is wrong. */
static void fix_crc(uint8_t *b, size_t len)
{
	uint32_t c = (uint32_t)crc32(0L, b, (uInt)(len - 4));
	for (int i = 0; i < 4; i++)
		b[len - 4 + i] = (uint8_t)(c >> (8 * i));
}

Test(record, crafted_blobs_with_valid_crc_never_crash)
{
	uint64_t rng = 5;
	game_params p9 = { GAME_KIND_GO, 9, 7.5 };
	for (int trial = 0; trial < 400; trial++) {
		game_record r;
		if (trial % 2)
			random_record(&r, &p9, &rng, 30, 50, 10);
		else
			random_record(&r, &(game_params){ GAME_KIND_CONNECT4, 7, 0 }, &rng, 20, 50, 5);
		uint8_t *blob;
		size_t len;
		cr_assert_eq(record_encode(&r, &blob, &len), 0);
		record_free(&r);
		/* A few random bytes after the version changed, and sometimes
		 * the length cut, with a checksum that matches. */
		int flips = 1 + (int)(xs(&rng) % 4);
		for (int f = 0; f < flips; f++)
			blob[5 + xs(&rng) % (len - 9)] = (uint8_t)xs(&rng);
		size_t n = xs(&rng) % 3 == 0 ? 9 + xs(&rng) % (len - 8) : len;
		uint8_t *t = malloc(n);
		memcpy(t, blob, n);
		fix_crc(t, n);
		game_record d;
		char err[256];
		if (record_decode(t, n, &d, err, sizeof(err)) == 0) {
			/* Accepted: then it must be a consistent record. */
			uint8_t *again;
			size_t alen;
			cr_assert_eq(record_encode(&d, &again, &alen), 0);
			game_record d2;
			cr_assert_eq(record_decode(again, alen, &d2, err, sizeof(err)), 0, "%s", err);
			assert_same(&d, &d2);
			record_free(&d2);
			free(again);
		} else {
			cr_assert(err[0]);
		}
		record_free(&d);
		free(t);
		free(blob);
	}
	/* Pure noise behind a valid header. */
	for (int trial = 0; trial < 2000; trial++) {
		size_t n = 9 + xs(&rng) % 64;
		uint8_t *t = malloc(n);
		for (size_t i = 0; i < n; i++)
			t[i] = (uint8_t)xs(&rng);
		memcpy(t, "SREC\x01", 5);
		fix_crc(t, n);
		game_record d;
		record_decode(t, n, &d, NULL, 0);
		record_free(&d);
		free(t);
	}
}

Test(record, refusals_say_why)
{
	uint8_t *blob;
	size_t len;
	char err[256];
	game_record d;
	small_blob(&blob, &len, 23);

	blob[4] = RECORD_VERSION + 1;
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), -1);
	cr_assert(strstr(err, "newer") && strstr(err, "upgrade sente"), "%s", err);
	blob[4] = RECORD_VERSION;

	blob[0] = 'X';
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), -1);
	cr_assert(strstr(err, "magic"), "%s", err);
	blob[0] = 'S';

	blob[len / 2] ^= 1;
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), -1);
	cr_assert(strstr(err, "checksum"), "%s", err);
	free(blob);

	/* Seven discs in one column: the seventh is illegal. */
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_record r;
	record_init(&r, &p);
	for (int i = 0; i < 7; i++)
		cr_assert_eq(record_add_move(&r, 0, false, 0, NULL, 0), 0);
	cr_assert_eq(record_encode(&r, &blob, &len), 0);
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), -1);
	cr_assert(strstr(err, "move 7 (1) is illegal"), "%s", err);
	free(blob);
	record_free(&r);
}

/* 60 moves of 9x9, 30 of them full searches with 20 children each: one
 * child takes most of ~800 visits, the others 1..100. The bytes: header
 * 19, moves 61, flags 8, values 60, per-move entry counts 60, 600 entries
 * of 1 byte of move delta and 1 (2 for the big one) of count, CRC 4: about
 * 1.45 KB. Fixed-width int16 pairs alone would take 2.4 KB. */
Test(record, compact_encoding)
{
	game_params p = { GAME_KIND_GO, 9, 7.5 };
	game *g = malloc(sizeof(*g));
	cr_assert_eq(game_init(g, &p), GAME_OK);
	game_record r;
	record_init(&r, &p);
	uint64_t rng = 77;
	int legal[GAME_MAX_ACTIONS];
	record_visit v[20];
	for (int i = 0; i < 60; i++) {
		int n = game_legal_moves(g, legal) - 1; /* no pass */
		cr_assert(n >= 20);
		int mv = legal[xs(&rng) % (uint64_t)n];
		int nv = 0;
		if (i % 2 == 0) {
			for (int k = 0; k < 20; k++) {
				v[nv].move = (int16_t)legal[(k * n) / 20];
				v[nv].count = (uint16_t)(k == 0 ? 300 + xs(&rng) % 300 : 1 + xs(&rng) % 100);
				nv++;
			}
		}
		cr_assert_eq(record_add_move(&r, mv, i % 2 == 0, 0.1f, v, nv), 0);
		cr_assert_eq(game_play(g, mv), GAME_OK);
	}
	uint8_t *blob;
	size_t len;
	cr_assert_eq(record_encode(&r, &blob, &len), 0);
	cr_assert_eq(record_full_count(&r), 30);
	cr_assert_eq(r.n_visits, 600);
	cr_assert(len < 1500, "60-move record with 600 visit entries took %zu bytes", len);
	cr_log_info("60-move 9x9 record, 600 visit entries: %zu bytes", len);
	free(blob);
	record_free(&r);
	free(g);
}

/* record_copy: every field, root values exact (no blob rounding), the copy
 * independent of the original; an empty record copies too. */
Test(record, copy_is_deep_and_exact)
{
	game_params p = game_params_default(GAME_KIND_GO);
	p.size = 9;
	uint64_t rng = 21;
	for (int n = 0; n < 20; n++) {
		game_record r, c;
		random_record(&r, &p, &rng, 200, 50, 30);
		cr_assert_eq(record_copy(&c, &r), 0);
		assert_same(&r, &c);
		for (int i = 0; i < r.n_moves; i++)
			cr_assert(isnan(r.root_value[i]) ? isnan(c.root_value[i])
							 : r.root_value[i] == c.root_value[i]);
		cr_assert_eq(c.visit_start[0], 0);
		if (r.n_moves) {
			cr_assert_neq(c.moves, r.moves, "a copy, not shared arrays");
			int16_t m = r.moves[0];
			r.moves[0] = (int16_t)(m + 1);
			cr_assert_eq(c.moves[0], m);
			r.moves[0] = m;
		}
		record_free(&r);
		/* The copy lives on: it still encodes and replays. */
		game *g = malloc(sizeof(*g));
		cr_assert_eq(record_replay(&c, -1, g), 0);
		free(g);
		record_free(&c);
	}
	game_record e, ec;
	record_init(&e, &p);
	cr_assert_eq(record_copy(&ec, &e), 0);
	cr_assert_eq(ec.n_moves, 0);
	cr_assert_eq(ec.resigned, -1);
	cr_assert_eq(ec.params.size, 9);
	record_free(&ec);
}

/* The policy entropy of a game: the visit distributions of its full
 * searches only (an even split of two moves is ln 2, one move 0). */
Test(record, policy_entropy_of_full_searches)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game_record r;
	record_init(&r, &p);
	record_visit even[2] = { { 3, 50 }, { 2, 50 } }, one[1] = { { 4, 100 } };
	record_visit skew[2] = { { 0, 1 }, { 1, 3 } };
	cr_assert_eq(record_add_move(&r, 3, true, 0.1f, even, 2), 0);
	cr_assert_eq(record_add_move(&r, 4, true, 0.1f, one, 1), 0);
	cr_assert_eq(record_add_move(&r, 1, false, 0.1f, skew, 2), 0); /* not a target */
	int n = -1;
	double h = record_policy_entropy(&r, &n);
	cr_assert_eq(n, 2);
	cr_assert_float_eq(h, log(2.0), 1e-12, "%g", h);
	cr_assert_eq(record_add_move(&r, 0, true, 0.1f, skew, 2), 0);
	h = record_policy_entropy(&r, &n);
	cr_assert_eq(n, 3);
	cr_assert_float_eq(h, log(2.0) - 0.25 * log(0.25) - 0.75 * log(0.75), 1e-12, "%g", h);
	record_free(&r);
}

/* The policy target's kind travels with the record (version 2), and the
 * exploring-move flags (version 3); a version 2 blob, which has no flags,
 * decodes with none, and a version 1 blob, which has no kind either, as
 * visits; an unknown kind is refused. */
Test(record, target_kind_round_trips_and_versions_1_and_2_still_load)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	uint64_t rng = 5;
	game_record r, d;
	random_record(&r, &p, &rng, 12, 60, 7);
	r.target = RECORD_TARGET_IMPROVED;
	uint8_t *blob;
	size_t len;
	char err[256];
	cr_assert_eq(record_encode(&r, &blob, &len), 0);
	cr_assert_eq(blob[4], RECORD_VERSION);
	cr_assert_eq(blob[4], 3);
	int explored = 0;
	for (int i = 0; i < r.n_moves; i++)
		explored += r.explored[i];
	cr_assert(explored > 0 && explored < r.n_moves, "the game has flags to carry");
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), 0, "%s", err);
	assert_same(&r, &d);
	record_free(&d);
	/* The same game as version 2 wrote it: the flags (after magic,
	 * version, kind, size, komi, result, resignation, score and target:
	 * byte 19 for Connect Four's one-byte komi; then the one-byte move
	 * count, a byte per move and the full-search flags) taken out. */
	int n = r.n_moves, flags = (n + 7) / 8, at = 19 + 1 + n + flags;
	cr_assert_lt(n, 128);
	size_t len2 = len - (size_t)flags;
	uint8_t *v2 = malloc(len2);
	memcpy(v2, blob, (size_t)at);
	memcpy(v2 + at, blob + at + flags, len - (size_t)at - (size_t)flags);
	v2[4] = 2;
	fix_crc(v2, len2);
	cr_assert_eq(record_decode(v2, len2, &d, err, sizeof(err)), 0, "%s", err);
	memset(r.explored, 0, (size_t)n);
	assert_same(&r, &d);
	record_free(&d);
	/* As version 1 wrote it: the target byte (byte 18) taken out too. */
	uint8_t *v1 = malloc(len2 - 1);
	memcpy(v1, v2, 18);
	memcpy(v1 + 18, v2 + 19, len2 - 19);
	v1[4] = 1;
	fix_crc(v1, len2 - 1);
	cr_assert_eq(record_decode(v1, len2 - 1, &d, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(d.target, RECORD_TARGET_VISITS);
	r.target = RECORD_TARGET_VISITS;
	assert_same(&r, &d);
	record_free(&d);
	free(v2);
	blob[18] = 7;
	fix_crc(blob, len);
	cr_assert_eq(record_decode(blob, len, &d, err, sizeof(err)), -1);
	cr_assert(strstr(err, "target kind"), "%s", err);
	record_free(&d);
	free(v1);
	free(blob);
	record_free(&r);
}
