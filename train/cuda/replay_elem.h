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
 *   [own_off]           ownership head only: 1 when the game was played out
 *                       and the codes below are its target, 0 when none
 *   [own_off + 1 ..)    ceil(hw / 16) words of 2-bit codes, point p's at bit
 *                       2 (p % 16) of word p / 16: the final owner of p from
 *                       the side to move's view, bit 0 the magnitude and bit
 *                       1 the sign (0: +0, 1: +1, 2: -0, 3: -1). The sign of
 *                       zero is kept because the CPU target (side * owner)
 *                       has it, so the two agree bit for bit; all codes are
 *                       0 when there is no target.
 *   [score_off]         score head only: the target as float bits, the final
 *                       score from the side to move's view over hw, already
 *                       rounded as train_batch_score_target rounds it; the
 *                       bits GR_SCORE_NONE (a quiet NaN, which no target
 *                       has) when there is none (a resigned game)
 *   [opp_off]           opponent-reply head only: the total of the counts
 *                       below, 0 when the position has no reply target
 *                       (the game's last move), whose counts are then 0
 *   [opp_off + 1 ..)    the reply's counts, dense as the visit counts above
 *                       (record_reply_targets: the next move's visits, or
 *                       the move played with count 1), in the same
 *                       canonical orientation, so one symmetry turns both
 *   [size_off]          a net of several board sizes only: the index of the
 *                       record's board size in the layout's list (which
 *                       symmetry tables its expansion reads)
 * own_off, score_off, opp_off and size_off are 0 without the head or the
 * sizes (word 0 is the value, so 0 can mark "absent"); a layout without
 * heads ends after the counts.
 *
 * A net of several board sizes (nn_arch.sizes): every record is FRAMED as
 * train/batch.c frames a position, in the canonical orientation: the planes
 * of nn_encode_frame (the board in the frame's lower left corner, 0 outside
 * it), the counts, ownership codes and reply counts at the frame's actions
 * (nn_frame_action), the score over the frame's points. hw and n_actions
 * are the frame's. A symmetry turns the board, not the frame, so each size
 * has its own tables: under symmetry s a frame point or action on the board
 * shows the canonical one the board's inverse symmetry gives, one off the
 * board shows itself (whose planes, counts and codes are all 0), the pass
 * stays the pass. A record of one size's net needs no size word: one set.
 *
 * Why dense counts: a fixed slot of 2 bytes per action holds any search
 * without truncation (record_visit counts are uint16 already), needs no
 * second ring of variable-length entries with its own eviction, and expands
 * as a gather (out[b] = counts[inv(b)] / total) with coalesced writes and no
 * zeroing pass. Sparse (move, count) pairs would cost 4 bytes an entry plus
 * an offset: smaller only while fewer than half the actions were visited,
 * about 400 of 1668 bytes saved for a typical 19x19 search, which on an
 * 80 GB device is not worth the second ring. Bytes per position
 * (header + planes + counts, then + ownership + score with both heads):
 *   Go 19x19 LZ18    8 + 936 + 724 = 1668 (+ 96 + 4 = 1768)
 *                    native (27 planes) 2136 (2236)
 *   Go 9x9 LZ18      8 + 288 + 164 =  460 (+ 28 + 4 =  492)
 *                    native              604  (636)
 *   Connect Four     8 +  36 +  16 =   60 (no heads: no territory)
 * and the opponent-reply head adds 4 bytes + the counts' again (728 on
 * 19x19, 168 on 9x9, 20 on Connect Four).
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
	int own_off;    /* first word of the ownership target, 0: no head */
	int score_off;  /* the word of the score target, 0: no head */
	int opp_off;    /* first word of the opponent-reply target, 0: no head */
	int size_off;   /* the word of the board size's index, 0: one size */
	int n_sizes;    /* board sizes, each a set of n_sym tables (1: one size) */
	int rec_words;  /* words per record */
} gr_dims;

enum { GR_WORD_VALUE = 0, GR_WORD_TOTAL = 1, GR_HEADER_WORDS = 2 };

/* Ownership codes per word, and the score word of a record without a
 * score target (a quiet NaN: train_batch_score_target gives a NaN score
 * weight 0 too). */
enum { GR_OWN_PER_WORD = 16 };
#define GR_SCORE_NONE 0x7fc00000u

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

/* Which set of symmetry tables a record under symmetry sym reads: its
 * size's (tables [n_sizes][n_sym][hw or n_actions]). */
SENTE_HD int gr_table(const uint32_t *rec, const gr_dims *d, int sym)
{
	int k = d->size_off ? (int)rec[d->size_off] : 0;
	return k * d->n_sym + sym;
}

/* Count of action a in dense uint16 counts starting at word w. */
SENTE_HD uint32_t gr_count_at(const uint32_t *w, int a)
{
	return w[a >> 1] >> ((a & 1) * 16) & 0xffffu;
}

/* Visit count of action a. */
SENTE_HD uint32_t gr_count(const uint32_t *rec, const gr_dims *d, int a)
{
	return gr_count_at(rec + d->count_off, a);
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

/* Ownership target of output point q < hw under a symmetry whose inverse
 * action table is `at` (the policy's: point q shows canonical point
 * at[q]), the gather form of train_batch_own_target's scatter. 0 where the
 * record has no target (its codes are all 0). */
SENTE_HD float gr_own_elem(const uint32_t *rec, const gr_dims *d, const int16_t *at, int q)
{
	int p = at[q];
	uint32_t c = rec[d->own_off + 1 + p / GR_OWN_PER_WORD] >> (p % GR_OWN_PER_WORD * 2) & 3u;
	/* Sign and magnitude as a float's: -0 stays -0. */
	return gr_float_from_bits((c >> 1) << 31 | (c & 1u ? 0x3f800000u : 0u));
}

/* Ownership weight: 1 when the record holds a target, else 0. */
SENTE_HD float gr_own_weight(const uint32_t *rec, const gr_dims *d)
{
	return rec[d->own_off] ? 1.0f : 0.0f;
}

/* Score target (symmetry-invariant), 0 when the record has none. */
SENTE_HD float gr_score(const uint32_t *rec, const gr_dims *d)
{
	uint32_t u = rec[d->score_off];
	return u == GR_SCORE_NONE ? 0.0f : gr_float_from_bits(u);
}

/* Score weight: 1 when the record holds a target, else 0. */
SENTE_HD float gr_score_weight(const uint32_t *rec, const gr_dims *d)
{
	return rec[d->score_off] == GR_SCORE_NONE ? 0.0f : 1.0f;
}

/* Opponent-reply target of output action b under a symmetry whose inverse
 * action table is `at`: as gr_policy_elem over the reply's counts, 0 where
 * the record has none (train_batch_opp_target's row of zeros). */
SENTE_HD float gr_opp_elem(const uint32_t *rec, const gr_dims *d, const int16_t *at, int b)
{
	uint32_t total = rec[d->opp_off];
	if (total == 0)
		return 0.0f;
	uint32_t c = gr_count_at(rec + d->opp_off + 1, at[b]);
	return (float)((double)c / (double)total);
}

/* Win, draw, loss target k (0, 1, 2) from a value z, as
 * train_batch_from_position derives it. */
SENTE_HD float gr_wdl_elem(float z, int k)
{
	float a = z < 0 ? -z : z;
	return k == 0 ? (z > 0 ? z : 0.0f) : k == 2 ? (z < 0 ? -z : 0.0f) : 1.0f - a;
}

#endif
