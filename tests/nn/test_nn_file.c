/* .sente model files: exact round trip, and every kind of damage refused
 * with a clear message (no crash, no leak: run under `make asan`). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "nn/backend.h"
#include "engine/game_desc.h"
#include "nn/net.h"
#include "tests/mem_limit.h"
#include "tests/no_temporary.h"

static char mf_dir[64];

static void mf_setup(void)
{
	strcpy(mf_dir, "/tmp/sente_nn_file_XXXXXX");
	cr_assert(mkdtemp(mf_dir));
}

static void mf_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", mf_dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(nn_file, .init = mf_setup, .fini = mf_teardown);

static nn_net *small_net(game_kind kind, uint64_t seed)
{
	game_params p = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		p.size = 7;
	nn_arch a = nn_arch_default(&p, 2, 4);
	a.block_kind[1] = NN_BLOCK_SE;
	a.se_channels = 2;
	a.value_hidden = 8;
	char err[256];
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	net->meta.train_step = 123456789012ull;
	net->meta.created = 1700000000;
	strcpy(net->meta.parent, "parent-model-hash");
	strcpy(net->meta.name, "child");
	return net;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*len);
	cr_assert(b && fread(b, 1, *len, f) == *len);
	fclose(f);
	return b;
}

static void put_crc(uint8_t *b, size_t len)
{
	uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(len - 4));
	memcpy(b + len - 4, &c, 4);
}

Test(nn_file, round_trip_is_exact)
{
	char path[128], err[256];
	for (int k = 0; k < 2; k++) {
		nn_net *net = small_net(k ? GAME_KIND_CONNECT4 : GAME_KIND_GO, 3 + k);
		if (k)
			nn_net_fold_bn(net);
		snprintf(path, sizeof(path), "%s/m%d.sente", mf_dir, k);
		cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
		cr_assert(no_temporary(path), "the temporary file is gone");
		nn_net *back = nn_net_load(path, NULL, err, sizeof(err));
		cr_assert(back, "%s", err);
		cr_assert(memcmp(&back->arch, &net->arch, sizeof(net->arch)) == 0);
		cr_assert_eq(back->n_floats, net->n_floats);
		cr_assert(memcmp(back->data, net->data, net->n_floats * sizeof(float)) == 0);
		cr_assert_eq(back->bn_folded, net->bn_folded);
		cr_assert_eq(back->meta.train_step, net->meta.train_step);
		cr_assert_eq(back->meta.created, net->meta.created);
		cr_assert_str_eq(back->meta.parent, "parent-model-hash");
		cr_assert_str_eq(back->meta.name, "child");
		/* Saving the loaded net gives the same bytes. */
		char path2[140];
		snprintf(path2, sizeof(path2), "%s/again%d.sente", mf_dir, k);
		cr_assert_eq(nn_net_save(back, path2, err, sizeof(err)), 0, "%s", err);
		size_t l1, l2;
		uint8_t *b1 = slurp(path, &l1), *b2 = slurp(path2, &l2);
		cr_assert(l1 == l2 && memcmp(b1, b2, l1) == 0);
		free(b1);
		free(b2);
		nn_net_free(back);
		nn_net_free(net);
	}
}

