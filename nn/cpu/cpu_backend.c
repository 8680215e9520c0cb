/* cpu_backend.c: the CPU backend on oneDNN 2.6 (C API). Every oneDNN call
 * of sente lives in this file.
 *
 * Shape of the work, decided once at create time:
 * - Batch sets: primitives for batch sizes 1, 2, 4, ... up to max_batch
 *   (max_batch itself always included). forward(batch) runs the smallest
 *   set that fits on a padded input, so batch 5 costs a batch-8 pass rather
 *   than a max-batch one. A set may instead run as repeated passes of a
 *   smaller one when that was timed faster (large batches spill the tower's
 *   activations out of L2; smaller passes keep them there).
 * - Layout: oneDNN picks the tower's activation layout (nhwc for direct
 *   convs, nChw16c for Winograd); the whole tower keeps it. Reorders happen
 *   only at the input (user NCHW fp32 -> tower layout) and, where the
 *   tower is not nhwc already, once before the heads (tower layout -> nhwc
 *   fp32). The heads' 1x1 convs are a loop of this file (cpu_head_convs:
 *   oneDNN's 1x1 conv of 1 or 2 output channels wastes most of its vector
 *   width); the int8 tower's u8 nhwc output is read there directly.
 * - Fusion: BN is folded into conv weight/bias; ReLU is an eltwise post-op;
 *   the residual add is a sum post-op, so a plain block is two primitives
 *   and runs in place on two buffers: conv1(A) -> B, then
 *   A = relu(conv2(B) + A). An SE block's conv2 writes fp32 X instead and a
 *   plain-C pass does pool, the two small FCs, gate, bias, skip and ReLU
 *   (all tiny next to the convs, and exact in fp32).
 * - Algorithm: for each conv kind (input, conv1, conv2, SE conv2) of each
 *   set, Winograd and direct are both created where oneDNN supports them
 *   and timed on the real weights; the faster one is kept. Both tower
 *   layouts are built and timed end to end; the faster set is kept.
 * - Precision: fp32; bf16 runs the tower in bfloat16 (AVX-512 BF16) with
 *   fp32 heads; int8 (below) runs the tower in u8/s8 with fp32 heads.
 * - int8: weights s8 with a scale per output channel (127 / max |w|);
 *   activations u8 (the tower is post-ReLU, non-negative), the input planes
 *   s8 (Go's komi plane is negative). Activation scales come from a
 *   calibration at create: an fp32 context runs opt->calib_positions
 *   positions of random legal play (fixed seed) and records each layer's
 *   max |activation|. A conv then computes
 *     dst_q = oscale[o] * (sum src_q * w_q + bias_q[o]) (+ sum_scale * skip_q)
 *   with oscale[o] = q_dst / (q_src * q_w[o]), bias_q = bias * q_src * q_w[o],
 *   sum_scale = q_dst / q_skip; every layer has its own primitive since the
 *   scales are baked in. The heads read the u8 output with its scale.
 *   Calibration costs roughly calib_positions fp32 evaluations (256 on a
 *   19x19 6x64 net: about 0.3 s on two cores) plus building the int8
 *   primitives.
 * - Memory: all activations, weights (in the primitives' formats, shared
 *   between sets when the format agrees) and one scratchpad (user mode, the
 *   largest any primitive asks for) are allocated at create. forward
 *   allocates nothing.
 * - Threads: oneDNN here runs on OpenMP; the thread count (threads 0: the
 *   creating thread's count at create) is applied with omp_set_num_threads
 *   on the calling thread at create and at every forward (it is a
 *   per-thread setting and costs nothing), and the creating thread's own
 *   count is restored after create. They are looked up with dlsym so that
 *   sente needs no -fopenmp of its own.
 */
#include "nn/backend.h"

#include <assert.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <immintrin.h>
#include <dnnl_debug.h>

#include "engine/clock.h"
#include "engine/game.h"
#include "nn/cpu/dnnl_check.h"
#include "nn/cpu/peak.h"
#include "nn/encode.h"

#define CPU_MAX_SETS 16
#define CPU_CALIB_BATCH 32      /* calibration batch */
#define CPU_CALIB_SEED 0x5e17e5ull /* calibration positions' seed */

/* One weight tensor in one memory format. */
typedef struct cpu_fmt {
	dnnl_memory_desc_t md; /* the format */
	dnnl_memory_t mem;     /* the weights in it (owned) */
} cpu_fmt;

/* The parameters of one layer: fp32 user-side data and the formatted
 * copies the primitives asked for. */
typedef struct cpu_param {
	const float *w;              /* folded weights, in ctx->net */
	const float *b;              /* head convs: their folded fp32 bias */
	dnnl_memory_desc_t w_user;   /* plain layout of w (oihw / oi) */
	dnnl_memory_t bias;          /* f32 bias: folded, or int8's in accumulator units */
	const float *wq;             /* int8: weight scale per output channel, else NULL */
	cpu_fmt fmt[CPU_MAX_SETS * 2]; /* formatted copies (owned) */
	int n_fmt;                   /* used entries of fmt */
} cpu_param;

/* A primitive and its scratchpad view. */
typedef struct cpu_op {
	dnnl_primitive_t prim;      /* owned */
	dnnl_memory_t scratch;      /* scratchpad over ctx->scratch (owned) */
} cpu_op;

/* Conv kinds; fp32/bf16 share one primitive per kind across the tower. */
enum { CPU_CONV_INPUT, CPU_CONV_TOWER1, CPU_CONV_TOWER2, CPU_CONV_SE2, CPU_CONV_KINDS };

/* Where element (n, c, h, w) of a 4-D activation lives: n * sn + coff[c] +
 * h * sh + w * sw, for the plain-C SE pass. */
typedef struct cpu_layout {
	dnnl_dim_t sn, sh, sw; /* strides in elements */
	dnnl_dim_t *coff;      /* [channels] channel offsets (owned) */
	int run;               /* channels c..c+run-1 (c a multiple of run) lie side by
				* side: the block (nChw16c: 16), all (NHWC) or 1 */
} cpu_layout;

/* Everything for one batch size. */
typedef struct cpu_set {
	int nb;                       /* batch size of the primitives */
	int chunk;                    /* >= 0: run as passes of set[chunk] instead */
	double secs;                  /* timed seconds of one pass (0: not timed) */
	dnnl_memory_t in_user;        /* input, NCHW fp32 (owned) */
	dnnl_memory_t in_lent;        /* the same, on a caller's buffer (cpu_pass) */
	dnnl_memory_t in_conv;        /* input in the input conv's layout, or NULL */
	dnnl_memory_t act[2];         /* tower ping-pong buffers (owned) */
	dnnl_memory_t se_x;           /* SE blocks' conv2 output, fp32, or NULL */
	dnnl_memory_t head_in;        /* tower output in nhwc fp32 for the heads, or NULL */
	int head_u8;                  /* int8: the head convs read the tower's u8
				       * nhwc output where it is, with its scale */
	cpu_layout hl;                /* layout of what the head convs read */
	dnnl_memory_t pol_act;        /* policy conv output */
	dnnl_memory_t val_act;        /* value conv output */
	dnnl_memory_t val_hid;        /* value FC1 output */
	dnnl_memory_t pol_out;        /* policy logits, nc */
	dnnl_memory_t val_out;        /* value head output, nc */
	cpu_op reorder_in;            /* in_user -> in_conv, prim NULL when not needed */
	cpu_op reorder_head;          /* act -> head_in, prim NULL when not needed */
	cpu_op *conv;                 /* n_conv convolutions (owned) */
	int n_conv;                   /* used entries of conv */
	int *layer_conv;              /* conv index of each tower layer */
	int kind_conv[CPU_CONV_KINDS]; /* fp32/bf16: conv index of each kind, or -1 */
	int algo[CPU_CONV_KINDS];     /* 1 Winograd, 0 direct */
	int wino_ok[CPU_CONV_KINDS];  /* 1 when oneDNN offered Winograd */
	int lay;                      /* tower layout from: 0 direct, 1 Winograd */
	cpu_op pol_fc, val_fc1, val_fc2; /* heads after their 1x1 convs (cpu_head_convs) */
	cpu_layout xl;                /* layout of act and se_x (SE nets) */
	cpu_layout vl;                /* layout of val_act (nets with an ownership head) */
	float *se_buf;                /* SE: pooled [nb][C], hidden [nb][se], z [nb][2C],
				       * then with masked pooling the points' weights
				       * [nb][H * W] (nn_board_pool_weights) */
	/* Weights each primitive reads, per parameter (not owned: in
	 * ctx->param[].fmt). */
	dnnl_memory_t *w;
} cpu_set;

typedef struct cpu_ctx {
	nn_net *net;               /* folded copy of the weights (owned) */
	nn_arch arch;              /* shapes */
	int threads;               /* requested thread count, 0 = default */
	nn_dtype precision;        /* tower arithmetic */
	int n_layers;              /* tower convs: 1 + 2 * blocks */
	int has_se;                /* some block is SE */
	dnnl_engine_t engine;      /* CPU engine */
	dnnl_stream_t stream;      /* one stream per context */
	cpu_param *param;          /* n_param layers' parameters */
	int n_param;               /* n_layers + 5 */
	cpu_set set[CPU_MAX_SETS]; /* batch sets, increasing nb */
	int n_set;                 /* used entries of set */
	void *scratch;             /* the shared scratchpad */
	size_t scratch_size;       /* its size in bytes */
	void (*omp_set)(int);      /* omp_set_num_threads, or NULL */
	int head_avx2;             /* the heads' 1x1 convs on AVX2 + FMA (nn_cpu_avx2_fma) */
	/* int8 (NULL otherwise), one allocation: */
	float *qdata;              /* owns everything below */
	float *q_out;              /* [n_layers] scale of each layer's u8 output (SE
				    * conv2: of the block's output) */
	float *q_sum;              /* [n_layers] sum post-op scale (plain conv2) */
	float *oscale;             /* [n_layers][C] conv output scales */
	float *qbias;              /* [n_layers][C] biases in accumulator units */
	float *wq;                 /* [n_layers][C] weight scales */
	float q_in;                /* input planes scale (s8) */
	float calib_secs;          /* seconds spent calibrating */
	int calib_n;               /* positions used */
	/* Calibration run (an fp32 context): [n_layers] max |output| of each
	 * layer (conv2: the block's output) and [n_layers] the input's; NULL
	 * when not calibrating. */
	float *amax;
	char err[256];             /* last forward error */
} cpu_ctx;

