/* dtype.h: the one element type of the network's arithmetic, for CPU
 * inference, CUDA inference, the learners and their kernels. A plain C
 * header that nvcc includes too.
 *
 * No file stores these values (models, checkpoints and the store keep
 * fp32 weights or the name), so the order is free; the CUDA kernels take
 * them as they are. */
#ifndef SENTE_NN_DTYPE_H
#define SENTE_NN_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nn_dtype {
	NN_DTYPE_FP32 = 0, /* fp32 throughout (no TF32 on CUDA) */
	NN_DTYPE_FP16 = 1, /* CUDA: fp16 activations and weights on the tensor
			    * cores, fp32 accumulation (the learner: fp32
			    * master weights, dynamic loss scale) */
	NN_DTYPE_BF16 = 2, /* bfloat16 (CPU inference needs AVX-512 BF16; the
			    * CUDA learner: fp32 master weights, scale 1) */
	NN_DTYPE_INT8 = 3, /* CPU inference only: the tower in u8/s8 with
			    * per-channel weight scales and activation scales
			    * calibrated at create (needs AVX-512 VNNI or
			    * AVX-VNNI to be fast) */
} nn_dtype;

#define NN_DTYPE_COUNT 4

/* "fp32", "fp16", "bf16", "int8"; "?" for anything else. */
const char *nn_dtype_name(nn_dtype t);
/* The type named `name` into *out; false (and *out untouched) when name is
 * NULL or none of them. */
bool nn_dtype_from_name(const char *name, nn_dtype *out);

/* Bytes of one element of t. */
static inline size_t nn_dtype_size(nn_dtype t)
{
	return t == NN_DTYPE_FP32 ? 4 : t == NN_DTYPE_INT8 ? 1 : 2;
}

/* bfloat16 bits of f, round to nearest even (as __float2bfloat16_rn); a
 * NaN stays a quiet NaN. (IEEE half is nn_half_from_float, nn/cuda/pack.h.) */
static inline uint16_t nn_bf16_from_float(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof(x));
	if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: stay quiet and non-zero */
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
	return (uint16_t)(x >> 16);
}

/* The float whose bfloat16 bits are h (exact). */
static inline float nn_float_from_bf16(uint16_t h)
{
	uint32_t x = (uint32_t)h << 16;
	float f;
	memcpy(&f, &x, sizeof(f));
	return f;
}

#ifdef __cplusplus
}
#endif

#endif
