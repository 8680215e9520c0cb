/* peak.c: the CPU's arithmetic peak, measured (see peak.h).
 *
 * Each kernel runs `n` rounds of independent accumulator chains, enough of
 * them to cover the instruction's latency on two ports (AVX2 has 16 vector
 * registers, so 12 chains there; AVX-512 has 32, so 16), and returns the
 * ops it did. The accumulators are summed into a volatile sink so that the
 * compiler keeps the work. Integer accumulators may wrap: only the time
 * counts. */
#include "nn/cpu/peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>

#include "engine/clock.h"

static volatile double sink;

typedef double (*peak_kernel)(long n);

__attribute__((target("avx2,fma"))) static double fp32_avx2(long n)
{
	__m256 a[12], b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
	#pragma GCC unroll 12
	for (int k = 0; k < 12; k++)
		a[k] = _mm256_set1_ps(1.0f + (float)k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 12
		for (int k = 0; k < 12; k++)
			a[k] = _mm256_fmadd_ps(a[k], b, c);
	float out[8];
	#pragma GCC unroll 12
	for (int k = 1; k < 12; k++)
		a[0] = _mm256_add_ps(a[0], a[k]);
	_mm256_storeu_ps(out, a[0]);
	sink = out[0];
	return (double)n * 12 * 8 * 2;
}

__attribute__((target("avx512f"))) static double fp32_avx512(long n)
{
	__m512 a[16], b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
	#pragma GCC unroll 16
	for (int k = 0; k < 16; k++)
		a[k] = _mm512_set1_ps(1.0f + (float)k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 16
		for (int k = 0; k < 16; k++)
			a[k] = _mm512_fmadd_ps(a[k], b, c);
	#pragma GCC unroll 16
	for (int k = 1; k < 16; k++)
		a[0] = _mm512_add_ps(a[0], a[k]);
	sink = _mm512_reduce_add_ps(a[0]);
	return (double)n * 16 * 16 * 2;
}

/* u8 x s8 without VNNI: vpmaddubsw (pairs into s16), vpmaddwd by ones
 * (pairs into s32), vpaddd: 32 multiply-adds per step on 256 bits. */
__attribute__((target("avx2"))) static double int8_avx2(long n)
{
	__m256i a[12], x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
	#pragma GCC unroll 12
	for (int k = 0; k < 12; k++)
		a[k] = _mm256_set1_epi32(k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 12
		for (int k = 0; k < 12; k++)
			a[k] = _mm256_add_epi32(
				a[k], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
	int32_t out[8];
	#pragma GCC unroll 12
	for (int k = 1; k < 12; k++)
		a[0] = _mm256_add_epi32(a[0], a[k]);
	_mm256_storeu_si256((__m256i *)out, a[0]);
	sink = out[0];
	return (double)n * 12 * 32 * 2;
}

/* The same sequence on 512 bits (AVX-512 without VNNI). */
__attribute__((target("avx512f,avx512bw"))) static double int8_avx512bw(long n)
{
	__m512i a[16], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2), one = _mm512_set1_epi16(1);
	#pragma GCC unroll 16
	for (int k = 0; k < 16; k++)
		a[k] = _mm512_set1_epi32(k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 16
		for (int k = 0; k < 16; k++)
			a[k] = _mm512_add_epi32(
				a[k], _mm512_madd_epi16(_mm512_maddubs_epi16(x, y), one));
	#pragma GCC unroll 16
	for (int k = 1; k < 16; k++)
		a[0] = _mm512_add_epi32(a[0], a[k]);
	sink = _mm512_reduce_add_epi32(a[0]);
	return (double)n * 16 * 64 * 2;
}

/* vpdpbusd on 256 bits (AVX-VNNI): 4 multiply-adds per s32 lane. */
__attribute__((target("avx2,avxvnni"))) static double int8_avxvnni(long n)
{
	__m256i a[12], x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
	#pragma GCC unroll 12
	for (int k = 0; k < 12; k++)
		a[k] = _mm256_set1_epi32(k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 12
		for (int k = 0; k < 12; k++)
			a[k] = _mm256_dpbusd_avx_epi32(a[k], x, y);
	int32_t out[8];
	#pragma GCC unroll 12
	for (int k = 1; k < 12; k++)
		a[0] = _mm256_add_epi32(a[0], a[k]);
	_mm256_storeu_si256((__m256i *)out, a[0]);
	sink = out[0];
	return (double)n * 12 * 32 * 2;
}

__attribute__((target("avx512f,avx512vnni"))) static double int8_avx512vnni(long n)
{
	__m512i a[16], x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
	#pragma GCC unroll 16
	for (int k = 0; k < 16; k++)
		a[k] = _mm512_set1_epi32(k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 16
		for (int k = 0; k < 16; k++)
			a[k] = _mm512_dpbusd_epi32(a[k], x, y);
	#pragma GCC unroll 16
	for (int k = 1; k < 16; k++)
		a[0] = _mm512_add_epi32(a[0], a[k]);
	sink = _mm512_reduce_add_epi32(a[0]);
	return (double)n * 16 * 64 * 2;
}

/* vdpbf16ps: 2 bf16 multiply-adds per fp32 lane. */
__attribute__((target("avx512f,avx512bf16"))) static double bf16_avx512(long n)
{
	__m512 a[16];
	__m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);
	#pragma GCC unroll 16
	for (int k = 0; k < 16; k++)
		a[k] = _mm512_set1_ps((float)k);
	for (long i = 0; i < n; i++)
		#pragma GCC unroll 16
		for (int k = 0; k < 16; k++)
			a[k] = _mm512_dpbf16_ps(a[k], x, y);
	#pragma GCC unroll 16
	for (int k = 1; k < 16; k++)
		a[0] = _mm512_add_ps(a[0], a[k]);
	sink = _mm512_reduce_add_ps(a[0]);
	return (double)n * 16 * 32 * 2;
}

/* AVX-VNNI (CPUID leaf 7, sub-leaf 1, EAX bit 4), which not every
 * compiler's __builtin_cpu_supports knows; AVX2 (checked first) says the
 * OS saves the 256-bit registers. */
static bool has_avx_vnni(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

/* The kernel for `precision` on this CPU, and its name; NULL: none. */
static peak_kernel pick(nn_dtype precision, const char **isa)
{
	__builtin_cpu_init();
	bool avx512 = __builtin_cpu_supports("avx512f");
	switch (precision) {
	case NN_DTYPE_FP32:
		if (avx512)
			return *isa = "avx512-fma", fp32_avx512;
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
			return *isa = "avx2-fma", fp32_avx2;
		break;
	case NN_DTYPE_INT8:
		if (avx512 && __builtin_cpu_supports("avx512vnni"))
			return *isa = "avx512-vnni", int8_avx512vnni;
		if (__builtin_cpu_supports("avx2") && has_avx_vnni())
			return *isa = "avx-vnni", int8_avxvnni;
		if (avx512 && __builtin_cpu_supports("avx512bw"))
			return *isa = "avx512bw", int8_avx512bw;
		if (__builtin_cpu_supports("avx2"))
			return *isa = "avx2", int8_avx2;
		break;
	case NN_DTYPE_BF16:
		if (avx512 && __builtin_cpu_supports("avx512bf16"))
			return *isa = "avx512-bf16", bf16_avx512;
		break;
	default:
		break;
	}
	*isa = "none";
	return NULL;
}

typedef struct peak_thread {
	peak_kernel kernel;
	double until; /* clock_now() at which to stop */
	double best;  /* the highest rate of a round, ops per second */
} peak_thread;

/* Rounds of about 0.1 ms until `until`, keeping the fastest: on a machine
 * shared with other work some rounds run uninterrupted, and the fastest
 * is what the core can do. */
static void *peak_main(void *p)
{
	peak_thread *t = p;
	double now = clock_now();
	do {
		double ops = t->kernel(20000), then = now;
		now = clock_now();
		if (now > then && ops / (now - then) > t->best)
			t->best = ops / (now - then);
	} while (now < t->until);
	return NULL;
}

nn_cpu_peak nn_cpu_peak_measure(nn_dtype precision, int threads, double seconds)
{
	nn_cpu_peak r = { 0, "none" };
	peak_kernel k = pick(precision, &r.isa);
	if (!k)
		return r;
	if (threads < 1)
		threads = 1;
	if (threads > 256)
		threads = 256;
	k(1000); /* the first use of wide registers may be slow */
	peak_thread t[256] = { 0 };
	pthread_t th[256];
	double until = clock_now() + seconds;
	int started = 0;
	for (int i = 0; i < threads; i++) {
		t[i].kernel = k;
		t[i].until = until;
		if (i > 0 && pthread_create(&th[i], NULL, peak_main, &t[i]) != 0)
			break;
		started = i + 1;
	}
	peak_main(&t[0]);
	for (int i = 1; i < started; i++)
		pthread_join(th[i], NULL);
	/* Each thread's best, as if every core ran its best round at once. */
	for (int i = 0; i < started; i++)
		r.gops += t[i].best * 1e-9;
	return r;
}