/* Parameter indices: the tower layers (0 input conv, 1 + 2i conv1 of block
 * i, 2 + 2i conv2 of block i), then the heads. */
#define P_INPUT 0
#define P_CONV1(i) (1 + 2 * (i))
#define P_CONV2(i) (2 + 2 * (i))
#define P_POL_CONV(c) ((c)->n_param - 5)
#define P_VAL_CONV(c) ((c)->n_param - 4)
#define P_POL_FC(c) ((c)->n_param - 3)
#define P_VAL_FC1(c) ((c)->n_param - 2)
#define P_VAL_FC2(c) ((c)->n_param - 1)

/* omp_get_max_threads of the calling thread, 0 without OpenMP. */
static int cpu_omp_max_threads(void)
{
	int (*get)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
	return get ? get() : 0;
}

/* omp_set_num_threads, or NULL without OpenMP. */
static void (*cpu_omp_set_fn(void))(int)
{
	return (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
}

static void cpu_apply_threads(cpu_ctx *c)
{
	if (c->threads > 0 && c->omp_set)
		c->omp_set(c->threads);
}

/* Kind of tower layer l. */
static int cpu_layer_kind(const cpu_ctx *c, int l)
{
	if (l == 0)
		return CPU_CONV_INPUT;
	if (l % 2 == 1)
		return CPU_CONV_TOWER1;
	return c->arch.block_kind[(l - 2) / 2] == NN_BLOCK_SE ? CPU_CONV_SE2 : CPU_CONV_TOWER2;
}

/* int8: scale of layer l's input. */
static float cpu_q_src(const cpu_ctx *c, int l)
{
	return l == 0 ? c->q_in : c->q_out[l - 1];
}

/* Runs one primitive with the given arguments (scratchpad added). */
static dnnl_status_t cpu_exec(cpu_ctx *c, const cpu_op *op, int nargs, dnnl_exec_arg_t *args)
{
	args[nargs].arg = DNNL_ARG_SCRATCHPAD;
	args[nargs].memory = op->scratch;
	return dnnl_primitive_execute(op->prim, c->stream, nargs + 1, args);
}

/* Makes the scratchpad at least `size` bytes (create time only). Existing
 * scratch memories are re-pointed at the end of create. */
static int cpu_scratch_reserve(cpu_ctx *c, size_t size, char *err, size_t errlen)
{
	if (size <= c->scratch_size)
		return 0;
	free(c->scratch);
	c->scratch = aligned_alloc(64, (size + 63) / 64 * 64);
	if (!c->scratch) {
		c->scratch_size = 0;
		snprintf(err, errlen, "out of memory for a %zu-byte scratchpad", size);
		return -1;
	}
	c->scratch_size = size;
	return 0;
}

/* Creates the primitive of `pd` and its scratchpad view; takes pd. */
static int cpu_op_make(cpu_ctx *c, dnnl_primitive_desc_t pd, cpu_op *op, char *err,
		       size_t errlen)
{
	int rc = 0;
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	size_t ssize = smd ? dnnl_memory_desc_get_size(smd) : 0;
	if (cpu_scratch_reserve(c, ssize ? ssize : 64, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	DNNL_CHECK(dnnl_primitive_create(&op->prim, pd));
	DNNL_CHECK(dnnl_memory_create(&op->scratch, smd, c->engine, c->scratch));
out:
	dnnl_primitive_desc_destroy(pd);
	return rc;
}

static void cpu_op_free(cpu_op *op)
{
	if (op->prim)
		dnnl_primitive_destroy(op->prim);
	if (op->scratch)
		dnnl_memory_destroy(op->scratch);
	op->prim = NULL;
	op->scratch = NULL;
}

/* A reorder from `from` to `to`, scaling by `scale` when it is not 1. */
static int cpu_reorder_make(cpu_ctx *c, const dnnl_memory_desc_t *from,
			    const dnnl_memory_desc_t *to, float scale, cpu_op *op, char *err,
			    size_t errlen)
{
	int rc = 0;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t pd = NULL;
	DNNL_CHECK(dnnl_primitive_attr_create(&attr));
	DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
	if (scale != 1.0f)
		DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale));
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, attr));
	rc = cpu_op_make(c, pd, op, err, errlen);
	pd = NULL;
	if (rc == 0)
		DNNL_CHECK(dnnl_memory_set_data_handle(op->scratch, c->scratch));
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

/* The weights of parameter p in format md, reordering (and for int8
 * quantizing) them on first use. */
static int cpu_weights(cpu_ctx *c, int p, const dnnl_memory_desc_t *md, dnnl_memory_t *out,
		       char *err, size_t errlen)
{
	int rc = 0;
	cpu_param *pa = &c->param[p];
	dnnl_memory_t user = NULL, mem = NULL;
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t reorder = NULL;
	dnnl_primitive_attr_t attr = NULL;
	for (int i = 0; i < pa->n_fmt; i++)
		if (dnnl_memory_desc_equal(&pa->fmt[i].md, md)) {
			*out = pa->fmt[i].mem;
			return 0;
		}
	assert(pa->n_fmt < (int)(sizeof(pa->fmt) / sizeof(pa->fmt[0])));
	DNNL_CHECK(dnnl_memory_create(&user, &pa->w_user, c->engine, (void *)pa->w));
	DNNL_CHECK(dnnl_memory_create(&mem, md, c->engine, DNNL_MEMORY_ALLOCATE));
	DNNL_CHECK(dnnl_primitive_attr_create(&attr));
	if (pa->wq) /* s8 = round(w * wq[o]): a scale per dim-0 index */
		DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, pa->w_user.dims[0], 1, pa->wq));
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, &pa->w_user, c->engine, md, c->engine,
						       attr));
	DNNL_CHECK(dnnl_primitive_create(&reorder, rpd));
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, user }, { DNNL_ARG_TO, mem } };
	DNNL_CHECK(dnnl_primitive_execute(reorder, c->stream, 2, args));
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	pa->fmt[pa->n_fmt].md = *md;
	pa->fmt[pa->n_fmt].mem = mem;
	pa->n_fmt++;
	*out = mem;
	mem = NULL;
out:
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (reorder)
		dnnl_primitive_destroy(reorder);
	if (rpd)
		dnnl_primitive_desc_destroy(rpd);
	if (user)
		dnnl_memory_destroy(user);
	if (mem)
		dnnl_memory_destroy(mem);
	return rc;
}

/* Post-op choices of a conv or inner product. */
enum { POST_NONE, POST_RELU, POST_SUM_RELU, POST_TANH };

/* A primitive descriptor for a conv (k = 3 or 1, pad k/2) or, when ip is
 * set, an inner product. For int8 tower layer `layer` (>= 0) the output
 * scales and sum scale of that layer are attached. dnnl_unimplemented etc.
 * come back as the status so the caller can fall back. */
static dnnl_status_t cpu_pd(cpu_ctx *c, int ip, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *src,
			    const dnnl_memory_desc_t *wts, const dnnl_memory_desc_t *bias,
			    const dnnl_memory_desc_t *dst, int k, int post, int layer,
			    dnnl_primitive_desc_t *pd)
{
	dnnl_status_t s;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t ops = NULL;
	int q = layer >= 0 && c->precision == NN_DTYPE_INT8 && c->qdata;
	*pd = NULL;
	if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success)
		return s;
	if ((s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user)) != dnnl_success)
		goto out;
	if (q && (s = dnnl_primitive_attr_set_output_scales(attr, c->arch.channels, 2,
							    c->oscale + (size_t)layer * c->arch.channels)) != dnnl_success)
		goto out;
	if (post != POST_NONE) {
		if ((s = dnnl_post_ops_create(&ops)) != dnnl_success)
			goto out;
		if (post == POST_SUM_RELU &&
		    (s = dnnl_post_ops_append_sum(ops, q ? c->q_sum[layer] : 1.0f)) != dnnl_success)
			goto out;
		dnnl_alg_kind_t ek = post == POST_TANH ? dnnl_eltwise_tanh : dnnl_eltwise_relu;
		if ((s = dnnl_post_ops_append_eltwise(ops, 1.0f, ek, 0.0f, 0.0f)) != dnnl_success)
			goto out;
		if ((s = dnnl_primitive_attr_set_post_ops(attr, ops)) != dnnl_success)
			goto out;
	}
	if (ip) {
		dnnl_inner_product_desc_t d;
		s = dnnl_inner_product_forward_desc_init(&d, dnnl_forward_inference, src, wts, bias, dst);
		if (s == dnnl_success)
			s = dnnl_primitive_desc_create(pd, &d, attr, c->engine, NULL);
	} else {
		dnnl_convolution_desc_t d;
		dnnl_dims_t strides = { 1, 1 }, pad = { k / 2, k / 2 };
		s = dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, alg, src, wts, bias,
						       dst, strides, pad, pad);
		if (s == dnnl_success)
			s = dnnl_primitive_desc_create(pd, &d, attr, c->engine, NULL);
	}
out:
	if (ops)
		dnnl_post_ops_destroy(ops);
	dnnl_primitive_attr_destroy(attr);
	return s;
}

static const dnnl_memory_desc_t *cpu_md(dnnl_primitive_desc_t pd, dnnl_query_t q)
{
	return dnnl_primitive_desc_query_md(pd, q, 0);
}

/* Times op on (src -> dst) with the given weights; seconds per run. */
static int cpu_time_conv(cpu_ctx *c, cpu_op *op, dnnl_memory_t src, dnnl_memory_t wts,
			 dnnl_memory_t bias, dnnl_memory_t dst, double *secs, char *err,
			 size_t errlen)
{
	int rc = 0;
	dnnl_exec_arg_t args[5] = { { DNNL_ARG_SRC, src }, { DNNL_ARG_WEIGHTS, wts },
				    { DNNL_ARG_BIAS, bias }, { DNNL_ARG_DST, dst } };
	DNNL_CHECK(cpu_exec(c, op, 4, args));
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	double best = 1e30;
	for (int r = 0; r < 3; r++) {
		double t0 = clock_now();
		DNNL_CHECK(cpu_exec(c, op, 4, args));
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		double t = clock_now() - t0;
		if (t < best)
			best = t;
	}
	*secs = best;
out:
	return rc;
}

