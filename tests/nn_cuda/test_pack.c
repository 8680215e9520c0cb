/* The host side of the CUDA backend, which needs no device: compact
 * planes, fp16 conversion, and the weight layouts the device reads. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/pack.h"
#include "nn/encode.h"

static uint64_t pk_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n positions of random play, encoded; returns the planes (malloc'd). */
static float *pk_positions(const game_params *gp, nn_encoding enc, int n, uint64_t seed)
{
	static game g;
	int moves[GAME_MAX_ACTIONS];
	uint64_t s = seed | 1;
	cr_assert_eq(game_init(&g, gp), GAME_OK);
	size_t in_n = (size_t)nn_encoding_planes(enc) * game_width(&g) * game_height(&g);
	float *planes = malloc(sizeof(float) * in_n * n);
	cr_assert(planes);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(game_init(&g, gp), GAME_OK);
		int len = (int)(pk_rng(&s) % 80);
		for (int m = 0; m < len; m++) {
			int k = game_legal_moves(&g, moves);
			if (k == 0 || game_is_over(&g))
				break;
			int mv = moves[pk_rng(&s) % (uint64_t)k];
			if (mv == game_pass_move(&g) && k > 1)
				mv = moves[0];
			cr_assert_eq(game_play(&g, mv), GAME_OK);
		}
		cr_assert_gt(nn_encode(&g, enc, planes + (size_t)i * in_n), 0);
	}
	return planes;
}

static void pk_roundtrip(const game_params *gp, nn_encoding enc, int n)
{
	int planes = nn_encoding_planes(enc);
	int hw = gp->kind == GAME_KIND_GO ? gp->size * gp->size : 42;
	size_t in_n = (size_t)planes * hw;
	float *in = pk_positions(gp, enc, n, 99);
	uint32_t *packed = malloc(sizeof(uint32_t) * nn_pack_stride(planes, hw) * n);
	float *back = malloc(sizeof(float) * in_n * n);
	int cp = nn_pad8(planes);
	float *nhwc = malloc(sizeof(float) * (size_t)hw * cp * n);
	cr_assert(packed && back && nhwc);
	cr_assert(nn_pack_planes(n, planes, hw, in, packed), "real encodings pack");
	nn_unpack_planes(n, planes, hw, packed, back);
	cr_assert(memcmp(in, back, sizeof(float) * in_n * n) == 0, "unpack restores every plane");
	nn_unpack_planes_nhwc(n, planes, hw, cp, packed, nhwc);
	for (int b = 0; b < n; b++)
		for (int p = 0; p < hw; p++)
			for (int c = 0; c < cp; c++) {
				float want = c < planes ? in[((size_t)b * planes + c) * hw + p] : 0.0f;
				cr_assert_eq(nhwc[((size_t)b * hw + p) * cp + c], want, "nhwc n %d p %d c %d", b,
					     p, c);
			}
	/* The point of it: much less to upload. */
	cr_assert_lt(nn_pack_stride(planes, hw) * 4 * 8, in_n * 4);
	free(in);
	free(packed);
	free(back);
	free(nhwc);
}

Test(nn_cuda_pack, go19_lz18_roundtrip)
{
	game_params gp = game_params_default(GAME_KIND_GO);
	pk_roundtrip(&gp, NN_ENC_LZ18, 9);
}

Test(nn_cuda_pack, go9_native_with_komi_roundtrip)
{
	game_params gp = game_params_default(GAME_KIND_GO);
	gp.size = 9;
	gp.komi = 6.5;
	pk_roundtrip(&gp, NN_ENC_GO_NATIVE, 7);
}

Test(nn_cuda_pack, connect4_roundtrip)
{
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	pk_roundtrip(&gp, NN_ENC_C4, 5);
}

Test(nn_cuda_pack, plane_with_two_values_is_refused)
{
	float in[2 * 40] = { 0 };
	uint32_t out[2 * 3];
	in[3] = 1.0f;
	in[40 + 5] = 0.5f; /* one value per plane is fine */
	in[40 + 39] = 0.5f;
	cr_assert(nn_pack_planes(1, 2, 40, in, out));
	in[40 + 7] = 0.25f;
	cr_assert_not(nn_pack_planes(1, 2, 40, in, out));
}