Test(nn_file, damage_is_refused)
{
	char path[128], err[512];
	nn_net *net = small_net(GAME_KIND_GO, 8);
	snprintf(path, sizeof(path), "%s/m.sente", mf_dir);
	cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
	size_t len;
	uint8_t *good = slurp(path, &len);
	uint8_t *b = malloc(len);
	cr_assert(b);

	/* Every truncation. */
	for (size_t cut = 0; cut < len; cut++) {
		nn_net *n = nn_net_load_mem(good, cut, NULL, err, sizeof(err));
		cr_assert_null(n, "loaded a file cut at %zu of %zu", cut, len);
		cr_assert(cut < 8 || strstr(err, "truncated"), "cut %zu: %s", cut, err);
	}
	/* A truncated file on disk, through the path API. */
	FILE *f = fopen(path, "wb");
	fwrite(good, 1, len / 2, f);
	fclose(f);
	cr_assert_null(nn_net_load(path, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "truncated") && strstr(err, path), "%s", err);

	/* Every single flipped byte. */
	for (size_t i = 0; i < len; i++) {
		memcpy(b, good, len);
		b[i] ^= 0x5a;
		nn_net *n = nn_net_load_mem(b, len, NULL, err, sizeof(err));
		cr_assert_null(n, "loaded a file with byte %zu flipped", i);
	}
	memcpy(b, good, len);
	b[len / 2] ^= 1;
	cr_assert_null(nn_net_load_mem(b, len, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "checksum"), "%s", err);

	/* Bad magic. */
	memcpy(b, good, len);
	memcpy(b, "NOTANET!", 8);
	cr_assert_null(nn_net_load_mem(b, len, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "not a sente model"), "%s", err);

	/* Another version, even with a valid checksum. */
	memcpy(b, good, len);
	b[8] = 7;
	put_crc(b, len);
	cr_assert_null(nn_net_load_mem(b, len, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "version 7"), "%s", err);

	/* A NaN weight with a valid checksum. */
	memcpy(b, good, len);
	float nan = NAN;
	memcpy(b + len - 4 - 4 * 10, &nan, 4);
	put_crc(b, len);
	cr_assert_null(nn_net_load_mem(b, len, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "nan"), "%s", err);
	/* And an infinite one. */
	float inf = INFINITY;
	memcpy(b + len - 4 - 4 * 10, &inf, 4);
	put_crc(b, len);
	cr_assert_null(nn_net_load_mem(b, len, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "inf"), "%s", err);

	/* Trailing bytes. */
	uint8_t *longer = malloc(len + 3);
	memcpy(longer, good, len);
	memset(longer + len, 0, 3);
	cr_assert_null(nn_net_load_mem(longer, len + 3, NULL, err, sizeof(err)));
	free(longer);

	/* The intact file loads, but not as Connect Four or as 19x19. */
	nn_expect go7 = { .game = GAME_KIND_GO, .board_w = 7, .board_h = 7 };
	nn_expect c4 = { .game = GAME_KIND_CONNECT4 };
	nn_expect go19 = { .game = GAME_KIND_GO, .board_w = 19, .board_h = 19 };
	net = nn_net_load_mem(good, len, &go7, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_free(net);
	cr_assert_null(nn_net_load_mem(good, len, &c4, err, sizeof(err)));
	cr_assert(strstr(err, "connect4"), "%s", err);
	cr_assert_null(nn_net_load_mem(good, len, &go19, err, sizeof(err)));
	cr_assert(strstr(err, "19x19"), "%s", err);

	/* Saving a NaN is refused and leaves the old file alone. */
	net = nn_net_load_mem(good, len, NULL, err, sizeof(err));
	cr_assert(net);
	net->data[3] = NAN;
	f = fopen(path, "wb");
	fwrite(good, 1, len, f);
	fclose(f);
	cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), -1);
	size_t l2;
	uint8_t *after = slurp(path, &l2);
	cr_assert(l2 == len && memcmp(after, good, len) == 0);
	free(after);
	nn_net_free(net);
	net = small_net(GAME_KIND_GO, 1);
	cr_assert_eq(nn_net_save(net, "/nonexistent/dir/m.sente", err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot create"), "%s", err);
	nn_net_free(net);
	free(b);
	free(good);
}

Test(nn_file, architecture_is_checked)
{
	char err[256];
	game_params p = { .kind = GAME_KIND_GO, .size = 9, .komi = 7.5 };
	nn_arch a = nn_arch_default(&p, 2, 8);
	a.value_outputs = 2;
	cr_assert_null(nn_net_new(&a, err, sizeof(err)));
	cr_assert(strstr(err, "value"), "%s", err);
	a = nn_arch_default(&p, 2, 8);
	a.encoding = NN_ENC_C4;
	cr_assert_null(nn_net_new(&a, err, sizeof(err)));
	a = nn_arch_default(&p, 2, 8);
	a.block_kind[0] = NN_BLOCK_POOL;
	cr_assert_null(nn_net_new(&a, err, sizeof(err)));
	cr_assert(strstr(err, "block 0"), "%s", err);
	a = nn_arch_default(&p, 2, 8);
	a.policy_outputs = 81;
	cr_assert_null(nn_net_new(&a, err, sizeof(err)));
	nn_net_free(NULL);
}

/* In the child of mem_limit_run: a model whose header asks for the largest
 * architecture but holds no floats must be refused for its count. */
static int huge_header_child(void *arg)
{
	const uint8_t *b = arg;
	size_t len = 8 + 8 + 200 + NN_MAX_BLOCKS + 8 + 4;
	char err[512];
	nn_net *net = nn_net_load_mem(b, len, NULL, err, sizeof(err));
	if (net)
		return 2;
	fprintf(stderr, "huge header: %s\n", err);
	return strstr(err, "floats") ? 0 : 3;
}

Test(nn_file, a_header_is_checked_against_the_float_count_before_allocating)
{
	/* A valid checksum over a header of 80 blocks x 1024 channels (about
	 * 6 GB of weights) followed by a count of 0 floats. */
	nn_arch a = nn_arch_lz(19, NN_MAX_BLOCKS, NN_MAX_CHANNELS);
	char err[256];
	cr_assert_eq(nn_arch_check(&a, err, sizeof(err)), 0, "%s", err);
	uint32_t f[14] = { (uint32_t)a.game, (uint32_t)a.board_w, (uint32_t)a.board_h,
			   (uint32_t)a.encoding, (uint32_t)a.in_planes, (uint32_t)a.blocks,
			   (uint32_t)a.channels, (uint32_t)a.se_channels, (uint32_t)a.policy_channels,
			   (uint32_t)a.policy_outputs, (uint32_t)a.value_channels,
			   (uint32_t)a.value_hidden, (uint32_t)a.value_outputs, 0 };
	static uint8_t b[8 + 8 + 200 + NN_MAX_BLOCKS + 8 + 4];
	uint32_t version = NN_FILE_VERSION, hlen = 200 + NN_MAX_BLOCKS;
	memcpy(b, "SENTENET", 8);
	memcpy(b + 8, &version, 4);
	memcpy(b + 12, &hlen, 4);
	memcpy(b + 16, f, sizeof(f)); /* then step, time, ids, block kinds: 0; count 0 */
	put_crc(b, sizeof(b));
	int rc = mem_limit_run(huge_header_child, b, (size_t)256 << 20);
	cr_assert_eq(rc, 0, "the header's architecture was allocated before its count was "
		     "checked (%d)", rc);
}

/* The version field of a model file's bytes. */
static uint32_t file_version(const uint8_t *b)
{
	uint32_t v;
	memcpy(&v, b + 8, 4);
	return v;
}

/* Rewrites the u32 at `at` of a model file in memory and its checksum,
 * then loads it: the message, or NULL when it loaded. */
static const char *load_patched(const uint8_t *b, size_t len, size_t at, uint32_t v, char *err,
				size_t errlen)
{
	uint8_t *c = malloc(len);
	cr_assert(c);
	memcpy(c, b, len);
	memcpy(c + at, &v, 4);
	put_crc(c, len);
	nn_net *n = nn_net_load_mem(c, len, NULL, err, errlen);
	free(c);
	if (n) {
		nn_net_free(n);
		return NULL;
	}
	return err;
}

/* A net with the opponent-reply and ownership heads is written as version
 * 2 and comes back exactly, folded or not; one without stays version 1,
 * which a sente from before the heads reads. The flags are refused in a
 * version 1 header, unknown flags and newer versions too. The CPU backend
 * ignores the heads: the same outputs as the net without them, to
 * rounding. */
Test(nn_file, heads_are_version_2_and_round_trip)
{
	char path[128], err[512];
	game_params p = game_params_default(GAME_KIND_GO);
	p.size = 7;
	nn_arch a = nn_arch_default(&p, 1, 8);
	a.opp_policy = 1;
	a.ownership = 1;
	a.score = 1;
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 41);
	cr_assert(net->opp_fc.w && net->opp_fc.n_out == a.policy_outputs &&
		  net->opp_fc.n_in == a.policy_channels * 49);
	cr_assert(net->own_fc.w && net->own_fc.n_out == 1 && net->own_fc.n_in == a.value_channels);
	cr_assert(net->score_fc.w && net->score_fc.n_out == 1 &&
		  net->score_fc.n_in == a.value_hidden);
	a.opp_policy = 0;
	a.ownership = 0;
	a.score = 0;
	cr_assert_eq(net->n_floats, nn_arch_floats(&a) +
					    (size_t)(a.policy_channels * 49 + 1) * (size_t)a.policy_outputs +
					    (size_t)a.value_channels + 1 + (size_t)a.value_hidden + 1);
	for (int folded = 0; folded < 2; folded++) {
		if (folded)
			nn_net_fold_bn(net);
		snprintf(path, sizeof(path), "%s/opp%d.sente", mf_dir, folded);
		cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
		size_t len;
		uint8_t *b = slurp(path, &len);
		cr_assert_eq(file_version(b), 2);
		nn_net *back = nn_net_load(path, NULL, err, sizeof(err));
		cr_assert(back, "%s", err);
		cr_assert(memcmp(&back->arch, &net->arch, sizeof(net->arch)) == 0);
		cr_assert(back->arch.opp_policy && back->opp_fc.w && back->arch.ownership &&
			  back->own_fc.w && back->arch.score && back->score_fc.w);
		cr_assert(memcmp(back->data, net->data, net->n_floats * sizeof(float)) == 0);
		cr_assert_eq(back->bn_folded, folded);
		nn_net_free(back);
		/* The flags word: the 14th u32 of the header, after magic,
		 * version and length. */
		size_t flags_at = 16 + 13 * 4;
		uint32_t flags;
		memcpy(&flags, b + flags_at, 4);
		cr_assert_eq(flags, (uint32_t)(2 | 4 | 8 | folded));
		const char *e = load_patched(b, len, 8, 1, err, sizeof(err));
		cr_assert(e && strstr(e, "unknown flags"), "version 1 with the head's flag: %s",
			  e ? e : "loaded");
		e = load_patched(b, len, flags_at, flags | 16, err, sizeof(err));
		cr_assert(e && strstr(e, "unknown flags"), "%s", e ? e : "loaded");
		e = load_patched(b, len, 8, NN_FILE_VERSION + 1, err, sizeof(err));
		cr_assert(e && strstr(e, "update sente"), "%s", e ? e : "loaded");
		e = load_patched(b, len, flags_at, flags & ~2u, err, sizeof(err));
		cr_assert(e && strstr(e, "floats"), "the head's floats without its flag: %s",
			  e ? e : "loaded");
		free(b);
	}
	/* No ownership head for a game without territory. */
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	nn_arch ca = nn_arch_default(&c4, 1, 8);
	ca.ownership = 1;
	cr_assert_null(nn_net_new(&ca, err, sizeof(err)));
	cr_assert(strstr(err, "no territory"), "%s", err);
	ca.ownership = 0;
	ca.score = 1;
	cr_assert_null(nn_net_new(&ca, err, sizeof(err)));
	cr_assert(strstr(err, "no score head"), "%s", err);
	/* Without the heads: version 1. */
	nn_net *plain = nn_net_new(&a, err, sizeof(err));
	cr_assert(plain, "%s", err);
	memcpy(plain->data, net->data, plain->n_floats * sizeof(float));
	plain->bn_folded = net->bn_folded;
	snprintf(path, sizeof(path), "%s/plain.sente", mf_dir);
	cr_assert_eq(nn_net_save(plain, path, err, sizeof(err)), 0, "%s", err);
	size_t len;
	uint8_t *b = slurp(path, &len);
	cr_assert_eq(file_version(b), 1);
	free(b);
	/* The CPU backend runs both alike (the head comes last in the data,
	 * so the plain net's floats are the same weights). */
	nn_backend_options o = nn_backend_options_default();
	o.threads = 1;
	nn_backend *with = nn_backend_new(&nn_backend_cpu, net, 2, &o, err, sizeof(err));
	cr_assert(with, "%s", err);
	nn_backend *without = nn_backend_new(&nn_backend_cpu, plain, 2, &o, err, sizeof(err));
	cr_assert(without, "%s", err);
	size_t in = (size_t)a.in_planes * 49;
	float *planes = malloc(sizeof(float) * 2 * in), pol[2][2 * 50], val[2][2];
	cr_assert(planes && a.policy_outputs == 50);
	for (size_t i = 0; i < 2 * in; i++)
		planes[i] = (float)((i * 7) % 3 == 0);
	cr_assert_eq(nn_backend_forward(with, 2, planes, pol[0], val[0], NULL), 0);
	cr_assert_eq(nn_backend_forward(without, 2, planes, pol[1], val[1], NULL), 0);
	/* To rounding: oneDNN's kernels may sum in another order for
	 * buffers at other alignments. */
	for (int i = 0; i < 2 * 50; i++)
		cr_assert_float_eq(pol[0][i], pol[1][i], 1e-5, "policy %d: %g, %g", i, pol[0][i],
				   pol[1][i]);
	for (int i = 0; i < 2; i++)
		cr_assert_float_eq(val[0][i], val[1][i], 1e-5);
	free(planes);
	nn_backend_free(with);
	nn_backend_free(without);
	nn_net_free(plain);
	nn_net_free(net);
}