/* Builds the conv of tower layer `layer` into s->conv[s->n_conv++],
 * choosing the algorithm (fp32/bf16: Winograd vs direct, timed under
 * NN_CONV_AUTO). src and dst (of the layouts src_md, dst_md) are used for
 * timing: their contents are clobbered. */
static int cpu_make_conv(cpu_ctx *c, cpu_set *s, int layer, const nn_backend_options *opt,
			 const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *dst_md,
			 dnnl_memory_t src, dnnl_memory_t dst, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	int kind = cpu_layer_kind(c, layer);
	int c_in = layer == 0 ? a->in_planes : a->channels;
	int post = kind == CPU_CONV_TOWER2 ? POST_SUM_RELU : kind == CPU_CONV_SE2 ? POST_NONE : POST_RELU;
	int q = c->precision == NN_DTYPE_INT8;
	dnnl_data_type_t wdt = q ? dnnl_s8 : c->precision == NN_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t wmd, bmd;
	dnnl_dims_t wd = { a->channels, c_in, 3, 3 }, bd = { a->channels };
	cpu_op cand[2];
	double t[2] = { 1e30, 1e30 };
	memset(cand, 0, sizeof(cand));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, wdt, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	int n_ok = 0;
	/* Winograd first (w = 1), then direct: asked for, timed against
	 * Winograd (auto), or the fallback when Winograd declined. int8 stays
	 * direct (oneDNN's int8 Winograd loses accuracy). */
	for (int w = 1; w >= 0; w--) {
		if (w == 1 && (opt->algo == NN_CONV_DIRECT || q))
			continue;
		if (w == 0 && opt->algo == NN_CONV_WINOGRAD && n_ok)
			continue;
		dnnl_primitive_desc_t pd;
		dnnl_alg_kind_t alg = w ? dnnl_convolution_winograd : dnnl_convolution_direct;
		if (cpu_pd(c, 0, alg, src_md, &wmd, &bmd, dst_md, 3, post, layer, &pd) != dnnl_success)
			continue; /* Winograd declines many shapes: fine */
		s->wino_ok[kind] |= w;
		dnnl_memory_desc_t chosen = *cpu_md(pd, dnnl_query_weights_md);
		if (cpu_op_make(c, pd, &cand[w], err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		dnnl_memory_t wm;
		if (cpu_weights(c, layer, &chosen, &wm, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		n_ok++;
		if (opt->algo == NN_CONV_AUTO && !q) {
			/* Point the scratch view at the current buffer before
			 * running: it may have grown. */
			DNNL_CHECK(dnnl_memory_set_data_handle(cand[w].scratch, c->scratch));
			if (cpu_time_conv(c, &cand[w], src, wm, c->param[layer].bias, dst, &t[w], err,
					  errlen) < 0) {
				rc = -1;
				goto out;
			}
		}
	}
	if (!n_ok) {
		snprintf(err, errlen, "oneDNN offers no convolution for %d -> %d channels, "
			 "batch %d, board %dx%d, %s", c_in, a->channels, s->nb, a->board_w,
			 a->board_h, nn_dtype_name(c->precision));
		rc = -1;
		goto out;
	}
	int best = !cand[0].prim ? 1 : !cand[1].prim ? 0 : t[1] < t[0];
	s->conv[s->n_conv++] = cand[best];
	s->algo[kind] = best;
	memset(&cand[best], 0, sizeof(cand[best]));
out:
	cpu_op_free(&cand[0]);
	cpu_op_free(&cand[1]);
	return rc;
}

/* Memory for md, allocated by oneDNN. */
static dnnl_status_t cpu_alloc(cpu_ctx *c, const dnnl_memory_desc_t *md, dnnl_memory_t *m)
{
	return dnnl_memory_create(m, md, c->engine, DNNL_MEMORY_ALLOCATE);
}

/* The weights of the primitive of op, for parameter p, into s->w[p]. */
static int cpu_bind_weights(cpu_ctx *c, cpu_set *s, const cpu_op *op, int p, char *err,
			    size_t errlen)
{
	int rc = 0;
	const_dnnl_primitive_desc_t pd;
	DNNL_CHECK(dnnl_primitive_get_primitive_desc(op->prim, &pd));
	const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	rc = cpu_weights(c, p, md, &s->w[p], err, errlen);
out:
	return rc;
}

/* The element layout of a 4-D activation md for the plain-C SE pass: plain
 * strides with at most one inner block, on channels (nhwc, nchw, nChw16c,
 * nChw8c). -1 with a message otherwise. */
static int cpu_layout_of(const dnnl_memory_desc_t *md, int channels, cpu_layout *l, char *err,
			 size_t errlen)
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
	if (md->format_kind != dnnl_blocked || md->ndims != 4 || md->offset0 != 0 ||
	    b->inner_nblks > 1 || (b->inner_nblks == 1 && b->inner_idxs[0] != 1)) {
		snprintf(err, errlen, "the plain-C passes (SE, ownership) cannot read oneDNN's activation layout");
		return -1;
	}
	dnnl_dim_t blk = b->inner_nblks ? b->inner_blks[0] : 1;
	l->sn = b->strides[0];
	l->sh = b->strides[2];
	l->sw = b->strides[3];
	l->coff = malloc(sizeof(*l->coff) * (size_t)channels);
	if (!l->coff) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int ch = 0; ch < channels; ch++)
		l->coff[ch] = ch / blk * b->strides[1] + ch % blk;
	l->run = blk > 1 ? (int)blk : b->strides[1] == 1 ? channels : 1;
	return 0;
}

/* Builds the primitives of one batch size. The tower layout is the one a
 * C -> C conv of algorithm `lay` (0 direct, 1 Winograd) prefers; returns 1
 * without building anything when that algorithm is not offered. */
static int cpu_make_set(cpu_ctx *c, cpu_set *s, int nb, int lay, const nn_backend_options *opt,
			char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	int H = a->board_h, W = a->board_w, C = a->channels;
	int q = c->precision == NN_DTYPE_INT8;
	dnnl_data_type_t dt = q ? dnnl_u8 : c->precision == NN_DTYPE_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_data_type_t in_dt = q ? dnnl_s8 : dt;
	dnnl_data_type_t wdt = q ? dnnl_s8 : dt;
	dnnl_memory_desc_t in_md, act_any, in_any, wany, bmd, head_md, pol_md, val_md, hid_md,
		pout_md, vout_md, act_md, x_md;
	dnnl_primitive_desc_t pd = NULL;
	s->nb = nb;
	s->lay = lay;
	s->chunk = -1;
	for (int k = 0; k < CPU_CONV_KINDS; k++)
		s->kind_conv[k] = -1;
	s->w = calloc((size_t)c->n_param, sizeof(*s->w));
	s->conv = calloc((size_t)c->n_layers, sizeof(*s->conv));
	s->layer_conv = calloc((size_t)c->n_layers, sizeof(*s->layer_conv));
	if (!s->w || !s->conv || !s->layer_conv) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	dnnl_dims_t ind = { nb, a->in_planes, H, W }, actd = { nb, C, H, W };
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&in_md, 4, ind, dnnl_f32, dnnl_nchw));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&in_any, 4, ind, in_dt, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&act_any, 4, actd, dt, dnnl_format_tag_any));

	/* The tower layout (direct: nhwc here; Winograd: nChw16c). */
	{
		dnnl_dims_t wd = { C, C, 3, 3 }, bd = { C };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wany, 4, wd, wdt, dnnl_format_tag_any));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
		if (lay && cpu_pd(c, 0, dnnl_convolution_winograd, &act_any, &wany, &bmd, &act_any, 3,
				  POST_RELU, -1, &pd) != dnnl_success)
			return 1; /* s->w etc. are freed by the caller's cpu_free_set */
		if (!lay)
			DNNL_CHECK(cpu_pd(c, 0, dnnl_convolution_direct, &act_any, &wany, &bmd, &act_any,
					  3, POST_RELU, -1, &pd));
		act_md = *cpu_md(pd, dnnl_query_dst_md);
		dnnl_primitive_desc_destroy(pd);
		pd = NULL;
	}
	x_md = act_md;
	x_md.data_type = dnnl_f32; /* same layout, fp32: strides are in elements */
	DNNL_CHECK(cpu_alloc(c, &act_md, &s->act[0]));
	DNNL_CHECK(cpu_alloc(c, &act_md, &s->act[1]));
	DNNL_CHECK(cpu_alloc(c, &in_md, &s->in_user));
	DNNL_CHECK(dnnl_memory_create(&s->in_lent, &in_md, c->engine, DNNL_MEMORY_NONE));
	if (c->has_se) {
		DNNL_CHECK(cpu_alloc(c, &x_md, &s->se_x));
		if (cpu_layout_of(&act_md, C, &s->xl, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		s->se_buf = malloc(sizeof(float) * (size_t)nb *
				   (3 * C + a->se_channels +
				    (a->masked_pool ? (size_t)a->board_w * a->board_h : 0)));
		if (!s->se_buf) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			goto out;
		}
	}
	/* Zero the buffers once: rows beyond a short batch then hold finite
	 * values (an earlier batch or zeros), and the timing runs see no NaN
	 * or denormal garbage. */
	{
		dnnl_memory_t zero[4] = { s->act[0], s->act[1], s->in_user, s->se_x };
		for (int i = 0; i < 4; i++) {
			void *h;
			const dnnl_memory_desc_t *md;
			if (!zero[i])
				continue;
			DNNL_CHECK(dnnl_memory_get_data_handle(zero[i], &h));
			DNNL_CHECK(dnnl_memory_get_memory_desc(zero[i], &md));
			memset(h, 0, dnnl_memory_desc_get_size(md));
		}
	}

	/* Input conv: let it pick its src layout; reorder (int8: quantize)
	 * the user's NCHW. */
	dnnl_memory_desc_t src_md;
	dnnl_memory_t src = s->in_user;
	{
		dnnl_dims_t wd = { C, a->in_planes, 3, 3 };
		dnnl_memory_desc_t w_in;
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_in, 4, wd, wdt, dnnl_format_tag_any));
		DNNL_CHECK(cpu_pd(c, 0, dnnl_convolution_direct, &in_any, &w_in, &bmd, &act_md, 3,
				  POST_RELU, -1, &pd));
		src_md = *cpu_md(pd, dnnl_query_src_md);
		dnnl_primitive_desc_destroy(pd);
		pd = NULL;
		if (!dnnl_memory_desc_equal(&src_md, &in_md)) {
			DNNL_CHECK(cpu_alloc(c, &src_md, &s->in_conv));
			if (cpu_reorder_make(c, &in_md, &src_md, q ? c->q_in : 1.0f, &s->reorder_in, err,
					     errlen) < 0) {
				rc = -1;
				goto out;
			}
			src = s->in_conv;
			/* Fill in_conv with valid (zero) input for the timing. */
			dnnl_exec_arg_t args[3] = { { DNNL_ARG_FROM, s->in_user }, { DNNL_ARG_TO, src } };
			DNNL_CHECK(cpu_exec(c, &s->reorder_in, 2, args));
			DNNL_CHECK(dnnl_stream_wait(c->stream));
		}
	}
	/* Tower convs: one per kind shared by the layers (fp32, bf16), one
	 * per layer (int8: the scales differ). */
	for (int l = 0; l < c->n_layers; l++) {
		int kind = cpu_layer_kind(c, l);
		if (!q && s->kind_conv[kind] >= 0) {
			s->layer_conv[l] = s->kind_conv[kind];
			continue;
		}
		const dnnl_memory_desc_t *smd = l == 0 ? &src_md : &act_md;
		const dnnl_memory_desc_t *dmd = kind == CPU_CONV_SE2 ? &x_md : &act_md;
		dnnl_memory_t sm = l == 0 ? src : kind == CPU_CONV_TOWER1 ? s->act[0] : s->act[1];
		dnnl_memory_t dm = kind == CPU_CONV_SE2 ? s->se_x : kind == CPU_CONV_TOWER1 ? s->act[1] : s->act[0];
		if (cpu_make_conv(c, s, l, opt, smd, dmd, sm, dm, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		s->layer_conv[l] = s->kind_conv[kind] = s->n_conv - 1;
	}
	for (int l = 0; l < c->n_layers; l++)
		if (cpu_bind_weights(c, s, &s->conv[s->layer_conv[l]], l, err, errlen) < 0) {
			rc = -1;
			goto out;
		}

	/* Heads: the 1x1 convs in a loop of this file (cpu_head_convs) read
	 * the tower's output where it lies when its channels lie side by side
	 * in runs of 8 or all together (fp32 nhwc, nChw16c or nChw8c; the
	 * int8 tower's u8 nhwc, with its scale),
	 * else a reorder to nhwc fp32 first (bf16); they write nhwc, and
	 * oneDNN's inner products take that. oneDNN's 1x1 conv of 1 or 2
	 * output channels runs at a sixteenth of its vector width: on a 19x19
	 * 6x64 int8 network the two convs and the reorder before them took
	 * 13% of a forward (ONEDNN_VERBOSE), the loop about 4% (perf). */
	{
		dnnl_dims_t hd = { nb, C, H, W };
		dnnl_memory_desc_t u8_md;
		char why[128];
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&head_md, 4, hd, dnnl_f32, dnnl_nhwc));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&u8_md, 4, hd, dnnl_u8, dnnl_nhwc));
		s->head_u8 = q && dnnl_memory_desc_equal(&u8_md, &act_md);
		bool direct = s->head_u8 || (act_md.data_type == dnnl_f32 &&
					     cpu_layout_of(&act_md, C, &s->hl, why, sizeof(why)) == 0 &&
					     (s->hl.run == C || s->hl.run % 8 == 0));
		if (!direct) {
			free(s->hl.coff);
			s->hl.coff = NULL;
			DNNL_CHECK(cpu_alloc(c, &head_md, &s->head_in));
			if (cpu_reorder_make(c, &act_md, &head_md,
					     q ? 1.0f / c->q_out[c->n_layers - 1] : 1.0f,
					     &s->reorder_head, err, errlen) < 0) {
				rc = -1;
				goto out;
			}
		}
		if (!s->hl.coff &&
		    cpu_layout_of(direct ? &act_md : &head_md, C, &s->hl, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
	}
	{
		dnnl_dims_t pd4 = { nb, a->policy_channels, H, W }, vd4 = { nb, a->value_channels, H, W };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&pol_md, 4, pd4, dnnl_f32, dnnl_nhwc));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&val_md, 4, vd4, dnnl_f32, dnnl_nhwc));
		DNNL_CHECK(cpu_alloc(c, &pol_md, &s->pol_act));
		DNNL_CHECK(cpu_alloc(c, &val_md, &s->val_act));
	}
	if (c->net->own_fc.w && cpu_layout_of(&val_md, a->value_channels, &s->vl, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	struct {
		const dnnl_memory_desc_t *src; /* input layout */
		int ndims;        /* of the weights: 4 after a conv, 2 after an FC */
		dnnl_dims_t wd;   /* weight dims */
		int n_out;        /* outputs */
		int post;         /* fused post-op */
		int p;            /* parameter */
		cpu_op *op;       /* where it goes */
		dnnl_memory_t *m; /* its output */
		dnnl_memory_desc_t *md;
	} fcs[3] = {
		{ &pol_md, 4, { a->policy_outputs, a->policy_channels, H, W }, a->policy_outputs,
		  POST_NONE, P_POL_FC(c), &s->pol_fc, &s->pol_out, &pout_md },
		{ &val_md, 4, { a->value_hidden, a->value_channels, H, W }, a->value_hidden,
		  POST_RELU, P_VAL_FC1(c), &s->val_fc1, &s->val_hid, &hid_md },
		{ &hid_md, 2, { a->value_outputs, a->value_hidden }, a->value_outputs,
		  a->value_outputs == 1 ? POST_TANH : POST_NONE, P_VAL_FC2(c), &s->val_fc2,
		  &s->val_out, &vout_md },
	};
	for (int f = 0; f < 3; f++) {
		dnnl_dims_t bd = { fcs[f].n_out }, od = { nb, fcs[f].n_out };
		dnnl_memory_desc_t w1, b1;
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w1, fcs[f].ndims, fcs[f].wd, dnnl_f32,
							 dnnl_format_tag_any));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b1, 1, bd, dnnl_f32, dnnl_x));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(fcs[f].md, 2, od, dnnl_f32, dnnl_nc));
		DNNL_CHECK(cpu_pd(c, 1, dnnl_convolution_direct, fcs[f].src, &w1, &b1, fcs[f].md, 0,
				  fcs[f].post, -1, &pd));
		rc = cpu_op_make(c, pd, fcs[f].op, err, errlen);
		pd = NULL;
		if (rc < 0 || cpu_bind_weights(c, s, fcs[f].op, fcs[f].p, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		DNNL_CHECK(cpu_alloc(c, fcs[f].md, fcs[f].m));
	}
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	return rc;
}