/* The plain definition of a packed plane, point by point: the value is
 * the first non-zero one, a bit per non-zero point, and a plane holding
 * two different non-zero values does not pack. */
static bool pk_reference_plane(const float *p, int hw, uint32_t *mask, float *value)
{
	float v = 0.0f;
	memset(mask, 0, sizeof(uint32_t) * (size_t)nn_pack_words(hw));
	for (int i = 0; i < hw; i++) {
		if (p[i] == 0.0f)
			continue;
		if (v == 0.0f)
			v = p[i];
		else if (p[i] != v)
			return false;
		mask[i >> 5] |= 1u << (i & 31);
	}
	*value = v;
	return true;
}

/* Random planes of every density, at board sizes whose point counts end
 * a mask word early (42, 81, 361) or exactly (64), against the reference;
 * a second value planted anywhere, the last point included, is refused. */
Test(nn_cuda_pack, random_planes_match_the_plain_definition)
{
	static const int sizes[] = { 42, 64, 81, 361 };
	static const float values[] = { 1.0f, 0.5f, -2.0f, 7.5f };
	uint64_t s = 12345;
	float in[4 * 361];
	uint32_t out[4 * (1 + 12)], mask[12];
	for (int si = 0; si < 4; si++) {
		int hw = sizes[si], words = nn_pack_words(hw);
		for (int trial = 0; trial < 200; trial++) {
			int density = (int)(pk_rng(&s) % 101); /* percent of points set */
			for (int c = 0; c < 4; c++) {
				float v = values[(c + trial) % 4];
				for (int i = 0; i < hw; i++)
					in[c * hw + i] = (int)(pk_rng(&s) % 100) < density ? v : 0.0f;
			}
			int plant = trial % 3 == 0;
			int pc = (int)(pk_rng(&s) % 4), pi = trial % 6 == 0 ? hw - 1 : (int)(pk_rng(&s) % hw);
			if (plant)
				in[pc * hw + pi] = 3.25f; /* no plane's own value */
			bool want = true;
			for (int c = 0; c < 4; c++) {
				float v;
				if (!pk_reference_plane(in + c * hw, hw, mask, &v)) {
					want = false;
					break;
				}
			}
			bool got = nn_pack_planes(1, 4, hw, in, out);
			cr_assert_eq(got, want, "hw %d trial %d: packs %d, the definition says %d", hw,
				     trial, got, want);
			if (!want)
				continue;
			for (int c = 0; c < 4; c++) {
				float v, gv;
				pk_reference_plane(in + c * hw, hw, mask, &v);
				memcpy(&gv, &out[c], sizeof(gv));
				cr_assert_eq(gv, v, "hw %d trial %d plane %d: value", hw, trial, c);
				cr_assert(memcmp(out + 4 + c * words, mask, sizeof(uint32_t) * words) == 0,
					  "hw %d trial %d plane %d: mask", hw, trial, c);
			}
		}
	}
}

