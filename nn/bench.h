/* bench.h: `sente bench nn`: inference speed of a backend as JSON lines.
 *
 * One line per batch size:
 *   {"bench":"nn","backend":"cpu","precision":"fp32","blocks":6,"channels":64,
 *    "size":19,"batch":8,"threads":2,"evals_per_s":...,"ms_per_batch":...,
 *    "gflops":...}
 * gflops counts the convolutions and FCs (2 * multiply-adds) per position,
 * times positions per second. Inputs are random 0/1 planes: the arithmetic
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
} nn_bench_options;

/* Defaults: random Go 19x19 6x64 net, batches 1,8,32, 2 s each. */
nn_bench_options nn_bench_options_default(void);
/* Runs the measurements, printing JSON lines to stdout; 0, or -1 with a
 * message (bad weights file, backend refused). */
int nn_bench_run(const nn_bench_options *o, char *err, size_t errlen);
/* `sente bench nn ...` (argv[0] is "nn"): parses flags, runs, returns the
 * exit code: 0 done, 1 failure, 2 bad flags (message on stderr). --help
 * prints the usage to stdout and returns 0. */
int nn_bench_main(int argc, char **argv);

#endif