static void cpu_free_set(cpu_set *s)
{
	dnnl_memory_t *mems[] = { &s->in_user, &s->in_lent, &s->in_conv, &s->act[0], &s->act[1],
				  &s->se_x, &s->head_in, &s->pol_act, &s->val_act, &s->val_hid,
				  &s->pol_out, &s->val_out };
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
		if (*mems[i])
			dnnl_memory_destroy(*mems[i]);
	cpu_op_free(&s->reorder_in);
	cpu_op_free(&s->reorder_head);
	for (int k = 0; k < s->n_conv; k++)
		cpu_op_free(&s->conv[k]);
	free(s->conv);
	free(s->layer_conv);
	cpu_op_free(&s->pol_fc);
	cpu_op_free(&s->val_fc1);
	cpu_op_free(&s->val_fc2);
	free(s->xl.coff);
	free(s->vl.coff);
	free(s->hl.coff);
	free(s->se_buf);
	free(s->w);
	memset(s, 0, sizeof(*s));
	s->chunk = -1;
}

static void cpu_destroy(void *vctx)
{
	cpu_ctx *c = vctx;
	if (!c)
		return;
	for (int i = 0; i < c->n_set; i++)
		cpu_free_set(&c->set[i]);
	if (c->param)
		for (int p = 0; p < c->n_param; p++) {
			for (int i = 0; i < c->param[p].n_fmt; i++)
				dnnl_memory_destroy(c->param[p].fmt[i].mem);
			if (c->param[p].bias)
				dnnl_memory_destroy(c->param[p].bias);
		}
	free(c->param);
	if (c->stream)
		dnnl_stream_destroy(c->stream);
	if (c->engine)
		dnnl_engine_destroy(c->engine);
	free(c->scratch);
	free(c->qdata);
	free(c->amax);
	nn_net_free(c->net);
	free(c);
}

/* Sets up param[p] over conv cv (folded in ctx->net); bias may replace
 * cv->b (int8's scaled copy). */
static int cpu_param_conv(cpu_ctx *c, int p, const nn_conv *cv, const float *bias, char *err,
			  size_t errlen)
{
	int rc = 0;
	dnnl_dims_t wd = { cv->c_out, cv->c_in, cv->k, cv->k }, bd = { cv->c_out };
	dnnl_memory_desc_t bmd;
	c->param[p].w = cv->w;
	c->param[p].b = cv->b;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c->param[p].w_user, 4, wd, dnnl_f32, dnnl_oihw));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_create(&c->param[p].bias, &bmd, c->engine,
				      (void *)(bias ? bias : cv->b)));
out:
	return rc;
}

/* Same for an FC: 4-D weights (out, ch, H, W) after a head conv, 2-D after
 * an FC; both are the [out][in] matrix of net.h in memory. */
static int cpu_param_fc(cpu_ctx *c, int p, const nn_fc *f, int ch, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	dnnl_memory_desc_t bmd;
	dnnl_dims_t bd = { f->n_out };
	c->param[p].w = f->w;
	if (ch) {
		dnnl_dims_t wd = { f->n_out, ch, a->board_h, a->board_w };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c->param[p].w_user, 4, wd, dnnl_f32, dnnl_oihw));
	} else {
		dnnl_dims_t wd = { f->n_out, f->n_in };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c->param[p].w_user, 2, wd, dnnl_f32, dnnl_oi));
	}
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_create(&c->param[p].bias, &bmd, c->engine, (void *)f->b));
out:
	return rc;
}

