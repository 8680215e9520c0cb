/* bench.h: inference speed of a backend as JSON lines (what `sente bench
 * nn` runs; its options are parsed in cli/bench.c).
 *
 * One line per batch size:
 *   {"bench":"nn","backend":"cpu","precision":"fp32","blocks":6,"channels":64,
 *    "size":19,"batch":8,"threads":2,"lanes":1,"evals_per_s":...,"ms_per_batch":...,
 *    "gflops":...,"create_s":...,"omp_wait_policy":"PASSIVE","omp_spincount":"default"}
 * and, for a precision other than fp32, its agreement with an fp32 context
 * over positions of random legal play:
 *    "accuracy_positions":N,"policy_max_abs_diff":...,"policy_kl":...,
 *    "top1_agreement":...,"value_max_abs_diff":...,"value_mean_abs_diff":...
 * (policy_kl: mean KL(fp32 || this) of the softmax over all actions;
 * top1_agreement: share of positions whose largest logit is the same
 * action). create_s is the time to build the context (int8: calibration
 * included); omp_wait_policy and omp_spincount echo OMP_WAIT_POLICY and
 * GOMP_SPINCOUNT ("default" when unset; sente sets OMP_WAIT_POLICY=PASSIVE
 * when the user has not, cli/main.c), which move the figures by 2x either
 * way. lanes: the copies of the network measured at once (--lanes; the
 * threads split among them, evals_per_s their sum, ms_per_batch their
 * mean).
 * gflops counts the convolutions and FCs (2 * multiply-adds) per position,
 * times positions per second. On the CPU each line also carries cpu_isa and
 * peak_gops, the cores' peak for the precision (nn/cpu/peak.h, measured
 * once at start on the backend's threads), and peak_fraction = gflops /
 * peak_gops (above 1 is possible with Winograd convolutions, which do
 * fewer multiplications than gflops counts); on CUDA, peak_tflops, tflops and tc_peak_fraction. Inputs are random 0/1 planes: the arithmetic
 * does not depend on them.
 */
#ifndef SENTE_NN_BENCH_H
#define SENTE_NN_BENCH_H

#include <stddef.h>

#include "nn/backend.h"

#define NN_BENCH_MAX_BATCHES 16

typedef struct nn_bench_options {
	const char *weights;      /* model file (.sente or LZ), or NULL: a random net */
	int blocks, channels;     /* random net shape */
	game_params game;         /* random net game and board */
	int batches[NN_BENCH_MAX_BATCHES]; /* batch sizes to measure */
	int n_batches;            /* used entries of batches */
	double seconds;           /* measuring time per batch size */
	nn_backend_options backend; /* threads, precision, algorithm */
	unsigned long long seed;  /* random net and inputs */
	int accuracy_positions;   /* positions for the accuracy fields; 0: none */
} nn_bench_options;

/* Agreement of a reduced-precision context with fp32 (see above). */
typedef struct nn_bench_accuracy {
	int positions;              /* positions compared */
	double policy_max_abs_diff; /* largest |logit difference| */
	double policy_kl;           /* mean KL(fp32 || other) of the policies */
	double top1_agreement;      /* share with the same top action */
	double value_max_abs_diff;  /* largest |value difference| */
	double value_mean_abs_diff; /* mean |value difference| */
} nn_bench_accuracy;

/* Forward calls of `batch` positions (planes) on the n backends at once,
 * one thread each (the caller's own for one), for about `seconds` after two
 * warm-up calls: their evaluations per second summed, and the mean
 * milliseconds per call in *ms (may be NULL); -1 when a call failed or a
 * thread could not start. What `sente bench nn --lanes` and the raw figure
 * of `sente bench search` time. */
double nn_bench_backends(nn_backend *const *be, int n, int batch, const float *planes,
			 double seconds, double *ms);

/* Defaults: random Go 19x19 6x64 net, batches 1,8,32, 2 s each. */
nn_bench_options nn_bench_options_default(void);
/* Runs the measurements, printing JSON lines to stdout; 0, or -1 with a
 * message (bad weights file, backend refused). */
int nn_bench_run(const nn_bench_options *o, char *err, size_t errlen);

#endif
