/* replay_elem.h: one GPU replay record, and the per-element work of turning
 * it into a training example, written once for both compilers: the device
 * kernels (replay_kernels.cu, nvcc) and the host reference
 * (gpu_replay_expand_host in gpu_replay.c, gcc) call the same functions, so
 * the two can only differ in the final rounding to fp16/bf16.
 *
 * A record is rec_words 32-bit words (one position, canonical orientation,
 * symmetry 0):
 *   [0]                 value target (float bits), side to move's view
 *   [1]                 total visits (sum of the counts below, > 0)
 *   [plane_off ..)      the input planes packed as nn/cuda/pack.h does:
 *                       `planes` float values, then planes x words masks
 *   [count_off ..)      visit counts, dense: uint16 per action, action a in
 *                       the low (a even) or high (a odd) half of word a / 2
 *
 * Why dense counts: a fixed slot of 2 bytes per action holds any search
 * without truncation (record_visit counts are uint16 already), needs no
 * second ring of variable-length entries with its own eviction, and expands
 * as a gather (out[b] = counts[inv(b)] / total) with coalesced writes and no
 * zeroing pass. Sparse (move, count) pairs would cost 4 bytes an entry plus
 * an offset: smaller only while fewer than half the actions were visited,
 * about 400 of 1668 bytes saved for a typical 19x19 search, which on an
 * 80 GB device is not worth the second ring. Bytes per position:
 *   Go 19x19 LZ18    8 + 936 + 724 = 1668     native (27 planes) 2136
 *   Go 9x9 LZ18      8 + 288 + 164 =  460     native              604
 *   Connect Four     8 +  36 +  16 =   60
 * WDL targets are not stored: like train_batch_from_position they follow
 * from the value (a record knows only the game's result).
 */
#ifndef SENTE_TRAIN_CUDA_REPLAY_ELEM_H
#define SENTE_TRAIN_CUDA_REPLAY_ELEM_H

#include <stdint.h>
#include <string.h> /* memcpy: the host pass of nvcc needs it too */

#ifdef __CUDACC__
#define SENTE_HD static inline __host__ __device__
#else
#define SENTE_HD static inline
#endif

/* The shape of a record and of its expansion; passed by value to kernels. */
typedef struct gr_dims {
	int hw;         /* board points */
	int planes;     /* input planes of the encoding */
	int words;      /* mask words per plane: ceil(hw / 32) */
	int c_pad;      /* output channels: planes rounded up to 8 */
	int n_actions;  /* policy entries */
	int n_sym;      /* symmetries of the game: 8 (Go) or 2 (Connect Four) */
	int plane_off;  /* first word of the packed planes */
	int count_off;  /* first word of the counts */
	int rec_words;  /* words per record */
} gr_dims;

enum { GR_WORD_VALUE = 0, GR_WORD_TOTAL = 1, GR_HEADER_WORDS = 2 };

SENTE_HD float gr_float_from_bits(uint32_t u)
{
#ifdef __CUDA_ARCH__
	return __uint_as_float(u);
#else
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
#endif
}

/* Visit count of action a. */
SENTE_HD uint32_t gr_count(const uint32_t *rec, const gr_dims *d, int a)
{
	return rec[d->count_off + (a >> 1)] >> ((a & 1) * 16) & 0xffffu;
}

/* Channel c of output point q of the record seen under a symmetry whose
 * inverse point table is `pt` (pt[q]: the canonical point that lands on
 * q). Padding channels are 0. */
SENTE_HD float gr_plane_elem(const uint32_t *rec, const gr_dims *d, const int16_t *pt, int q, int c)
{
	if (c >= d->planes)
		return 0.0f;
	int p = pt[q];
	const uint32_t *pl = rec + d->plane_off;
	if (pl[d->planes + c * d->words + (p >> 5)] >> (p & 31) & 1u)
		return gr_float_from_bits(pl[c]);
	return 0.0f;
}

/* Policy target of output action b under a symmetry whose inverse action
 * table is `at`: the gather form of train_batch_from_position's scatter
 * (target at sym(a) = count(a) / total), rounded the same way (the ratio in
 * double, then to float). Pass and other fixed points map to themselves. */
SENTE_HD float gr_policy_elem(const uint32_t *rec, const gr_dims *d, const int16_t *at, int b)
{
	uint32_t c = gr_count(rec, d, at[b]);
	return (float)((double)c / (double)rec[GR_WORD_TOTAL]);
}

SENTE_HD float gr_value(const uint32_t *rec) { return gr_float_from_bits(rec[GR_WORD_VALUE]); }

/* Win, draw, loss target k (0, 1, 2) from a value z, as
 * train_batch_from_position derives it. */
SENTE_HD float gr_wdl_elem(float z, int k)
{
	float a = z < 0 ? -z : z;
	return k == 0 ? (z > 0 ? z : 0.0f) : k == 2 ? (z < 0 ? -z : 0.0f) : 1.0f - a;
}

#endif