/* Squeeze-excitation of block `blk` (net.h) on set s: se_x holds conv2's
 * output (fp32); act[0] holds the skip and receives
 * relu(sigmoid(z1) * x + z2 + skip) in the tower's type. The loops walk
 * each point's channels in the layout's runs of side-by-side channels and
 * the function is built for AVX-512 and AVX2 beside the baseline (chosen
 * at load), so that they vectorise: a scalar int8 pass made a 4x48 9x9 SE
 * network evaluate at 0.34 of the plain one's speed, this one at 0.9. int8
 * rounds to nearest even by adding and taking away 1.5 x 2^23
 * (nearbyintf's rounding, without a call into libm per element). */
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("O3"))) static int
cpu_se(cpu_ctx *c, cpu_set *s, int blk, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	const nn_block *b = &c->net->block[blk];
	const int C = a->channels, S = a->se_channels, H = a->board_h, W = a->board_w;
	const int nb = s->nb, run = s->xl.run;
	const cpu_layout *L = &s->xl;
	float *pool = s->se_buf, *hid = pool + (size_t)nb * C, *z = hid + (size_t)nb * S;
	void *xh, *yh;
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	DNNL_CHECK(dnnl_memory_get_data_handle(s->se_x, &xh));
	DNNL_CHECK(dnnl_memory_get_data_handle(s->act[0], &yh));
	const float *x = xh;
	/* Masked pooling: each point's weight in the mean (cpu_run_set made
	 * them from the input planes); else the plain mean. */
	const float *pw = a->masked_pool ? z + (size_t)nb * 2 * C : NULL;
	memset(pool, 0, sizeof(float) * (size_t)nb * C);
	for (int n = 0; n < nb; n++)
		for (int y = 0; y < H; y++)
			for (int xx = 0; xx < W; xx++) {
				float wt = pw ? pw[(size_t)n * H * W + (size_t)y * W + xx]
					      : 1.0f / (float)(H * W);
				if (wt == 0.0f)
					continue;
				for (int c0 = 0; c0 < C; c0 += run) {
					const float *restrict px =
						x + n * L->sn + y * L->sh + xx * L->sw + L->coff[c0];
					float *restrict pp = pool + (size_t)n * C + c0;
					int m = C - c0 < run ? C - c0 : run;
					for (int k = 0; k < m; k++)
						pp[k] += wt * px[k];
				}
			}
	for (int n = 0; n < nb; n++) {
		float *pp = pool + (size_t)n * C, *ph = hid + (size_t)n * S, *pz = z + (size_t)n * 2 * C;
		for (int j = 0; j < S; j++) {
			float acc = b->se1.b[j];
			const float *wr = b->se1.w + (size_t)j * C;
			for (int ch = 0; ch < C; ch++)
				acc += wr[ch] * pp[ch];
			ph[j] = acc > 0.0f ? acc : 0.0f;
		}
		for (int k = 0; k < 2 * C; k++) {
			float acc = b->se2.b[k];
			const float *wr = b->se2.w + (size_t)k * S;
			for (int j = 0; j < S; j++)
				acc += wr[j] * ph[j];
			pz[k] = k < C ? 1.0f / (1.0f + expf(-acc)) : acc;
		}
	}
	/* int8: skip in the block input's scale, output in the block's. */
	float q_skip = 1.0f, q_y = 1.0f;
	if (c->precision == NN_DTYPE_INT8) {
		q_skip = 1.0f / c->q_out[2 * blk];
		q_y = c->q_out[2 + 2 * blk];
	}
	const float round = 0x1.8p23f;
	for (int n = 0; n < nb; n++) {
		const float *g0 = z + (size_t)n * 2 * C;
		for (int y = 0; y < H; y++)
			for (int xx = 0; xx < W; xx++)
				for (int c0 = 0; c0 < C; c0 += run) {
					dnnl_dim_t base = n * L->sn + y * L->sh + xx * L->sw + L->coff[c0];
					const float *restrict px = x + base, *restrict g = g0 + c0,
						    *restrict bias = g0 + C + c0;
					int m = C - c0 < run ? C - c0 : run;
					if (c->precision == NN_DTYPE_FP32) {
						float *restrict py = (float *)yh + base;
						for (int k = 0; k < m; k++) {
							float v = g[k] * px[k] + bias[k] + py[k];
							py[k] = v > 0.0f ? v : 0.0f;
						}
					} else if (c->precision == NN_DTYPE_BF16) {
						uint16_t *restrict py = (uint16_t *)yh + base;
						for (int k = 0; k < m; k++) {
							float v = g[k] * px[k] + bias[k] +
								  nn_float_from_bf16(py[k]);
							py[k] = nn_bf16_from_float(v > 0.0f ? v : 0.0f);
						}
					} else {
						uint8_t *restrict py = (uint8_t *)yh + base;
						for (int k = 0; k < m; k++) {
							float v = (g[k] * px[k] + bias[k] + (float)py[k] * q_skip) * q_y;
							v = v > 0.0f ? v : 0.0f;
							v = v < 255.0f ? v : 255.0f;
							py[k] = (uint8_t)(int)(v + round - round);
						}
					}
				}
	}
out:
	return rc;
}

/* Calibration: folds max |m| (an fp32 buffer) into *amax. */
static int cpu_stat(cpu_ctx *c, dnnl_memory_t m, float *amax, char *err, size_t errlen)
{
	int rc = 0;
	void *h;
	const dnnl_memory_desc_t *md;
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	DNNL_CHECK(dnnl_memory_get_data_handle(m, &h));
	DNNL_CHECK(dnnl_memory_get_memory_desc(m, &md));
	assert(md->data_type == dnnl_f32);
	size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
	const float *f = h;
	float mx = *amax;
	for (size_t i = 0; i < n; i++)
		mx = fmaxf(mx, fabsf(f[i]));
	*amax = mx;
out:
	return rc;
}

/* ---- head convs ------------------------------------------------------------ */

/* Up to four output channels of the heads' 1x1 convs, from either head:
 * channel k has C weights w[k] and bias b[k], and point p's value goes to
 * out[k][p * stride[k]]. */
typedef struct cpu_head_rows {
	int n;               /* 1..4 */
	const float *w[4];
	float b[4];
	float *out[4];
	int stride[4];
} cpu_head_rows;

/* The heads' input: nb positions of H x W points of C channels, channel
 * ch of point (n, y, x) at n * sn + y * sh + x * sw + coff[ch] in layout L
 * (fp32 xf, or u8 xu times scale); its channels lie side by side in
 * runs of 8 (a block) or all together. */
typedef struct cpu_head_in {
	const float *xf;
	const uint8_t *xu;
	float scale;
	const cpu_layout *L;
	int nb, H, W, C;
} cpu_head_in;

/* Input element ch of the point at base. */
static inline float cpu_head_x(const cpu_head_in *in, size_t base, int ch)
{
	size_t at = base + (size_t)in->L->coff[ch];
	return in->xu ? (float)in->xu[at] : in->xf[at];
}

/* Those channels' 1x1 conv + ReLU over every point of the input, point p
 * (in n, y, x order) into out[k][p * stride[k]]. The plain loop is the
 * reference; the AVX2 one below gives the same sums in another order. */
static void cpu_head_points_plain(const cpu_head_in *in, const cpu_head_rows *r)
{
	const cpu_layout *L = in->L;
	size_t p = 0;
	for (int n = 0; n < in->nb; n++)
		for (int y = 0; y < in->H; y++)
			for (int x = 0; x < in->W; x++, p++) {
				size_t base = (size_t)(n * L->sn + y * L->sh + x * L->sw);
				for (int k = 0; k < r->n; k++) {
					float z = 0;
					for (int ch = 0; ch < in->C; ch++)
						z += r->w[k][ch] * cpu_head_x(in, base, ch);
					z = r->b[k] + in->scale * z;
					r->out[k][p * (size_t)r->stride[k]] = z > 0 ? z : 0;
				}
			}
}

/* The same, eight channels at a time (a run of the layout) into four
 * accumulators (a point's input is loaded and converted once for all
 * four), then the four sums at once. Rows past r->n repeat the last:
 * computed, not stored. */
__attribute__((target("avx2,fma"))) static void cpu_head_points_avx2(const cpu_head_in *in,
								      const cpu_head_rows *r)
{
	const cpu_layout *L = in->L;
	const float *w[4];
	float bias[4], t[4];
	for (int k = 0; k < 4; k++) {
		w[k] = r->w[k < r->n ? k : r->n - 1];
		bias[k] = r->b[k < r->n ? k : r->n - 1];
	}
	const __m128 vb = _mm_loadu_ps(bias), vs = _mm_set1_ps(in->scale), zero = _mm_setzero_ps();
	const int C = in->C, c8 = C & ~7;
	size_t p = 0;
	for (int n = 0; n < in->nb; n++)
		for (int y = 0; y < in->H; y++)
			for (int xx = 0; xx < in->W; xx++, p++) {
				size_t base = (size_t)(n * L->sn + y * L->sh + xx * L->sw);
				__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
				for (int ch = 0; ch < c8; ch += 8) {
					size_t at = base + (size_t)L->coff[ch];
					__m256 x;
					if (in->xu)
						x = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(
							_mm_loadl_epi64((const __m128i *)(in->xu + at))));
					else
						x = _mm256_loadu_ps(in->xf + at);
					a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[0] + ch), a0);
					a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[1] + ch), a1);
					a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[2] + ch), a2);
					a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(w[3] + ch), a3);
				}
				/* Lane k: row k's total over the vector part. */
				__m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
				_mm_storeu_ps(t, _mm_add_ps(_mm256_castps256_ps128(h),
							    _mm256_extractf128_ps(h, 1)));
				for (int ch = c8; ch < C; ch++) {
					float x = cpu_head_x(in, base, ch);
					for (int k = 0; k < 4; k++)
						t[k] += w[k][ch] * x;
				}
				_mm_storeu_ps(t, _mm_max_ps(_mm_add_ps(vb, _mm_mul_ps(vs, _mm_loadu_ps(t))),
							    zero));
				for (int k = 0; k < r->n; k++)
					r->out[k][p * (size_t)r->stride[k]] = t[k];
			}
}

/* The policy and value 1x1 convs (+ BN, folded, + ReLU) of set s on the
 * tower output `tower` (nhwc: fp32, or the int8 tower's u8 with its
 * scale), into pol_act and val_act (nhwc), four output channels a pass
 * over the input (one pass for Leela Zero's 2 + 1 and sente's 2 + 2). */