/* A random net of arch a (seed 5) saved as mf_dir/name (its path into
 * path); the net into *net and the file's bytes, which the caller frees. */
static uint8_t *save_random(const nn_arch *a, const char *name, char *path, size_t pathlen,
			    nn_net **net, size_t *len)
{
	char err[512];
	*net = nn_net_new(a, err, sizeof(err));
	cr_assert(*net, "%s", err);
	nn_net_init_random(*net, 5);
	snprintf(path, pathlen, "%s/%s", mf_dir, name);
	cr_assert_eq(nn_net_save(*net, path, err, sizeof(err)), 0, "%s", err);
	return slurp(path, len);
}

/* A net of several board sizes: version 3 with the sizes in the flags
 * word, read back; a version 2 header with them is refused (a sente of
 * version 2 would refuse it so); its sizes are checked, and it plays each
 * of them and no other. */
Test(nn_file, board_sizes_are_version_3_and_round_trip)
{
	char path[128], err[512];
	game_params p = game_params_sized(GAME_KIND_GO, 9, 7.5);
	nn_arch a = nn_arch_default(&p, 1, 8);
	a.sizes = 1u << 7 | 1u << 9;
	nn_net *net;
	size_t len;
	uint8_t *b = save_random(&a, "sizes.sente", path, sizeof(path), &net, &len);
	cr_assert_eq(file_version(b), 3);
	nn_expect seven = { .game = GAME_KIND_GO, .board_w = 7, .board_h = 7 };
	nn_net *back = nn_net_load(path, &seven, err, sizeof(err));
	cr_assert(back, "a 7x7 game takes the net: %s", err);
	cr_assert_eq(back->arch.sizes, a.sizes);
	cr_assert(memcmp(back->data, net->data, net->n_floats * sizeof(float)) == 0);
	nn_net_free(back);
	nn_expect eight = { .game = GAME_KIND_GO, .board_w = 8, .board_h = 8 };
	cr_assert_null(nn_net_load(path, &eight, err, sizeof(err)));
	cr_assert(strstr(err, "boards 7x7, 9x9"), "%s", err);
	const char *e = load_patched(b, len, 8, 2, err, sizeof(err));
	cr_assert(e && strstr(e, "unknown flags"), "version 2 with sizes: %s", e ? e : "loaded");
	free(b);
	for (int s = 5; s <= 19; s++) {
		game_params q = game_params_sized(GAME_KIND_GO, s, 7.5);
		cr_assert_eq(nn_arch_plays(&a, &q), s == 7 || s == 9, "size %d", s);
	}
	nn_arch bad = a;
	bad.sizes = 1u << 7; /* not the frame's */
	cr_assert_null(nn_net_new(&bad, err, sizeof(err)));
	cr_assert(strstr(err, "board sizes"), "%s", err);
	bad.sizes = 1u << 9 | 1u << 11; /* larger than the frame */
	cr_assert_null(nn_net_new(&bad, err, sizeof(err)));
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	bad = nn_arch_default(&c4, 1, 8);
	bad.sizes = 1u << 7;
	cr_assert_null(nn_net_new(&bad, err, sizeof(err)));
	cr_assert(strstr(err, "no board sizes"), "%s", err);
	nn_net_free(net);
}

