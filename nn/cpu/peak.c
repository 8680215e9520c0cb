/* peak.c: the CPU's arithmetic peak, measured (see peak.h).
 *
 * Each kernel runs `n` rounds of independent accumulator chains, enough of
 * them to cover the instruction's latency on two ports (AVX2 has 16 vector
 * registers, so 12 chains there; AVX-512 has 32, so 16), and returns the
 * ops it did. The chains are named variables, not an array, so that they
 * live in registers whatever the optimisation level or sanitiser (an array
 * went to memory at -O1 under ASan, and the loop timed the stores). The
 * accumulators are summed into a volatile sink so that the compiler keeps
 * the work. Integer accumulators may wrap: only the time counts. */
#include "nn/cpu/peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/clock.h"

static volatile double sink;

typedef double (*peak_kernel)(long n);

/* X(k) for each chain k. */
#define CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CHAINS16(X) CHAINS12(X) X(12) X(13) X(14) X(15)

/* One kernel: `chains` accumulators a0.. of type T set by INIT(k), each
 * round updated by STEP(k), at the end folded by FOLD into `sum` (a T),
 * which REDUCE turns into a double. */
#define PEAK_KERNEL(name, isa, T, chains, INIT, STEP, FOLD, REDUCE, ops_per_round)  \
	__attribute__((target(isa))) static double name(long n)                          \
	{                                                                               \
		PEAK_SETUP                                                              \
		chains(INIT)                                                            \
		for (long i = 0; i < n; i++) {                                          \
			chains(STEP)                                                    \
		}                                                                       \
		T sum = a0;                                                             \
		chains(FOLD)                                                            \
		sink = REDUCE(sum);                                                     \
		return (double)n * (ops_per_round);                                     \
	}

static inline __attribute__((target("avx2"))) double first_ps256(__m256 v)
{
	return _mm256_cvtss_f32(v);
}
static inline __attribute__((target("avx2"))) double first_epi256(__m256i v)
{
	return _mm256_cvtsi256_si32(v);
}

/* fp32 FMA: a = a * b + c (b just under 1 keeps a bounded); 2 ops a lane. */
#define PEAK_SETUP const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
#define INIT(k) __m256 a##k = _mm256_set1_ps(1.0f + (k));
#define STEP(k) a##k = _mm256_fmadd_ps(a##k, b, c);
#define FOLD(k) sum = _mm256_add_ps(sum, a##k);
PEAK_KERNEL(fp32_avx2, "avx2,fma", __m256, CHAINS12, INIT, STEP, FOLD, first_ps256, 12 * 8 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

#define PEAK_SETUP const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
#define INIT(k) __m512 a##k = _mm512_set1_ps(1.0f + (k));
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, b, c);
#define FOLD(k) sum = _mm512_add_ps(sum, a##k);
PEAK_KERNEL(fp32_avx512, "avx512f", __m512, CHAINS16, INIT, STEP, FOLD, _mm512_reduce_add_ps,
	    16 * 16 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

/* u8 x s8 without VNNI: vpmaddubsw (pairs into s16), vpmaddwd by ones
 * (pairs into s32), vpaddd: 32 multiply-adds per step on 256 bits, 64 on
 * 512 (AVX-512 without VNNI). */
#define PEAK_SETUP                                                                       \
	const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2),                 \
		      one = _mm256_set1_epi16(1);
#define INIT(k) __m256i a##k = _mm256_set1_epi32(k);
#define STEP(k) a##k = _mm256_add_epi32(a##k, _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
#define FOLD(k) sum = _mm256_add_epi32(sum, a##k);
PEAK_KERNEL(int8_avx2, "avx2", __m256i, CHAINS12, INIT, STEP, FOLD, first_epi256, 12 * 32 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP

#define PEAK_SETUP                                                                       \
	const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2),                 \
		      one = _mm512_set1_epi16(1);