Test(nn_cuda_pack, half_known_values)
{
	static const struct {
		float f;
		uint16_t h;
	} cases[] = {
		{ 0.0f, 0x0000 },           { -0.0f, 0x8000 },        { 1.0f, 0x3c00 },
		{ -2.0f, 0xc000 },          { 0.5f, 0x3800 },         { 65504.0f, 0x7bff },
		{ 65520.0f, 0x7c00 },       { 1e10f, 0x7c00 },        { 0x1p-24f, 0x0001 },
		{ 0x1p-25f, 0x0000 },       { 0x1.8p-25f, 0x0001 },   { 0x1p-14f, 0x0400 },
		{ 0x1.ffcp-15f, 0x0400 }, { 0x1.ff8p-15f, 0x03ff },{ 1.0f + 0x1p-11f, 0x3c00 }, /* tie: even */
		{ 1.0f + 0x3p-11f, 0x3c02 }, /* tie: even, up */
		{ 1.0f + 0x1.2p-11f, 0x3c01 }, { 0.1f, 0x2e66 },     { INFINITY, 0x7c00 },
		{ -INFINITY, 0xfc00 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(nn_half_from_float(cases[i].f), cases[i].h, "%a -> 0x%04x, want 0x%04x",
			     (double)cases[i].f, nn_half_from_float(cases[i].f), cases[i].h);
	cr_assert(isnan(nn_float_from_half(nn_half_from_float(NAN))));
}

Test(nn_cuda_pack, half_roundtrip_and_nearest)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue; /* NaN */
		cr_assert_eq(nn_half_from_float(nn_float_from_half((uint16_t)h)), h, "0x%04x", h);
	}
	uint64_t s = 5;
	for (int i = 0; i < 200000; i++) {
		/* Floats across the half range, subnormals included. */
		double mag = ldexp((double)(pk_rng(&s) % 1000000) / 1e6, (int)(pk_rng(&s) % 44) - 28);
		float f = (float)((pk_rng(&s) & 1) ? -mag : mag);
		uint16_t h = nn_half_from_float(f);
		double got = fabs((double)nn_float_from_half(h) - f);
		for (int d = -1; d <= 1; d += 2) {
			uint16_t nb = (uint16_t)(h + d);
			if ((h & 0x7fff) == 0 || (nb & 0x7c00) == 0x7c00)
				continue;
			double other = fabs((double)nn_float_from_half(nb) - f);
			cr_assert(got <= other, "%a: 0x%04x is not the nearest half", (double)f, h);
		}
	}
}

Test(nn_cuda_pack, conv_to_krsc)
{
	enum { CO = 3, CI = 5, K = 3, COP = 8, CIP = 8 };
	float w[CO * CI * K * K], out[COP * K * K * CIP];
	for (int i = 0; i < CO * CI * K * K; i++)
		w[i] = (float)(i + 1);
	nn_conv_to_krsc(w, CO, CI, K, COP, CIP, out);
	for (int o = 0; o < COP; o++)
		for (int r = 0; r < K; r++)
			for (int s = 0; s < K; s++)
				for (int i = 0; i < CIP; i++) {
					float want = o < CO && i < CI ? w[((o * CI + i) * K + r) * K + s] : 0.0f;
					cr_assert_eq(out[((o * K + r) * K + s) * CIP + i], want);
				}
}

/* The permuted FC applied to NHWC activations gives what the original FC
 * gives on the NCHW flattening. */
Test(nn_cuda_pack, fc_reads_nhwc_like_nchw)
{
	enum { NO = 5, C = 2, HW = 13, CP = 8 };
	float w[NO * C * HW], wp[NO * HW * CP], x[C * HW], xn[HW * CP];
	uint64_t s = 3;
	for (int i = 0; i < NO * C * HW; i++)
		w[i] = (float)(pk_rng(&s) % 17) - 8.0f;
	for (int i = 0; i < C * HW; i++)
		x[i] = (float)(pk_rng(&s) % 11) - 5.0f;
	for (int p = 0; p < HW; p++)
		for (int c = 0; c < CP; c++)
			xn[p * CP + c] = c < C ? x[c * HW + p] : 1e6f; /* padding must not count */
	nn_fc_nchw_to_nhwc(w, NO, C, HW, CP, wp);
	for (int o = 0; o < NO; o++) {
		double a = 0, b = 0;
		for (int i = 0; i < C * HW; i++)
			a += (double)w[o * C * HW + i] * x[i];
		for (int i = 0; i < HW * CP; i++)
			b += (double)wp[o * HW * CP + i] * (i % CP < C ? xn[i] : 0.0f);
		cr_assert_eq(a, b, "output %d", o);
		for (int i = 0; i < HW * CP; i++)
			if (i % CP >= C)
				cr_assert_eq(wp[o * HW * CP + i], 0.0f);
	}
}