static int cpu_head_convs(cpu_ctx *c, cpu_set *s, dnnl_memory_t tower, char *err, size_t errlen)
{
	const nn_arch *a = &c->arch;
	int rc = 0;
	void *x, *po, *vo;
	DNNL_CHECK(dnnl_memory_get_data_handle(tower, &x));
	DNNL_CHECK(dnnl_memory_get_data_handle(s->pol_act, &po));
	DNNL_CHECK(dnnl_memory_get_data_handle(s->val_act, &vo));
	const cpu_param *pa[2] = { &c->param[P_POL_CONV(c)], &c->param[P_VAL_CONV(c)] };
	const int nch[2] = { a->policy_channels, a->value_channels };
	float *const out[2] = { po, vo };
	const cpu_head_in in = { .xf = s->head_u8 ? NULL : x,
				 .xu = s->head_u8 ? x : NULL,
				 .scale = s->head_u8 ? 1.0f / c->q_out[c->n_layers - 1] : 1.0f,
				 .L = &s->hl, .nb = s->nb, .H = a->board_h, .W = a->board_w,
				 .C = a->channels };
	cpu_head_rows r = { .n = 0 };
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < nch[h]; k++) {
			r.w[r.n] = pa[h]->w + (size_t)k * (size_t)a->channels;
			r.b[r.n] = pa[h]->b[k];
			r.out[r.n] = out[h] + k;
			r.stride[r.n] = nch[h];
			bool last = h == 1 && k == nch[h] - 1;
			if (++r.n < 4 && !last)
				continue;
			if (c->head_avx2)
				cpu_head_points_avx2(&in, &r);
			else
				cpu_head_points_plain(&in, &r);
			r.n = 0;
		}
out:
	return rc;
}

/* Runs every primitive of set s on the input `in` (NCHW fp32, nb rows:
 * s->in_user, or s->in_lent on a caller's buffer). */
static int cpu_run_set(cpu_ctx *c, cpu_set *s, dnnl_memory_t in, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	dnnl_exec_arg_t args[8];
	dnnl_memory_t src = in;
	if (c->amax && cpu_stat(c, in, &c->amax[c->n_layers], err, errlen) < 0)
		return -1;
	if (c->has_se && a->masked_pool) {
		void *h;
		DNNL_CHECK(dnnl_memory_get_data_handle(in, &h));
		int hw = a->board_w * a->board_h;
		float *pw = s->se_buf + (size_t)s->nb * (3 * a->channels + a->se_channels);
		for (int n = 0; n < s->nb; n++)
			nn_board_pool_weights(a->encoding,
					      (const float *)h + (size_t)n * a->in_planes * hw, hw,
					      pw + (size_t)n * hw);
	}
	if (s->reorder_in.prim) {
		args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, in };
		args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, s->in_conv };
		DNNL_CHECK(cpu_exec(c, &s->reorder_in, 2, args));
		src = s->in_conv;
	}
#define RUN(op, in, p, o)                                                       \
	do {                                                                    \
		args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, (in) };              \
		args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, s->w[(p)] };     \
		args[2] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, c->param[(p)].bias }; \
		args[3] = (dnnl_exec_arg_t){ DNNL_ARG_DST, (o) };               \
		DNNL_CHECK(cpu_exec(c, (op), 4, args));                         \
	} while (0)
