/* The CPU's measured peak (nn/cpu/peak.h) and the fraction of it that
 * `sente bench nn` reports for the CPU backend. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cpu/peak.h"
#include "tests/cli/cli_util.h"

/* The number after "key": in a JSON line, or -1. */
static double field(const char *json, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(json, k);
	return p ? atof(p + strlen(k)) : -1;
}

Test(cpu_peak, per_precision)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		cr_skip_test("no AVX2: the peak is not measured on this CPU");
	nn_cpu_peak f = nn_cpu_peak_measure(NN_DTYPE_FP32, 1, 0.05);
	nn_cpu_peak q = nn_cpu_peak_measure(NN_DTYPE_INT8, 1, 0.05);
	/* Any x86 core with AVX2 does 8 to 64 fp32 ops per cycle at 1 to
	 * 6 GHz; a kernel whose accumulators went to memory, or a rate
	 * summed wrong, falls outside. */
	cr_assert(f.gops >= 8 && f.gops <= 400, "fp32 %g GFLOP/s (%s)", f.gops, f.isa);
	cr_assert(strstr(f.isa, "fma"), "%s", f.isa);
	/* u8 x s8 into s32 does at least as many ops per instruction as an
	 * fp32 FMA on the same width (AVX2's three-instruction sequence
	 * about 1.3 times, VNNI 4 times). */
	cr_assert_geq(q.gops, 0.9 * f.gops, "int8 %g (%s), fp32 %g (%s)", q.gops, q.isa, f.gops,
		      f.isa);
	/* Two threads: at least one thread's rate (two cores give about
	 * twice, two hyperthreads of one core about the same), and never
	 * more than two threads' (a rate counted twice would be). */
	nn_cpu_peak f2 = nn_cpu_peak_measure(NN_DTYPE_FP32, 2, 0.05);
	cr_assert(f2.gops > 0.8 * f.gops && f2.gops < 2.3 * f.gops, "1 thread %g, 2 threads %g",
		  f.gops, f2.gops);
	/* fp16 has no CPU path: no peak. */
	nn_cpu_peak h = nn_cpu_peak_measure(NN_DTYPE_FP16, 1, 0.05);
	cr_assert_eq(h.gops, 0);
	cr_assert_str_eq(h.isa, "none");
	nn_cpu_peak b = nn_cpu_peak_measure(NN_DTYPE_BF16, 1, 0.05);
	/* The bf16 dot product does twice an FMA's multiplies per
	 * instruction, but cores issue it at different rates: above the
	 * fp32 peak on the AMD Zen 4 this test was first run on, half of it
	 * (120 against 236 GFLOP/s) on an Intel Xeon with AMX. Either way
	 * it is measured, and within these bounds. */
	if (strcmp(b.isa, "amx-bf16") == 0) /* 1,024 ops a cycle against the FMAs' 64 */
		cr_assert(b.gops > 4 * f.gops && b.gops < 64 * f.gops, "bf16 %g, fp32 %g", b.gops,
			  f.gops);
	else if (__builtin_cpu_supports("avx512bf16"))
		cr_assert(b.gops > 0.3 * f.gops && b.gops < 4 * f.gops, "bf16 %g, fp32 %g", b.gops,
			  f.gops);
	else
		cr_assert_eq(b.gops, 0);
	/* AMX's int8 tile multiply does 2,048 ops a cycle. */
	if (strcmp(q.isa, "amx-int8") == 0)
		cr_assert(q.gops > 8 * f.gops, "int8 %g (%s), fp32 %g", q.gops, q.isa, f.gops);
}

Test(cpu_peak, bench_nn_reports_the_fraction, .timeout = 120)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		cr_skip_test("no AVX2: the peak is not measured on this CPU");
	static char out[1 << 16];
	/* Direct convolutions: Winograd's do fewer multiplications than the
	 * FLOPs counted, so their effective rate may pass the peak
	 * (measured: 1.05 to 1.09 of it on one AVX-512 core). */
	cr_assert_eq(cli_test_run("bench nn --backend cpu --blocks 2 --channels 32 --batch 8 "
				  "--threads 1 --seconds 0.3 --algo direct",
				  out, sizeof(out)),
		     0, "%s", out);
	const char *line = strstr(out, "{\"bench\":\"nn\"");
	cr_assert(line, "%s", out);
	double peak = field(line, "peak_gops"), frac = field(line, "peak_fraction"),
	       gflops = field(line, "gflops");
	cr_assert_gt(peak, 0, "%s", line);
	/* The fraction is the network's rate over the peak, and direct
	 * convolutions cannot beat the instruction they are built on. */
	cr_assert(frac > 0 && frac < 1, "%s", line);
	cr_assert_float_eq(frac, gflops / peak, 0.01 + 0.02 * frac, "%s", line);
}