#define INIT(k) __m512i a##k = _mm512_set1_epi32(k);
#define STEP(k) a##k = _mm512_add_epi32(a##k, _mm512_madd_epi16(_mm512_maddubs_epi16(x, y), one));
#undef FOLD
#define FOLD(k) sum = _mm512_add_epi32(sum, a##k);
PEAK_KERNEL(int8_avx512bw, "avx512f,avx512bw", __m512i, CHAINS16, INIT, STEP, FOLD,
	    _mm512_reduce_add_epi32, 16 * 64 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

/* vpdpbusd: 4 u8 x s8 multiply-adds per s32 lane, on 256 bits (AVX-VNNI)
 * or 512 (AVX-512 VNNI). */
#define PEAK_SETUP const __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2);
#define INIT(k) __m256i a##k = _mm256_set1_epi32(k);
#define STEP(k) a##k = _mm256_dpbusd_avx_epi32(a##k, x, y);
#define FOLD(k) sum = _mm256_add_epi32(sum, a##k);
PEAK_KERNEL(int8_avxvnni, "avx2,avxvnni", __m256i, CHAINS12, INIT, STEP, FOLD, first_epi256,
	    12 * 32 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

#define PEAK_SETUP const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
#define INIT(k) __m512i a##k = _mm512_set1_epi32(k);
#define STEP(k) a##k = _mm512_dpbusd_epi32(a##k, x, y);
#define FOLD(k) sum = _mm512_add_epi32(sum, a##k);
PEAK_KERNEL(int8_avx512vnni, "avx512f,avx512vnni", __m512i, CHAINS16, INIT, STEP, FOLD,
	    _mm512_reduce_add_epi32, 16 * 64 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

/* vdpbf16ps: 2 bf16 multiply-adds per fp32 lane (1.0 x 2^-23 pairs). */
#define PEAK_SETUP                                                                       \
	const __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80),                          \
		       y = (__m512bh)_mm512_set1_epi16(0x3400);
#define INIT(k) __m512 a##k = _mm512_set1_ps((float)(k));
#define STEP(k) a##k = _mm512_dpbf16_ps(a##k, x, y);
#define FOLD(k) sum = _mm512_add_ps(sum, a##k);
PEAK_KERNEL(bf16_avx512, "avx512f,avx512bf16", __m512, CHAINS16, INIT, STEP, FOLD,
	    _mm512_reduce_add_ps, 16 * 32 * 2)
#undef PEAK_SETUP
#undef INIT
#undef STEP
#undef FOLD

/* AMX (Intel Xeon from the 4th generation): where the CPU has it,
 * oneDNN runs int8 and bf16 convolutions on its tiles, so theirs is the
 * peak. tdpbusd multiplies a 16x64 u8 tile by a 64x16 s8 one into 16x16
 * s32 (16,384 multiply-adds), tdpbf16ps a 16x32 bf16 pair into 16x16
 * fp32 (8,192); four accumulator tiles cover the latency. */
typedef struct amx_config {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} amx_config;

/* Tiles 0-3 accumulate, 4 and 5 are the operands: 16 rows of 64 bytes. */
static void amx_config_peak(amx_config *c)
{
	memset(c, 0, sizeof(*c));
	c->palette = 1;
	for (int t = 0; t < 6; t++) {
		c->rows[t] = 16;
		c->colsb[t] = 64;
	}
}

static _Alignas(64) uint8_t amx_operand[16 * 64];

#define AMX_KERNEL(name, isa, OP, T, ops_per_instr)                                       	__attribute__((target(isa))) static double name(long n)                          	{                                                                               		amx_config c;                                                           		amx_config_peak(&c);                                                    		_tile_loadconfig(&c);                                                   		_tile_loadd(4, amx_operand, 64);                                        		_tile_loadd(5, amx_operand, 64);                                        		_tile_zero(0);                                                          		_tile_zero(1);                                                          		_tile_zero(2);                                                          		_tile_zero(3);                                                          		for (long i = 0; i < n; i++) {                                          			OP(0, 4, 5);                                                    			OP(1, 4, 5);                                                    			OP(2, 4, 5);                                                    			OP(3, 4, 5);                                                    		}                                                                       		_Alignas(64) T out[16 * 16];                                            		_tile_stored(0, out, 64);                                               		_tile_release();                                                        		sink = (double)out[0];                                                  		return (double)n * 4 * (ops_per_instr);                                 	}
AMX_KERNEL(int8_amx, "amx-tile,amx-int8", _tile_dpbusd, int32_t, 16 * 16 * 64 * 2)
AMX_KERNEL(bf16_amx, "amx-tile,amx-bf16", _tile_dpbf16ps, float, 16 * 16 * 32 * 2)

/* The CPU has AMX-TILE and `feature` (CPUID leaf 7 EDX: bit 25 AMX-INT8,
 * 22 AMX-BF16), the kernel lets this process use the tile data (asked
 * once), and oneDNN is not told to stay below AMX (ONEDNN_MAX_CPU_ISA). */
static bool has_amx(int feature_bit)
{
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> feature_bit & 1))
		return false;
	const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
	if (!cap)
		cap = getenv("DNNL_MAX_CPU_ISA");
	if (cap && !strstr(cap, "AMX") && !strstr(cap, "amx") && strcmp(cap, "ALL") != 0)
		return false;
	static int permitted = -1; /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA */
	if (permitted < 0) {
		permitted = syscall(SYS_arch_prctl, 0x1023, 18) == 0;
		memset(amx_operand, 0x3f, sizeof(amx_operand)); /* 63, or bf16 0.75 */
	}
	return permitted;
}

/* AVX-VNNI (CPUID leaf 7, sub-leaf 1, EAX bit 4), which not every
 * compiler's __builtin_cpu_supports knows; AVX2 (checked first) says the
 * OS saves the 256-bit registers. */
static bool has_avx_vnni(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}

static bool has_avx512_vnni(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
}

int nn_cpu_fast_int8(void)
{
	__builtin_cpu_init();
	return has_avx512_vnni() || (__builtin_cpu_supports("avx2") && has_avx_vnni());
}

int nn_cpu_avx2_fma(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
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
		if (nn_cpu_avx2_fma())
			return *isa = "avx2-fma", fp32_avx2;
		break;
	case NN_DTYPE_INT8:
		if (has_amx(25))
			return *isa = "amx-int8", int8_amx;
		if (has_avx512_vnni())
			return *isa = "avx512-vnni", int8_avx512vnni;
		if (__builtin_cpu_supports("avx2") && has_avx_vnni())
			return *isa = "avx-vnni", int8_avxvnni;
		if (avx512 && __builtin_cpu_supports("avx512bw"))
			return *isa = "avx512bw", int8_avx512bw;
		if (__builtin_cpu_supports("avx2"))
			return *isa = "avx2", int8_avx2;
		break;
	case NN_DTYPE_BF16:
		if (avx512 && __builtin_cpu_supports("avx512bf16") && has_amx(22))
			return *isa = "amx-bf16", bf16_amx;
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