#define STAT(l, m)                                                                     \
	do {                                                                           \
		if (c->amax && cpu_stat(c, (m), &c->amax[(l)], err, errlen) < 0) {     \
			rc = -1;                                                       \
			goto out;                                                      \
		}                                                                      \
	} while (0)
	RUN(&s->conv[s->layer_conv[0]], src, P_INPUT, s->act[0]);
	STAT(0, s->act[0]);
	for (int i = 0; i < a->blocks; i++) {
		RUN(&s->conv[s->layer_conv[P_CONV1(i)]], s->act[0], P_CONV1(i), s->act[1]);
		STAT(P_CONV1(i), s->act[1]);
		if (a->block_kind[i] == NN_BLOCK_SE) {
			RUN(&s->conv[s->layer_conv[P_CONV2(i)]], s->act[1], P_CONV2(i), s->se_x);
			if (cpu_se(c, s, i, err, errlen) < 0) {
				rc = -1;
				goto out;
			}
		} else {
			/* act[0] holds the skip; the sum post-op adds it. */
			RUN(&s->conv[s->layer_conv[P_CONV2(i)]], s->act[1], P_CONV2(i), s->act[0]);
		}
		STAT(P_CONV2(i), s->act[0]);
	}
	dnnl_memory_t tower = s->act[0];
	if (s->reorder_head.prim) {
		args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, s->act[0] };
		args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, s->head_in };
		DNNL_CHECK(cpu_exec(c, &s->reorder_head, 2, args));
		tower = s->head_in;
	}
	if (cpu_head_convs(c, s, tower, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	RUN(&s->pol_fc, s->pol_act, P_POL_FC(c), s->pol_out);
	RUN(&s->val_fc1, s->val_act, P_VAL_FC1(c), s->val_hid);
	RUN(&s->val_fc2, s->val_hid, P_VAL_FC2(c), s->val_out);
#undef RUN
#undef STAT
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
	return rc;
}

/* Points every scratch view of s at the (final or current) scratchpad. */
static int cpu_set_scratch(cpu_ctx *c, cpu_set *s, char *err, size_t errlen)
{
	int rc = 0;
	cpu_op *ops[] = { &s->reorder_in, &s->reorder_head, &s->pol_fc, &s->val_fc1, &s->val_fc2 };
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (ops[k]->scratch)
			DNNL_CHECK(dnnl_memory_set_data_handle(ops[k]->scratch, c->scratch));
	for (int k = 0; k < s->n_conv; k++)
		DNNL_CHECK(dnnl_memory_set_data_handle(s->conv[k].scratch, c->scratch));
out:
	return rc;
}

/* Seconds of a whole pass of set s (best of three after a warm-up: the
 * machine may be shared, the minimum is the least noisy). */
static int cpu_time_set(cpu_ctx *c, cpu_set *s, double *secs, char *err, size_t errlen)
{
	if (cpu_set_scratch(c, s, err, errlen) < 0 || cpu_run_set(c, s, s->in_user, err, errlen) < 0)
		return -1;
	*secs = 1e30;
	for (int r = 0; r < 3; r++) {
		double t0 = clock_now();
		if (cpu_run_set(c, s, s->in_user, err, errlen) < 0)
			return -1;
		double t = clock_now() - t0;
		if (t < *secs)
			*secs = t;
	}
	return 0;
}

/* Builds the set for batch nb in the best layout: a Winograd-friendly tower
 * and a direct-friendly one are both built and timed end to end under
 * NN_CONV_AUTO (each also picks per layer inside its layout). s is left
 * empty on failure. */
static int cpu_make_set_best(cpu_ctx *c, cpu_set *s, int nb, const nn_backend_options *opt,
			     char *err, size_t errlen)
{
	cpu_set alt;
	int r;
	double t_s, t_alt;
	memset(&alt, 0, sizeof(alt));
	if (opt->algo == NN_CONV_DIRECT || c->precision == NN_DTYPE_INT8)
		r = cpu_make_set(c, s, nb, 0, opt, err, errlen);
	else if (opt->algo == NN_CONV_WINOGRAD) {
		r = cpu_make_set(c, s, nb, 1, opt, err, errlen);
		if (r == 1) {
			cpu_free_set(s);
			r = cpu_make_set(c, s, nb, 0, opt, err, errlen);
		}
	} else {
		r = cpu_make_set(c, s, nb, 0, opt, err, errlen);
		if (r == 0)
			r = cpu_make_set(c, &alt, nb, 1, opt, err, errlen);
		if (r == 1)
			r = 0; /* no Winograd layout: direct it is */
		else if (r == 0) {
			if (cpu_time_set(c, s, &t_s, err, errlen) < 0 ||
			    cpu_time_set(c, &alt, &t_alt, err, errlen) < 0)
				r = -1;
			else if (t_alt < t_s) {
				cpu_free_set(s);
				*s = alt;
				memset(&alt, 0, sizeof(alt));
				s->secs = t_alt;
			} else
				s->secs = t_s;
		}
	}
	cpu_free_set(&alt);
	if (r < 0)
		cpu_free_set(s);
	return r < 0 ? -1 : 0;
}

/* Frees weight formats that no kept set reads (losers of the timing). */
static void cpu_prune_weights(cpu_ctx *c)
{
	for (int p = 0; p < c->n_param; p++) {
		cpu_param *pa = &c->param[p];
		int keep = 0;
		for (int i = 0; i < pa->n_fmt; i++) {
			int used = 0;
			for (int k = 0; k < c->n_set; k++)
				used |= c->set[k].w && c->set[k].w[p] == pa->fmt[i].mem;
			if (used)
				pa->fmt[keep++] = pa->fmt[i];
			else
				dnnl_memory_destroy(pa->fmt[i].mem);
		}
		pa->n_fmt = keep;
	}
}

/* Picks, for each set, whether whole passes or passes of a smaller set are
 * faster (timed), and frees the sets that will never run whole. */
static int cpu_choose_chunks(cpu_ctx *c, char *err, size_t errlen)
{
	for (int k = 0; k < c->n_set; k++)
		if (c->set[k].secs == 0 && cpu_time_set(c, &c->set[k], &c->set[k].secs, err, errlen) < 0)
			return -1;
	for (int k = 1; k < c->n_set; k++) {
		cpu_set *s = &c->set[k];
		int best = -1;
		double t_best = s->secs;
		for (int j = 0; j < k; j++) {
			const cpu_set *t = &c->set[j];
			if (t->chunk >= 0)
				continue;
			int passes = (s->nb + t->nb - 1) / t->nb;
			/* Ask for a clear win: timings on a shared machine are noisy. */
			if (passes * t->secs < 0.95 * t_best) {
				best = j;
				t_best = passes * t->secs;
			}
		}
		if (best >= 0) {
			int nb = s->nb;
			double secs = t_best;
			cpu_free_set(s);
			s->nb = nb;
			s->chunk = best;
			s->secs = secs;
		}
	}
	return 0;
}

static int cpu_create_ctx(const nn_net *net, int max_batch, const nn_backend_options *opt,
			  int single_set, cpu_ctx **out_ctx, char *err, size_t errlen);

/* Fills planes [n][in_planes][H][W] with positions of random legal play
 * (0 to about 2/3 of the board's points in moves; fixed seed). */
static int cpu_random_positions(const nn_arch *a, int n, uint64_t seed, float *planes, char *err,
				size_t errlen)
{
	int rc = -1;
	game *g = malloc(sizeof(*g));
	int *moves = malloc(sizeof(int) * GAME_MAX_ACTIONS);
	game_params gp = nn_arch_params(a);
	if (!g || !moves) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	int max_moves = a->board_w * a->board_h * 2 / 3;
	uint64_t s = seed | 1;
	for (int i = 0; i < n; i++) {
		if (game_init(g, &gp) != GAME_OK) {
			snprintf(err, errlen, "calibration: cannot start a %s game of the net's board",
				 game_kind_name(a->game));
			goto out;
		}
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		int len = (int)(s % (uint64_t)(max_moves + 1));
		for (int m = 0; m < len; m++) {
			int k = game_legal_moves(g, moves);
			if (k == 0)
				break;
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			int mv = moves[s % (uint64_t)k];
			if (mv == game_pass_move(g) && k > 1)
				mv = moves[0] == mv ? moves[1] : moves[0];
			if (game_play(g, mv) != GAME_OK)
				break;
		}
		if (nn_encode(g, a->encoding, planes + (size_t)i * in_n) < 0) {
			snprintf(err, errlen, "calibration: the net's encoding does not fit its game");
			goto out;
		}
	}
	rc = 0;
out:
	free(g);
	free(moves);
	return rc;
}

/* int8: weight scales, then activation scales from an fp32 run over
 * calibration positions, then the derived output/sum scales and biases. */
static int cpu_calibrate(cpu_ctx *c, const nn_net *net, const nn_backend_options *opt, char *err,
			 size_t errlen)
{
	int rc = -1;
	const nn_arch *a = &c->arch;
	const int C = a->channels, L = c->n_layers;
	cpu_ctx *f = NULL;
	float *planes = NULL;
	double t0 = clock_now();
	size_t nq = (size_t)2 * L + (size_t)3 * L * C;
	c->qdata = calloc(nq, sizeof(float));
	if (!c->qdata)
		goto oom;
	c->q_out = c->qdata;
	c->q_sum = c->q_out + L;
	c->oscale = c->q_sum + L;
	c->qbias = c->oscale + (size_t)L * C;
	c->wq = c->qbias + (size_t)L * C;
	for (int l = 0; l < L; l++) {
		const float *w = c->param[l].w;
		size_t per = (size_t)(l == 0 ? a->in_planes : C) * 9;
		for (int o = 0; o < C; o++) {
			float mx = 0.0f;
			for (size_t i = 0; i < per; i++)
				mx = fmaxf(mx, fabsf(w[o * per + i]));
			c->wq[(size_t)l * C + o] = mx > 0.0f ? 127.0f / mx : 1.0f;
		}
	}
	/* The fp32 run: one set, no timing; Winograd where offered (faster
	 * here, and as exact as direct to 1e-4). */
	nn_backend_options fo = *opt;
	fo.precision = NN_DTYPE_FP32;
	fo.algo = NN_CONV_WINOGRAD;
	fo.verbose = 0;
	if (cpu_create_ctx(net, CPU_CALIB_BATCH, &fo, 1, &f, err, errlen) < 0)
		goto out;
	f->amax = calloc((size_t)L + 1, sizeof(float));
	c->calib_n = opt->calib_positions > 0 ? opt->calib_positions : NN_CALIB_POSITIONS_DEFAULT;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	planes = malloc(sizeof(float) * in_n * CPU_CALIB_BATCH);
	if (!f->amax || !planes)
		goto oom;
	cpu_set *s = &f->set[f->n_set - 1];
	void *h;
	if (dnnl_memory_get_data_handle(s->in_user, &h) != dnnl_success) {
		snprintf(err, errlen, "calibration: no input buffer");
		goto out;
	}
	for (int done = 0; done < c->calib_n; done += CPU_CALIB_BATCH) {
		int n = c->calib_n - done < CPU_CALIB_BATCH ? c->calib_n - done : CPU_CALIB_BATCH;
		if (cpu_random_positions(a, n, CPU_CALIB_SEED + (uint64_t)done * 7919, planes, err,
					 errlen) < 0)
			goto out;
		/* A short last batch repeats its positions to fill the set. */
		for (int i = 0; i < CPU_CALIB_BATCH; i++)
			memcpy((float *)h + i * in_n, planes + (size_t)(i % n) * in_n,
			       sizeof(float) * in_n);
		if (cpu_run_set(f, s, s->in_user, err, errlen) < 0)
			goto out;
	}
	float in_max = f->amax[L];
	c->q_in = in_max > 0.0f ? 127.0f / in_max : 1.0f;
	for (int l = 0; l < L; l++)
		c->q_out[l] = f->amax[l] > 0.0f ? 255.0f / f->amax[l] : 1.0f;
	for (int l = 0; l < L; l++) {
		int kind = cpu_layer_kind(c, l);
		float q_src = cpu_q_src(c, l);
		float q_dst = kind == CPU_CONV_SE2 ? 1.0f : c->q_out[l];
		/* conv2 of block i adds the block's input, the output of layer 2i. */
		c->q_sum[l] = kind == CPU_CONV_TOWER2 ? c->q_out[l] / c->q_out[l - 2] : 1.0f;
		const float *b = l == 0 ? c->net->input.b
				 : l % 2 ? c->net->block[(l - 1) / 2].conv1.b
					 : c->net->block[(l - 2) / 2].conv2.b;
		for (int o = 0; o < C; o++) {
			float wq = c->wq[(size_t)l * C + o];
			c->oscale[(size_t)l * C + o] = q_dst / (q_src * wq);
			c->qbias[(size_t)l * C + o] = b[o] * q_src * wq;
		}
		c->param[l].wq = c->wq + (size_t)l * C;
	}
	c->calib_secs = (float)(clock_now() - t0);
	rc = 0;
	goto out;
oom:
	snprintf(err, errlen, "out of memory calibrating int8");
out:
	cpu_destroy(f);
	free(planes);
	return rc;
}

/* Builds a context; single_set: only the max_batch set (calibration). */
static int cpu_create_ctx(const nn_net *net, int max_batch, const nn_backend_options *opt,
			  int single_set, cpu_ctx **out_ctx, char *err, size_t errlen)
{
	int rc = 0;
	cpu_ctx *c = NULL;
	const nn_arch *a = &net->arch;
	*out_ctx = NULL;
	if (max_batch < 1 || max_batch > 4096) {
		snprintf(err, errlen, "max batch %d: must be 1..4096", max_batch);
		return -1;
	}
	if (opt->precision == NN_DTYPE_FP16) {
		snprintf(err, errlen, "fp16 runs on the CUDA backend only; the CPU runs fp32, "
			 "bf16 or int8");
		return -1;
	}
	if (opt->precision == NN_DTYPE_BF16 || opt->precision == NN_DTYPE_INT8) {
		__builtin_cpu_init();
		if (opt->precision == NN_DTYPE_BF16 && !__builtin_cpu_supports("avx512bf16")) {
			snprintf(err, errlen, "--precision bf16 needs a CPU with AVX-512 BF16 "
				 "(Cooper Lake, Sapphire Rapids, Zen 4 or later); this one has "
				 "none: use fp32");
			return -1;
		}
		if (opt->precision == NN_DTYPE_INT8 && !__builtin_cpu_supports("avx2")) {
			snprintf(err, errlen, "--precision int8 needs a CPU with AVX2 at least "
				 "(fast with AVX-512 VNNI or AVX-VNNI); use fp32");
			return -1;
		}
	}
	if (opt->threads < 0 || opt->threads > 1024) {
		snprintf(err, errlen, "%d threads: must be 0 (default) .. 1024", opt->threads);
		return -1;
	}
	if (opt->calib_positions < 0 || opt->calib_positions > 1000000) {
		snprintf(err, errlen, "%d calibration positions: must be 0 (default) .. 1000000",
			 opt->calib_positions);
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	for (int i = 0; i < CPU_MAX_SETS; i++)
		c->set[i].chunk = -1;
	c->arch = *a;
	/* Threads 0: the calling thread's count now, fixed, so that the
	 * primitives built here run with the team they were built for in
	 * whatever thread calls forward (oneDNN's kernels plan their work
	 * and scratchpad per thread at creation). */
	c->threads = opt->threads > 0 ? opt->threads : cpu_omp_max_threads();
	c->precision = opt->precision;
	c->n_layers = 1 + 2 * a->blocks;
	for (int i = 0; i < a->blocks; i++)
		c->has_se |= a->block_kind[i] == NN_BLOCK_SE;
	c->omp_set = cpu_omp_set_fn();
	c->head_avx2 = nn_cpu_avx2_fma();
	cpu_apply_threads(c);
	c->net = nn_net_clone(net);
	if (!c->net)
		goto oom;
	nn_net_fold_bn(c->net);
	DNNL_CHECK(dnnl_engine_create(&c->engine, dnnl_cpu, 0));
	DNNL_CHECK(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags));
	c->n_param = c->n_layers + 5;
	c->param = calloc((size_t)c->n_param, sizeof(*c->param));
	if (!c->param)
		goto oom;
	/* Weights first (the calibration reads them), biases after it. */
	c->param[P_INPUT].w = c->net->input.w;
	for (int i = 0; i < a->blocks; i++) {
		c->param[P_CONV1(i)].w = c->net->block[i].conv1.w;
		c->param[P_CONV2(i)].w = c->net->block[i].conv2.w;
	}
	if (c->precision == NN_DTYPE_INT8 && cpu_calibrate(c, net, opt, err, errlen) < 0)
		goto fail;
	cpu_apply_threads(c);
	{
		const float *qb = c->qbias;
		size_t C = (size_t)a->channels;
		if (cpu_param_conv(c, P_INPUT, &c->net->input, qb, err, errlen) < 0)
			goto fail;
		for (int i = 0; i < a->blocks; i++)
			if (cpu_param_conv(c, P_CONV1(i), &c->net->block[i].conv1,
					   qb ? qb + P_CONV1(i) * C : NULL, err, errlen) < 0 ||
			    cpu_param_conv(c, P_CONV2(i), &c->net->block[i].conv2,
					   qb ? qb + P_CONV2(i) * C : NULL, err, errlen) < 0)
				goto fail;
	}
	if (cpu_param_conv(c, P_POL_CONV(c), &c->net->policy_conv, NULL, err, errlen) < 0 ||
	    cpu_param_conv(c, P_VAL_CONV(c), &c->net->value_conv, NULL, err, errlen) < 0 ||
	    cpu_param_fc(c, P_POL_FC(c), &c->net->policy_fc, a->policy_channels, err, errlen) < 0 ||
	    cpu_param_fc(c, P_VAL_FC1(c), &c->net->value_fc1, a->value_channels, err, errlen) < 0 ||
	    cpu_param_fc(c, P_VAL_FC2(c), &c->net->value_fc2, 0, err, errlen) < 0)
		goto fail;
	/* Batch sets 1, 2, 4, ... below max_batch, then max_batch. */
	for (int nb = single_set ? max_batch : 1;; nb *= 2) {
		int b = nb < max_batch ? nb : max_batch;
		assert(c->n_set < CPU_MAX_SETS);
		if (cpu_make_set_best(c, &c->set[c->n_set], b, opt, err, errlen) < 0)
			goto fail;
		c->n_set++;
		if (b == max_batch)
			break;
	}
	/* The scratchpad may have grown while sets were built: point every
	 * scratch view at the final buffer. */
	for (int i = 0; i < c->n_set; i++)
		if (cpu_set_scratch(c, &c->set[i], err, errlen) < 0)
			goto fail;
	if (!single_set && cpu_choose_chunks(c, err, errlen) < 0)
		goto fail;
	cpu_prune_weights(c);
	if (opt->verbose) {
		char buf[1024];
		nn_backend_cpu.describe(c, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	*out_ctx = c;
	return 0;
oom:
	snprintf(err, errlen, "out of memory building the CPU backend");
fail:
	rc = -1;
out:
	cpu_destroy(c);
	return rc;
}

static int cpu_create(const nn_net *net, int max_batch, const nn_backend_options *opt, void **out_ctx,
		      char *err, size_t errlen)
{
	cpu_ctx *c;
	/* Creating applies the backend's thread count to the calling thread;
	 * its own count is given back, so that a lane of one thread made by
	 * the loop's thread does not leave the loop's trainer, or the next
	 * backend it makes, on one thread. */
	int saved = cpu_omp_max_threads();
	int rc = cpu_create_ctx(net, max_batch, opt, 0, &c, err, errlen);
	void (*set)(int) = cpu_omp_set_fn();
	if (set && saved > 0)
		set(saved);
	*out_ctx = rc < 0 ? NULL : c;
	return rc;
}

/* The ownership and score heads (net.h) of the n positions set s has just
 * run, in plain loops over the value conv's output and the value hidden
 * layer: a dot product per point and one per position. */
static int cpu_heads(cpu_ctx *c, cpu_set *s, int n, float *ownership, float *score)
{
	const nn_arch *a = &c->arch;
	const nn_net *net = c->net;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0, H = a->board_h, W = a->board_w, vc = a->value_channels;
	void *h;
	if (ownership && net->own_fc.w) {
		DNNL_CHECK(dnnl_memory_get_data_handle(s->val_act, &h));
		const float *v = h;
		const cpu_layout *L = &s->vl;
		for (int i = 0; i < n; i++)
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++) {
					const float *px = v + i * L->sn + y * L->sh + x * L->sw;
					float z = net->own_fc.b[0];
					for (int ch = 0; ch < vc; ch++)
						z += net->own_fc.w[ch] * px[L->coff[ch]];
					ownership[((size_t)i * H + y) * W + x] = tanhf(z);
				}
	}
	if (score && net->score_fc.w) {
		DNNL_CHECK(dnnl_memory_get_data_handle(s->val_hid, &h));
		const float *hid = h;
		for (int i = 0; i < n; i++) {
			float z = net->score_fc.b[0];
			for (int j = 0; j < a->value_hidden; j++)
				z += net->score_fc.w[j] * hid[(size_t)i * a->value_hidden + j];
			score[i] = z;
		}
	}
out:
	return rc;
}

/* One pass of set s (not chunked) over n <= s->nb positions. */
static int cpu_pass(cpu_ctx *c, cpu_set *s, int n, const float *planes, float *policy_logits,
		    float *value, float *wdl, float *ownership, float *score)
{
	const nn_arch *a = &c->arch;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	void *h;
	/* A full batch is read where the caller has it (the set reads all
	 * its nb rows: a short one is copied into the set's own buffer).
	 * Self-play's batches are full: one copy of every position's planes
	 * fewer, made on the network's core from memory another core wrote. */
	dnnl_memory_t in = s->in_user;
	if (n == s->nb) {
		DNNL_CHECK(dnnl_memory_set_data_handle(s->in_lent, (void *)planes));
		in = s->in_lent;
	} else {
		DNNL_CHECK(dnnl_memory_get_data_handle(s->in_user, &h));
		memcpy(h, planes, sizeof(float) * in_n * (size_t)n);
	}
	if (cpu_run_set(c, s, in, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	if ((ownership || score) && cpu_heads(c, s, n, ownership, score) < 0) {
		rc = -1;
		goto out;
	}
	DNNL_CHECK(dnnl_memory_get_data_handle(s->pol_out, &h));
	memcpy(policy_logits, h, sizeof(float) * (size_t)a->policy_outputs * (size_t)n);
	const float *v;
	DNNL_CHECK(dnnl_memory_get_data_handle(s->val_out, &h));
	v = h;
	for (int i = 0; i < n; i++) {
		if (a->value_outputs == 1) {
			value[i] = v[i];
			if (wdl) {
				wdl[3 * i] = (1.0f + v[i]) * 0.5f;
				wdl[3 * i + 1] = 0.0f;
				wdl[3 * i + 2] = (1.0f - v[i]) * 0.5f;
			}
			continue;
		}
		const float *l = v + 3 * i;
		float m = fmaxf(l[0], fmaxf(l[1], l[2]));
		float e0 = expf(l[0] - m), e1 = expf(l[1] - m), e2 = expf(l[2] - m);
		float inv = 1.0f / (e0 + e1 + e2);
		value[i] = (e0 - e2) * inv;
		if (wdl) {
			wdl[3 * i] = e0 * inv;
			wdl[3 * i + 1] = e1 * inv;
			wdl[3 * i + 2] = e2 * inv;
		}
	}
out:
	return rc;
}

static int cpu_forward_heads(void *vctx, int batch, const float *planes, float *policy_logits,
			     float *value, float *wdl, float *ownership, float *score)
{
	cpu_ctx *c = vctx;
	const nn_arch *a = &c->arch;
	assert(batch >= 1 && batch <= c->set[c->n_set - 1].nb);
	cpu_set *s = &c->set[0];
	for (int i = 0; i < c->n_set; i++)
		if (c->set[i].nb >= batch) {
			s = &c->set[i];
			break;
		}
	cpu_apply_threads(c);
	if (s->chunk < 0)
		return cpu_pass(c, s, batch, planes, policy_logits, value, wdl, ownership, score);
	cpu_set *t = &c->set[s->chunk];
	size_t hw = (size_t)a->board_w * a->board_h, in_n = (size_t)a->in_planes * hw;
	for (int off = 0; off < batch; off += t->nb) {
		int n = batch - off < t->nb ? batch - off : t->nb;
		if (cpu_pass(c, t, n, planes + off * in_n, policy_logits + (size_t)off * a->policy_outputs,
			     value + off, wdl ? wdl + 3 * off : NULL,
			     ownership ? ownership + off * hw : NULL, score ? score + off : NULL) < 0)
			return -1;
	}
	return 0;
}

static int cpu_forward(void *vctx, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl)
{
	return cpu_forward_heads(vctx, batch, planes, policy_logits, value, wdl, NULL, NULL);
}

static const char *cpu_impl(const cpu_op *op)
{
	const_dnnl_primitive_desc_t pd;
	const char *name = "?";
	if (!op->prim || dnnl_primitive_get_primitive_desc(op->prim, &pd) != dnnl_success)
		return "-";
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success)
		return "?";
	return name;
}

static void cpu_describe(void *vctx, char *buf, size_t len)
{
	cpu_ctx *c = vctx;
	size_t n = 0;
	const dnnl_version_t *v = dnnl_version();
#define PUT(...) (n += (size_t)snprintf(buf + n, len > n ? len - n : 0, __VA_ARGS__))
	PUT("cpu: oneDNN %d.%d.%d, %s, threads %d", v->major, v->minor, v->patch,
	    nn_dtype_name(c->precision), c->threads);
	if (c->precision == NN_DTYPE_INT8)
		PUT(", calibrated on %d positions in %.2f s", c->calib_n, c->calib_secs);
	PUT(", batch sets");
	for (int i = 0; i < c->n_set && n < len; i++) {
		const cpu_set *s = &c->set[i];
		if (s->chunk >= 0) {
			PUT(" %d[as %d x %d]", s->nb, (s->nb + c->set[s->chunk].nb - 1) / c->set[s->chunk].nb,
			    c->set[s->chunk].nb);
			continue;
		}
		static const char *const algo[2] = { "direct", "wino" };
		PUT(" %d[%s layout; in %s", s->nb, s->lay ? "wino" : "direct", algo[s->algo[0]]);
		if (c->n_layers > 1)
			PUT(", tower %s %s/%s", cpu_impl(&s->conv[s->layer_conv[1]]),
			    algo[s->algo[CPU_CONV_TOWER1]],
			    algo[s->algo[c->has_se ? CPU_CONV_SE2 : CPU_CONV_TOWER2]]);
		PUT(", heads %s, 1x1 convs in C (%s)]", cpu_impl(&s->pol_fc),
		    s->head_u8 ? "from u8" : "fp32");
	}
#undef PUT
}

const nn_backend_ops nn_backend_cpu = {
	.name = "cpu",
	.create = cpu_create,
	.forward = cpu_forward,
	.forward_heads = cpu_forward_heads,
	.destroy = cpu_destroy,
	.describe = cpu_describe,
};
