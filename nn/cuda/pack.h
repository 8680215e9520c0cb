/* pack.h: the host side of the CUDA backend that needs no device, so that
 * it is built and tested everywhere: compact input planes for upload, fp16
 * conversion, and the weight layouts the device wants (NHWC, channel
 * counts padded to a multiple of 8 for the tensor cores).
 *
 * Compact planes. A position's planes are almost all 0/1 (stones, side to
 * move) or constant (komi). Each plane is sent as one float `value` and a
 * bit mask of ceil(H*W/32) words: the plane is `value` where a bit is set
 * and 0 elsewhere. A position is one record of NN_PACK_STRIDE floats-sized
 * slots: planes values, then planes * words mask words. For 19x19 with 18
 * planes that is 936 bytes instead of 25,992 for the floats. A plane that
 * is neither (two different non-zero values) cannot be packed; the backend
 * then uploads the floats for that batch.
 */
#ifndef SENTE_NN_CUDA_PACK_H
#define SENTE_NN_CUDA_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mask words of one plane of hw points. */
static inline int nn_pack_words(int hw) { return (hw + 31) / 32; }
/* 32-bit slots of one packed position: planes values + planes * words. */
static inline size_t nn_pack_stride(int planes, int hw)
{
	return (size_t)planes * (1 + (size_t)nn_pack_words(hw));
}
/* c rounded up to a multiple of 8 (tensor-core friendly channel count). */
static inline int nn_pad8(int c) { return (c + 7) / 8 * 8; }

/* Packs planes [batch][planes][hw] into out [batch][stride] (32-bit slots:
 * floats then mask words, see above). False when some plane holds two
 * different non-zero values (out is then partly written). */
bool nn_pack_planes(int batch, int planes, int hw, const float *in, uint32_t *out);
/* The inverse, as the device expands it: planes [batch][planes][hw]. */
void nn_unpack_planes(int batch, int planes, int hw, const uint32_t *in, float *out);
/* The same expansion into the device's input layout: NHWC
 * [batch][hw][c_pad] with channels planes..c_pad-1 zero. */
void nn_unpack_planes_nhwc(int batch, int planes, int hw, int c_pad, const uint32_t *in,
			   float *out);

/* IEEE binary16 <-> float, round to nearest even (as __float2half_rn),
 * subnormals, infinities and NaN included. */
uint16_t nn_half_from_float(float f);
float nn_float_from_half(uint16_t h);

/* Conv weights [c_out][c_in][k][k] (OIHW) into [c_out_pad][k][k][c_in_pad]
 * (cuDNN's NHWC filter layout, KRSC), zeros in the padding. */
void nn_conv_to_krsc(const float *w, int c_out, int c_in, int k, int c_out_pad, int c_in_pad,
		     float *out);
/* FC weights [n_out][c * hw] that read an NCHW-flattened input (net.h) into
 * [n_out][hw * c_pad] that read the device's NHWC activations with c_pad
 * channels, zeros for the padding channels. */
void nn_fc_nchw_to_nhwc(const float *w, int n_out, int c, int hw, int c_pad, float *out);

#ifdef __cplusplus
}
#endif

#endif
