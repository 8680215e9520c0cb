/* peak.h: the CPU's arithmetic peak for a precision, measured.
 *
 * `sente bench nn` reports the CPU backend's figures as a fraction of what
 * the cores can do, as the CUDA path reports the tensor-core fraction. The
 * peak is measured once, with a short loop of the one instruction a
 * convolution of that precision is built on, on `threads` threads at once:
 *
 *   fp32  FMA (vfmadd231ps): 2 ops per lane, AVX-512 when the CPU has it,
 *         else AVX2; 16 independent accumulators hide its latency.
 *   int8  u8 x s8 dot products into s32: vpdpbusd (AVX-512 VNNI, or
 *         AVX-VNNI on 256 bits) counts 4 multiply-adds per lane; without
 *         VNNI the AVX2 sequence oneDNN runs, vpmaddubsw + vpmaddwd +
 *         vpaddd per 32 multiply-adds.
 *   bf16  vdpbf16ps (AVX512_BF16): 2 multiply-adds per fp32 lane; 0 (no
 *         peak) without it, where the CPU backend refuses bf16 anyway.
 *   AMX   on a CPU with AMX tiles (Intel Xeon from the 4th generation),
 *         which oneDNN then uses for int8 and bf16 convolutions: tdpbusd
 *         (16x16x64 u8 x s8 multiply-adds) and tdpbf16ps (16x16x32) on
 *         four accumulator tiles, unless ONEDNN_MAX_CPU_ISA keeps oneDNN
 *         below AMX (the tiles need the kernel's leave, asked once).
 *
 * Ops count a multiply-add as 2, as the network's FLOP count does. The
 * figure is what the cores reached during the measurement: on a machine
 * shared with other work it is low by the share they took, as the network's
 * figure measured beside it is. */
#ifndef SENTE_NN_CPU_PEAK_H
#define SENTE_NN_CPU_PEAK_H

#include "nn/dtype.h"

typedef struct nn_cpu_peak {
	double gops;      /* ops per second over all threads, in 1e9; 0: none */
	const char *isa;  /* the instructions measured, e.g. "avx2-fma" */
} nn_cpu_peak;

/* Measures the peak of `precision` (fp32, int8, bf16; anything else gives
 * 0) on `threads` threads (at least 1) for about `seconds`. */
nn_cpu_peak nn_cpu_peak_measure(nn_dtype precision, int threads, double seconds);

/* Whether this CPU has the int8 dot-product instructions (AVX-512 VNNI or
 * AVX-VNNI) that make int8 inference about twice as fast as fp32; self-play
 * then runs int8 by default. */
int nn_cpu_fast_int8(void);

/* Whether this CPU has AVX2 and FMA (the fp32 peak's fallback loop, and
 * the CPU backend's loop for the heads' 1x1 convolutions). */
int nn_cpu_avx2_fma(void);

#endif