/* Masked pooling (nn_arch.masked_pool) is version 4's bit 4: read back as
 * written; a version 3 header with the bit is refused (a sente of version
 * 3 refuses it so), and a net of one size cannot have it. */
Test(nn_file, masked_pooling_is_version_4_and_round_trips)
{
	char path[128], err[512];
	game_params p = game_params_sized(GAME_KIND_GO, 9, 7.5);
	nn_arch a = nn_arch_default(&p, 2, 16);
	a.sizes = 1u << 7 | 1u << 9;
	nn_arch_set_se(&a, 4);
	a.masked_pool = 1;
	nn_net *net;
	size_t len;
	uint8_t *b = save_random(&a, "masked.sente", path, sizeof(path), &net, &len);
	cr_assert_eq(file_version(b), 4);
	nn_net *back = nn_net_load(path, NULL, err, sizeof(err));
	cr_assert(back, "%s", err);
	cr_assert_eq(back->arch.masked_pool, 1);
	cr_assert_eq(back->arch.sizes, a.sizes);
	cr_assert(memcmp(back->data, net->data, net->n_floats * sizeof(float)) == 0);
	nn_net_free(back);
	const char *e = load_patched(b, len, 8, 3, err, sizeof(err));
	cr_assert(e && strstr(e, "unknown flags"), "version 3 with masked pooling: %s",
		  e ? e : "loaded");
	free(b);
	nn_arch one = nn_arch_default(&p, 1, 8);
	one.masked_pool = 1;
	cr_assert_null(nn_net_new(&one, err, sizeof(err)));
	cr_assert(strstr(err, "masked pooling"), "%s", err);
	nn_net_free(net);
}
