/* pack.c: compact planes, fp16 conversion and weight layouts (pack.h).
 * Plain C with no CUDA in it: built in every configuration and tested on
 * the CPU, since the device code trusts these layouts. */
#include "nn/cuda/pack.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Bits j of the result: x[j] != 0, for j < n (at most 32). */
static uint32_t pack_nonzero_bits(const float *x, int n)
{
	uint32_t bits = 0;
	int j = 0;
#ifdef __SSE2__
	const __m128 zero = _mm_setzero_ps();
	for (; j + 4 <= n; j += 4)
		bits |= (uint32_t)_mm_movemask_ps(_mm_cmpneq_ps(_mm_loadu_ps(x + j), zero)) << j;
#endif
	for (; j < n; j++)
		bits |= (uint32_t)(x[j] != 0.0f) << j;
	return bits;
}

/* Whether some x[i], i < n, is neither 0 nor v. */
static int pack_other_value(const float *x, int n, float v)
{
	int bad = 0, i = 0;
#ifdef __SSE2__
	const __m128 zero = _mm_setzero_ps(), vv = _mm_set1_ps(v);
	for (; i + 4 <= n; i += 4) {
		__m128 a = _mm_loadu_ps(x + i);
		bad |= _mm_movemask_ps(_mm_and_ps(_mm_cmpneq_ps(a, zero), _mm_cmpneq_ps(a, vv)));
	}
#endif
	for (; i < n; i++)
		bad |= (x[i] != 0.0f) & (x[i] != v);
	return bad;
}

/* One plane: its mask words and value, or false when two different
 * non-zero values meet. No branch per point: on positions as dense as
 * random play, a branch per point mispredicted every other time (37 us a
 * 19x19 position of 18 planes here), which held a GPU under 30k
 * positions/s whatever the network. */
static bool pack_plane(const float *p, int hw, uint32_t *m, float *value)
{
	int words = nn_pack_words(hw), first = -1;
	for (int w = 0; w < words; w++) {
		int base = w * 32;
		m[w] = pack_nonzero_bits(p + base, hw - base < 32 ? hw - base : 32);
		if (first < 0 && m[w])
			first = base + __builtin_ctz(m[w]);
	}
	*value = first < 0 ? 0.0f : p[first];
	return !pack_other_value(p, hw, *value);
}

bool nn_pack_planes(int batch, int planes, int hw, const float *in, uint32_t *out)
{
	int words = nn_pack_words(hw);
	size_t stride = nn_pack_stride(planes, hw);
	for (int n = 0; n < batch; n++) {
		uint32_t *rec = out + (size_t)n * stride;
		for (int c = 0; c < planes; c++) {
			float v;
			if (!pack_plane(in + ((size_t)n * planes + c) * (size_t)hw, hw,
					rec + planes + (size_t)c * words, &v))
				return false;
			memcpy(&rec[c], &v, sizeof(v));
		}
	}
	return true;
}

void nn_unpack_planes(int batch, int planes, int hw, const uint32_t *in, float *out)
{
	int words = nn_pack_words(hw);
	size_t stride = nn_pack_stride(planes, hw);
	for (int n = 0; n < batch; n++) {
		const uint32_t *rec = in + (size_t)n * stride;
		for (int c = 0; c < planes; c++) {
			float v;
			memcpy(&v, &rec[c], sizeof(v));
			const uint32_t *m = rec + planes + (size_t)c * words;
			float *p = out + ((size_t)n * planes + c) * (size_t)hw;
			for (int i = 0; i < hw; i++)
				p[i] = (m[i >> 5] >> (i & 31) & 1) ? v : 0.0f;
		}
	}
}

void nn_unpack_planes_nhwc(int batch, int planes, int hw, int c_pad, const uint32_t *in,
			   float *out)
{
	int words = nn_pack_words(hw);
	size_t stride = nn_pack_stride(planes, hw);
	for (int n = 0; n < batch; n++) {
		const uint32_t *rec = in + (size_t)n * stride;
		for (int i = 0; i < hw; i++)
			for (int c = 0; c < c_pad; c++) {
				float v = 0.0f;
				if (c < planes && (rec[planes + (size_t)c * words + (i >> 5)] >> (i & 31) & 1))
					memcpy(&v, &rec[c], sizeof(v));
				out[((size_t)n * hw + i) * c_pad + c] = v;
			}
	}
}

uint16_t nn_half_from_float(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t exp = (x >> 23) & 0xffu;
	uint32_t man = x & 0x7fffffu;
	if (exp == 0xff) /* Inf or NaN (keep NaN quiet and non-zero) */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		/* Subnormal half (or zero): shift the full mantissa down. */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		int shift = 14 - e; /* 13 + (1 - e) */
		uint32_t h = man >> shift;
		uint32_t rest = man & ((1u << shift) - 1);
		uint32_t halfway = 1u << (shift - 1);
		if (rest > halfway || (rest == halfway && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13);
	uint32_t rest = man & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
		h++; /* may carry into the exponent, up to Inf: still right */
	return (uint16_t)(sign | h);
}

float nn_float_from_half(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu;
	uint32_t man = h & 0x3ffu;
	uint32_t x;
	if (exp == 0x1f) {
		x = sign | 0x7f800000u | (man << 13);
	} else if (exp == 0) {
		if (man == 0) {
			x = sign;
		} else { /* subnormal: normalise */
			int e = -1;
			do {
				man <<= 1;
				e++;
			} while (!(man & 0x400u));
			x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
		}
	} else {
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	}
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

void nn_conv_to_krsc(const float *w, int c_out, int c_in, int k, int c_out_pad, int c_in_pad,
		     float *out)
{
	memset(out, 0, sizeof(float) * (size_t)c_out_pad * k * k * c_in_pad);
	for (int o = 0; o < c_out; o++)
		for (int i = 0; i < c_in; i++)
			for (int r = 0; r < k; r++)
				for (int s = 0; s < k; s++)
					out[(((size_t)o * k + r) * k + s) * c_in_pad + i] =
						w[(((size_t)o * c_in + i) * k + r) * k + s];
}

void nn_fc_nchw_to_nhwc(const float *w, int n_out, int c, int hw, int c_pad, float *out)
{
	size_t k_in = (size_t)c * hw, k_out = (size_t)c_pad * hw;
	memset(out, 0, sizeof(float) * (size_t)n_out * k_out);
	for (int o = 0; o < n_out; o++)
		for (int ch = 0; ch < c; ch++)
			for (int p = 0; p < hw; p++)
				out[o * k_out + (size_t)p * c_pad + ch] = w[o * k_in + (size_t)ch * hw + p];
}
