/* pack.c: compact planes, fp16 conversion and weight layouts (pack.h).
 * Plain C with no CUDA in it: built in every configuration and tested on
 * the CPU, since the device code trusts these layouts. */
#include "nn/cuda/pack.h"

#include <string.h>

bool nn_pack_planes(int batch, int planes, int hw, const float *in, uint32_t *out)
{
	int words = nn_pack_words(hw);
	size_t stride = nn_pack_stride(planes, hw);
	for (int n = 0; n < batch; n++) {
		uint32_t *rec = out + (size_t)n * stride;
		uint32_t *mask = rec + planes;
		memset(mask, 0, sizeof(uint32_t) * (size_t)planes * (size_t)words);
		for (int c = 0; c < planes; c++) {
			const float *p = in + ((size_t)n * planes + c) * (size_t)hw;
			float v = 0.0f;
			uint32_t *m = mask + (size_t)c * words;
			for (int i = 0; i < hw; i++) {
				if (p[i] == 0.0f)
					continue;
				if (v == 0.0f)
					v = p[i];
				else if (p[i] != v)
					return false;
				m[i >> 5] |= 1u << (i & 31);
			}
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
