/* cpu_backend.c: the CPU backend on oneDNN 2.6 (C API). Every oneDNN call
 * of sente lives in this file.
 *
 * Shape of the work, decided once at create time:
 * - Batch sets: primitives for batch sizes 1, 2, 4, ... up to max_batch
 *   (max_batch itself always included). forward(batch) runs the smallest
 *   set that fits on a padded input, so batch 5 costs a batch-8 pass rather
 *   than a max-batch one.
 * - Layout: oneDNN picks the activation layout (format "any", typically
 *   nChw16c); the whole tower keeps it. Reorders happen only at the input
 *   (user NCHW fp32 -> tower layout) and inside the heads, whose 1x1 convs
 *   write plain NCHW for the inner products.
 * - Fusion: BN is folded into conv weight/bias; ReLU is an eltwise post-op;
 *   the residual add is a sum post-op, so a block is two primitives and
 *   runs in place on two buffers: conv1(A) -> B, then A = relu(conv2(B) + A).
 * - Algorithm: for each conv shape (input, block conv1, block conv2) of each
 *   set, Winograd and direct are both created where oneDNN supports them
 *   and timed on the real weights; the faster one is kept.
 * - Memory: all activations, weights (in the primitives' formats, shared
 *   between sets when the format agrees) and one scratchpad (user mode, the
 *   largest any primitive asks for) are allocated at create. forward
 *   allocates nothing.
 * - Threads: oneDNN here runs on OpenMP; the thread count is applied with
 *   omp_set_num_threads on the calling thread at create and at every
 *   forward (it is a per-thread setting and costs nothing). It is looked up
 *   with dlsym so that sente needs no -fopenmp of its own.
 * - Precision: fp32; bf16 runs the tower (and head convs' inputs) in
 *   bfloat16 with fp32 heads when the CPU has AVX-512 BF16; int8 is refused
 *   (not implemented yet).
 */
#include "nn/backend.h"

#include <assert.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dnnl.h>
#include <dnnl_debug.h>

/* Needs `rc`, `err`, `errlen` and an `out:` label in scope. */
#define DNNL_CHECK(call)                                                              \
	do {                                                                          \
		dnnl_status_t s_ = (call);                                            \
		if (s_ != dnnl_success) {                                             \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				 dnnl_status2str(s_));                                \
			rc = -1;                                                      \
			goto out;                                                     \
		}                                                                     \
	} while (0)

#define CPU_MAX_SETS 16
#define CPU_MAX_OPS 16 /* primitives per set, reorder and heads included */

/* One weight tensor in one memory format. */
typedef struct cpu_fmt {
	dnnl_memory_desc_t md; /* the format */
	dnnl_memory_t mem;     /* the weights in it (owned) */
} cpu_fmt;

/* The parameters of one layer: fp32 user-side data and the formatted
 * copies the primitives asked for. */
typedef struct cpu_param {
	const float *w;              /* folded weights, in ctx->net */
	const float *b;              /* folded bias, in ctx->net */
	dnnl_memory_desc_t w_user;   /* plain layout of w (oihw / oi) */
	dnnl_memory_t bias;          /* bias, f32, over b */
	cpu_fmt fmt[CPU_MAX_SETS * 2]; /* formatted copies (owned) */
	int n_fmt;                   /* used entries of fmt */
} cpu_param;

/* A primitive and its scratchpad view. */
typedef struct cpu_op {
	dnnl_primitive_t prim;      /* owned */
	dnnl_memory_t scratch;      /* scratchpad over ctx->scratch (owned) */
} cpu_op;

/* Conv shapes whose algorithm is chosen by timing. */
enum { CPU_CONV_INPUT, CPU_CONV_TOWER1, CPU_CONV_TOWER2, CPU_CONV_KINDS };

/* Everything for one batch size. */
typedef struct cpu_set {
	int nb;                       /* batch size of the primitives */
	dnnl_memory_t in_user;        /* input, NCHW fp32 (owned) */
	dnnl_memory_t in_conv;        /* input in the input conv's layout, or NULL */
	dnnl_memory_t act[2];         /* tower ping-pong buffers (owned) */
	dnnl_memory_t pol_act;        /* policy conv output, NCHW fp32 */
	dnnl_memory_t val_act;        /* value conv output, NCHW fp32 */
	dnnl_memory_t val_hid;        /* value FC1 output */
	dnnl_memory_t pol_out;        /* policy logits, nc */
	dnnl_memory_t val_out;        /* value head output, nc */
	cpu_op reorder_in;            /* in_user -> in_conv, prim NULL when not needed */
	cpu_op conv[CPU_CONV_KINDS];  /* input conv, tower conv1, tower conv2 */
	int algo[CPU_CONV_KINDS];     /* 1 Winograd, 0 direct */
	int wino_ok[CPU_CONV_KINDS];  /* 1 when oneDNN offered Winograd */
	int lay;                      /* tower layout from: 0 direct, 1 Winograd */
	cpu_op pol_conv, val_conv, pol_fc, val_fc1, val_fc2; /* heads */
	/* Weights each primitive reads, per parameter (not owned: in
	 * ctx->param[].fmt). */
	dnnl_memory_t *w;
} cpu_set;

typedef struct cpu_ctx {
	nn_net *net;               /* folded copy of the weights (owned) */
	nn_arch arch;              /* shapes */
	int threads;               /* requested thread count, 0 = default */
	nn_precision precision;    /* tower arithmetic */
	dnnl_engine_t engine;      /* CPU engine */
	dnnl_stream_t stream;      /* one stream per context */
	cpu_param *param;          /* n_param layers' parameters */
	int n_param;               /* 2 * blocks + 7 */
	cpu_set set[CPU_MAX_SETS]; /* batch sets, increasing nb */
	int n_set;                 /* used entries of set */
	void *scratch;             /* the shared scratchpad */
	size_t scratch_size;       /* its size in bytes */
	void (*omp_set)(int);      /* omp_set_num_threads, or NULL */
	char err[256];             /* last forward error */
} cpu_ctx;

/* Parameter indices: input conv, blocks' convs, then the heads. */
#define P_INPUT 0
#define P_CONV1(i) (1 + 2 * (i))
#define P_CONV2(i) (2 + 2 * (i))
#define P_POL_CONV(c) ((c)->n_param - 5)
#define P_VAL_CONV(c) ((c)->n_param - 4)
#define P_POL_FC(c) ((c)->n_param - 3)
#define P_VAL_FC1(c) ((c)->n_param - 2)
#define P_VAL_FC2(c) ((c)->n_param - 1)

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cpu_apply_threads(cpu_ctx *c)
{
	if (c->threads > 0 && c->omp_set)
		c->omp_set(c->threads);
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

/* The weights of parameter p in format md, reordering them on first use. */
static int cpu_weights(cpu_ctx *c, int p, const dnnl_memory_desc_t *md, dnnl_memory_t *out,
		       char *err, size_t errlen)
{
	int rc = 0;
	cpu_param *pa = &c->param[p];
	dnnl_memory_t user = NULL, mem = NULL;
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t reorder = NULL;
	for (int i = 0; i < pa->n_fmt; i++)
		if (dnnl_memory_desc_equal(&pa->fmt[i].md, md)) {
			*out = pa->fmt[i].mem;
			return 0;
		}
	assert(pa->n_fmt < (int)(sizeof(pa->fmt) / sizeof(pa->fmt[0])));
	DNNL_CHECK(dnnl_memory_create(&user, &pa->w_user, c->engine, (void *)pa->w));
	DNNL_CHECK(dnnl_memory_create(&mem, md, c->engine, DNNL_MEMORY_ALLOCATE));
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, &pa->w_user, c->engine, md, c->engine,
						       NULL));
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
 * set, an inner product. dnnl_unimplemented etc. come back as the status so
 * the caller can fall back. */
static dnnl_status_t cpu_pd(cpu_ctx *c, int ip, dnnl_alg_kind_t alg, const dnnl_memory_desc_t *src,
			    const dnnl_memory_desc_t *wts, const dnnl_memory_desc_t *bias,
			    const dnnl_memory_desc_t *dst, int k, int post,
			    dnnl_primitive_desc_t *pd)
{
	dnnl_status_t s;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t ops = NULL;
	*pd = NULL;
	if ((s = dnnl_primitive_attr_create(&attr)) != dnnl_success)
		return s;
	if ((s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user)) != dnnl_success)
		goto out;
	if (post != POST_NONE) {
		if ((s = dnnl_post_ops_create(&ops)) != dnnl_success)
			goto out;
		if (post == POST_SUM_RELU && (s = dnnl_post_ops_append_sum(ops, 1.0f)) != dnnl_success)
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

/* Times op on (src -> dst) with weights of parameter p; seconds per run. */
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
		double t0 = cpu_now();
		DNNL_CHECK(cpu_exec(c, op, 4, args));
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		double t = cpu_now() - t0;
		if (t < best)
			best = t;
	}
	*secs = best;
out:
	return rc;
}

/* Builds a conv of the given kind for a set, choosing the algorithm. The
 * src and dst memories (already allocated, of the right layouts) are used
 * for timing: their contents are clobbered. */
static int cpu_make_tower_conv(cpu_ctx *c, cpu_set *s, int kind, const nn_backend_options *opt,
			       const dnnl_memory_desc_t *src_md, const dnnl_memory_desc_t *dst_md,
			       dnnl_memory_t src, dnnl_memory_t dst, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	int c_in = kind == CPU_CONV_INPUT ? a->in_planes : a->channels;
	int p = kind == CPU_CONV_INPUT ? P_INPUT : kind == CPU_CONV_TOWER1 ? P_CONV1(0) : P_CONV2(0);
	int post = kind == CPU_CONV_TOWER2 ? POST_SUM_RELU : POST_RELU;
	dnnl_data_type_t dt = c->precision == NN_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t wmd, bmd;
	dnnl_dims_t wd = { a->channels, c_in, 3, 3 }, bd = { a->channels };
	cpu_op cand[2];
	double t[2] = { 1e30, 1e30 };
	memset(cand, 0, sizeof(cand));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wmd, 4, wd, dt, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	int n_ok = 0;
	/* Winograd first (w = 1), then direct: asked for, timed against
	 * Winograd (auto), or the fallback when Winograd declined. */
	for (int w = 1; w >= 0; w--) {
		if (w == 1 && opt->algo == NN_CONV_DIRECT)
			continue;
		if (w == 0 && opt->algo == NN_CONV_WINOGRAD && n_ok)
			continue;
		dnnl_primitive_desc_t pd;
		dnnl_alg_kind_t alg = w ? dnnl_convolution_winograd : dnnl_convolution_direct;
		if (cpu_pd(c, 0, alg, src_md, &wmd, &bmd, dst_md, 3, post, &pd) != dnnl_success)
			continue; /* Winograd declines many shapes: fine */
		s->wino_ok[kind] |= w;
		dnnl_memory_desc_t chosen = *cpu_md(pd, dnnl_query_weights_md);
		if (cpu_op_make(c, pd, &cand[w], err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		dnnl_memory_t wm;
		if (cpu_weights(c, p, &chosen, &wm, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		n_ok++;
		if (opt->algo == NN_CONV_AUTO) {
			/* Point the scratch view at the current buffer before
			 * running: it may have grown. */
			DNNL_CHECK(dnnl_memory_set_data_handle(cand[w].scratch, c->scratch));
			dnnl_memory_t in = src, o = dst;
			if (kind == CPU_CONV_TOWER2)
				in = dst, o = src; /* src holds conv1's output shape too */
			if (cpu_time_conv(c, &cand[w], in, wm, c->param[p].bias, o, &t[w], err,
					  errlen) < 0) {
				rc = -1;
				goto out;
			}
		}
	}
	if (!n_ok) {
		snprintf(err, errlen, "oneDNN offers no convolution for %d -> %d channels, "
			 "batch %d, board %dx%d, %s", c_in, a->channels, s->nb, a->board_w,
			 a->board_h, nn_precision_name(c->precision));
		rc = -1;
		goto out;
	}
	int best = !cand[0].prim ? 1 : !cand[1].prim ? 0 : t[1] < t[0];
	s->conv[kind] = cand[best];
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

/* Builds the primitives of one batch size. The tower layout is the one a
 * C -> C conv of algorithm `lay` (0 direct, 1 Winograd) prefers; returns 1
 * without building anything when that algorithm is not offered. */
static int cpu_make_set(cpu_ctx *c, cpu_set *s, int nb, int lay, const nn_backend_options *opt,
			char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	int H = a->board_h, W = a->board_w, C = a->channels;
	dnnl_data_type_t dt = c->precision == NN_PRECISION_BF16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t in_md, act_any, in_any, wany, bmd, pol_md, val_md, hid_md, pout_md,
		vout_md, act_md;
	dnnl_primitive_desc_t pd = NULL;
	s->nb = nb;
	s->lay = lay;
	s->w = calloc((size_t)c->n_param, sizeof(*s->w));
	if (!s->w) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	dnnl_dims_t ind = { nb, a->in_planes, H, W }, actd = { nb, C, H, W };
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&in_md, 4, ind, dnnl_f32, dnnl_nchw));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&in_any, 4, ind, dt, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&act_any, 4, actd, dt, dnnl_format_tag_any));

	/* The tower layout (direct: nhwc here; Winograd: nChw16c). */
	{
		dnnl_dims_t wd = { C, C, 3, 3 }, bd = { C };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&wany, 4, wd, dt, dnnl_format_tag_any));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
		if (lay && cpu_pd(c, 0, dnnl_convolution_winograd, &act_any, &wany, &bmd, &act_any, 3,
				  POST_RELU, &pd) != dnnl_success) {
			free(s->w);
			s->w = NULL;
			return 1;
		}
		if (!lay)
			DNNL_CHECK(cpu_pd(c, 0, dnnl_convolution_direct, &act_any, &wany, &bmd, &act_any,
					  3, POST_RELU, &pd));
		act_md = *cpu_md(pd, dnnl_query_dst_md);
		dnnl_primitive_desc_destroy(pd);
		pd = NULL;
	}
	DNNL_CHECK(cpu_alloc(c, &act_md, &s->act[0]));
	DNNL_CHECK(cpu_alloc(c, &act_md, &s->act[1]));
	DNNL_CHECK(cpu_alloc(c, &in_md, &s->in_user));
	/* Zero the buffers once: rows beyond a short batch then hold finite
	 * values (an earlier batch or zeros), and the timing runs see no NaN
	 * or denormal garbage. */
	{
		dnnl_memory_t zero[3] = { s->act[0], s->act[1], s->in_user };
		for (int i = 0; i < 3; i++) {
			void *h;
			const dnnl_memory_desc_t *md;
			DNNL_CHECK(dnnl_memory_get_data_handle(zero[i], &h));
			DNNL_CHECK(dnnl_memory_get_memory_desc(zero[i], &md));
			memset(h, 0, dnnl_memory_desc_get_size(md));
		}
	}

	/* Input conv: let it pick its src layout; reorder the user's NCHW. */
	{
		dnnl_dims_t wd = { C, a->in_planes, 3, 3 };
		dnnl_memory_desc_t w_in;
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_in, 4, wd, dt, dnnl_format_tag_any));
		DNNL_CHECK(cpu_pd(c, 0, dnnl_convolution_direct, &in_any, &w_in, &bmd, &act_md, 3,
				  POST_RELU, &pd));
		dnnl_memory_desc_t src_md = *cpu_md(pd, dnnl_query_src_md);
		dnnl_primitive_desc_destroy(pd);
		pd = NULL;
		dnnl_memory_t src = s->in_user;
		if (!dnnl_memory_desc_equal(&src_md, &in_md)) {
			DNNL_CHECK(cpu_alloc(c, &src_md, &s->in_conv));
			DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, &in_md, c->engine, &src_md,
								       c->engine, NULL));
			rc = cpu_op_make(c, pd, &s->reorder_in, err, errlen);
			pd = NULL;
			if (rc < 0)
				goto out;
			src = s->in_conv;
			/* Fill in_conv with valid (zero) input for the timing. */
			DNNL_CHECK(dnnl_memory_set_data_handle(s->reorder_in.scratch, c->scratch));
			dnnl_exec_arg_t args[3] = { { DNNL_ARG_FROM, s->in_user }, { DNNL_ARG_TO, src } };
			DNNL_CHECK(cpu_exec(c, &s->reorder_in, 2, args));
			DNNL_CHECK(dnnl_stream_wait(c->stream));
		}
		if (cpu_make_tower_conv(c, s, CPU_CONV_INPUT, opt, &src_md, &act_md, src, s->act[0],
					err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		if (cpu_bind_weights(c, s, &s->conv[CPU_CONV_INPUT], P_INPUT, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
	}
	if (a->blocks > 0) {
		if (cpu_make_tower_conv(c, s, CPU_CONV_TOWER1, opt, &act_md, &act_md, s->act[0],
					s->act[1], err, errlen) < 0 ||
		    cpu_make_tower_conv(c, s, CPU_CONV_TOWER2, opt, &act_md, &act_md, s->act[0],
					s->act[1], err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		for (int i = 0; i < a->blocks; i++)
			if (cpu_bind_weights(c, s, &s->conv[CPU_CONV_TOWER1], P_CONV1(i), err, errlen) < 0 ||
			    cpu_bind_weights(c, s, &s->conv[CPU_CONV_TOWER2], P_CONV2(i), err, errlen) < 0) {
				rc = -1;
				goto out;
			}
	}

	/* Heads: 1x1 convs to plain NCHW fp32, inner products after. */
	struct {
		int ch;           /* head conv channels */
		int p;            /* its parameter */
		cpu_op *op;       /* where it goes */
		dnnl_memory_t *m; /* its output */
		dnnl_memory_desc_t *md;
	} heads[2] = {
		{ a->policy_channels, P_POL_CONV(c), &s->pol_conv, &s->pol_act, &pol_md },
		{ a->value_channels, P_VAL_CONV(c), &s->val_conv, &s->val_act, &val_md },
	};
	for (int h = 0; h < 2; h++) {
		dnnl_dims_t wd = { heads[h].ch, C, 1, 1 }, bd = { heads[h].ch },
			    od = { nb, heads[h].ch, H, W };
		dnnl_memory_desc_t w1, b1;
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w1, 4, wd, dt, dnnl_format_tag_any));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b1, 1, bd, dnnl_f32, dnnl_x));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(heads[h].md, 4, od, dnnl_f32, dnnl_nchw));
		DNNL_CHECK(cpu_pd(c, 0, dnnl_convolution_direct, &act_md, &w1, &b1, heads[h].md, 1,
				  POST_RELU, &pd));
		rc = cpu_op_make(c, pd, heads[h].op, err, errlen);
		pd = NULL;
		if (rc < 0 || cpu_bind_weights(c, s, heads[h].op, heads[h].p, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		DNNL_CHECK(cpu_alloc(c, heads[h].md, heads[h].m));
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
				  fcs[f].post, &pd));
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
	dnnl_memory_t *mems[] = { &s->in_user, &s->in_conv, &s->act[0], &s->act[1], &s->pol_act,
				  &s->val_act, &s->val_hid, &s->pol_out, &s->val_out };
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
		if (*mems[i])
			dnnl_memory_destroy(*mems[i]);
	cpu_op_free(&s->reorder_in);
	for (int k = 0; k < CPU_CONV_KINDS; k++)
		cpu_op_free(&s->conv[k]);
	cpu_op_free(&s->pol_conv);
	cpu_op_free(&s->val_conv);
	cpu_op_free(&s->pol_fc);
	cpu_op_free(&s->val_fc1);
	cpu_op_free(&s->val_fc2);
	free(s->w);
	memset(s, 0, sizeof(*s));
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
	nn_net_free(c->net);
	free(c);
}

/* Sets up param[p] over conv c (folded in ctx->net). */
static int cpu_param_conv(cpu_ctx *c, int p, const nn_conv *cv, char *err, size_t errlen)
{
	int rc = 0;
	dnnl_dims_t wd = { cv->c_out, cv->c_in, cv->k, cv->k }, bd = { cv->c_out };
	dnnl_memory_desc_t bmd;
	c->param[p].w = cv->w;
	c->param[p].b = cv->b;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c->param[p].w_user, 4, wd, dnnl_f32, dnnl_oihw));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&bmd, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_create(&c->param[p].bias, &bmd, c->engine, (void *)cv->b));
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
	c->param[p].b = f->b;
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

static int cpu_run_set(cpu_ctx *c, cpu_set *s, char *err, size_t errlen);

/* Points every scratch view of s at the (final or current) scratchpad. */
static int cpu_set_scratch(cpu_ctx *c, cpu_set *s, char *err, size_t errlen)
{
	int rc = 0;
	cpu_op *ops[] = { &s->reorder_in, &s->conv[0], &s->conv[1], &s->conv[2], &s->pol_conv,
			  &s->val_conv, &s->pol_fc, &s->val_fc1, &s->val_fc2 };
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (ops[k]->scratch)
			DNNL_CHECK(dnnl_memory_set_data_handle(ops[k]->scratch, c->scratch));
out:
	return rc;
}

/* Seconds of a whole pass of set s (best of three after a warm-up: the
 * machine may be shared, the minimum is the least noisy). */
static int cpu_time_set(cpu_ctx *c, cpu_set *s, double *secs, char *err, size_t errlen)
{
	if (cpu_set_scratch(c, s, err, errlen) < 0 || cpu_run_set(c, s, err, errlen) < 0)
		return -1;
	*secs = 1e30;
	for (int r = 0; r < 3; r++) {
		double t0 = cpu_now();
		if (cpu_run_set(c, s, err, errlen) < 0)
			return -1;
		double t = cpu_now() - t0;
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
	if (opt->algo == NN_CONV_DIRECT)
		r = cpu_make_set(c, s, nb, 0, opt, err, errlen);
	else if (opt->algo == NN_CONV_WINOGRAD) {
		r = cpu_make_set(c, s, nb, 1, opt, err, errlen);
		if (r == 1)
			r = cpu_make_set(c, s, nb, 0, opt, err, errlen);
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
			}
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
				used |= c->set[k].w[p] == pa->fmt[i].mem;
			if (used)
				pa->fmt[keep++] = pa->fmt[i];
			else
				dnnl_memory_destroy(pa->fmt[i].mem);
		}
		pa->n_fmt = keep;
	}
}

static int cpu_create(const nn_net *net, int max_batch, const nn_backend_options *opt, void **out_ctx,
		      char *err, size_t errlen)
{
	int rc = 0;
	cpu_ctx *c = NULL;
	const nn_arch *a = &net->arch;
	*out_ctx = NULL;
	if (max_batch < 1 || max_batch > 4096) {
		snprintf(err, errlen, "max batch %d: must be 1..4096", max_batch);
		return -1;
	}
	for (int i = 0; i < a->blocks; i++)
		if (a->block_kind[i] != NN_BLOCK_PLAIN) {
			snprintf(err, errlen, "the CPU backend does not run squeeze-excitation "
				 "blocks yet (block %d)", i);
			return -1;
		}
	if (opt->precision == NN_PRECISION_INT8) {
		snprintf(err, errlen, "--precision int8 is not implemented yet in the CPU "
			 "backend; use fp32 or bf16");
		return -1;
	}
	if (opt->precision == NN_PRECISION_BF16) {
		__builtin_cpu_init();
		if (!__builtin_cpu_supports("avx512bf16")) {
			snprintf(err, errlen, "--precision bf16 needs a CPU with AVX-512 BF16 "
				 "(Cooper Lake, Sapphire Rapids, Zen 4 or later); this one has "
				 "none: use fp32");
			return -1;
		}
	}
	if (opt->threads < 0 || opt->threads > 1024) {
		snprintf(err, errlen, "%d threads: must be 0 (default) .. 1024", opt->threads);
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto oom;
	c->arch = *a;
	c->threads = opt->threads;
	c->precision = opt->precision;
	c->omp_set = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	cpu_apply_threads(c);
	c->net = nn_net_clone(net);
	if (!c->net)
		goto oom;
	nn_net_fold_bn(c->net);
	DNNL_CHECK(dnnl_engine_create(&c->engine, dnnl_cpu, 0));
	DNNL_CHECK(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags));
	c->n_param = 2 * a->blocks + 7;
	c->param = calloc((size_t)c->n_param, sizeof(*c->param));
	if (!c->param)
		goto oom;
	if (cpu_param_conv(c, P_INPUT, &c->net->input, err, errlen) < 0)
		goto fail;
	for (int i = 0; i < a->blocks; i++)
		if (cpu_param_conv(c, P_CONV1(i), &c->net->block[i].conv1, err, errlen) < 0 ||
		    cpu_param_conv(c, P_CONV2(i), &c->net->block[i].conv2, err, errlen) < 0)
			goto fail;
	if (cpu_param_conv(c, P_POL_CONV(c), &c->net->policy_conv, err, errlen) < 0 ||
	    cpu_param_conv(c, P_VAL_CONV(c), &c->net->value_conv, err, errlen) < 0 ||
	    cpu_param_fc(c, P_POL_FC(c), &c->net->policy_fc, a->policy_channels, err, errlen) < 0 ||
	    cpu_param_fc(c, P_VAL_FC1(c), &c->net->value_fc1, a->value_channels, err, errlen) < 0 ||
	    cpu_param_fc(c, P_VAL_FC2(c), &c->net->value_fc2, 0, err, errlen) < 0)
		goto fail;
	/* Batch sets 1, 2, 4, ... below max_batch, then max_batch. */
	for (int nb = 1;; nb *= 2) {
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
	cpu_prune_weights(c);
	if (opt->verbose) {
		char buf[512];
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

/* Runs every primitive of set s on what its input buffer holds. */
static int cpu_run_set(cpu_ctx *c, cpu_set *s, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	dnnl_exec_arg_t args[8];
	dnnl_memory_t src = s->in_user;
	if (s->reorder_in.prim) {
		args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, s->in_user };
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
	RUN(&s->conv[CPU_CONV_INPUT], src, P_INPUT, s->act[0]);
	for (int i = 0; i < a->blocks; i++) {
		RUN(&s->conv[CPU_CONV_TOWER1], s->act[0], P_CONV1(i), s->act[1]);
		/* act[0] holds the skip; the sum post-op adds it. */
		RUN(&s->conv[CPU_CONV_TOWER2], s->act[1], P_CONV2(i), s->act[0]);
	}
	RUN(&s->pol_conv, s->act[0], P_POL_CONV(c), s->pol_act);
	RUN(&s->pol_fc, s->pol_act, P_POL_FC(c), s->pol_out);
	RUN(&s->val_conv, s->act[0], P_VAL_CONV(c), s->val_act);
	RUN(&s->val_fc1, s->val_act, P_VAL_FC1(c), s->val_hid);
	RUN(&s->val_fc2, s->val_hid, P_VAL_FC2(c), s->val_out);
#undef RUN
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
	return rc;
}

static int cpu_forward(void *vctx, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl)
{
	cpu_ctx *c = vctx;
	const nn_arch *a = &c->arch;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	assert(batch >= 1 && batch <= c->set[c->n_set - 1].nb);
	cpu_set *s = &c->set[0];
	for (int i = 0; i < c->n_set; i++)
		if (c->set[i].nb >= batch) {
			s = &c->set[i];
			break;
		}
	cpu_apply_threads(c);
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	void *h;
	DNNL_CHECK(dnnl_memory_get_data_handle(s->in_user, &h));
	memcpy(h, planes, sizeof(float) * in_n * (size_t)batch);
	if (cpu_run_set(c, s, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	DNNL_CHECK(dnnl_memory_get_data_handle(s->pol_out, &h));
	memcpy(policy_logits, h, sizeof(float) * (size_t)a->policy_outputs * (size_t)batch);
	const float *v;
	DNNL_CHECK(dnnl_memory_get_data_handle(s->val_out, &h));
	v = h;
	for (int n = 0; n < batch; n++) {
		if (a->value_outputs == 1) {
			value[n] = v[n];
			if (wdl) {
				wdl[3 * n] = (1.0f + v[n]) * 0.5f;
				wdl[3 * n + 1] = 0.0f;
				wdl[3 * n + 2] = (1.0f - v[n]) * 0.5f;
			}
			continue;
		}
		const float *l = v + 3 * n;
		float m = fmaxf(l[0], fmaxf(l[1], l[2]));
		float e0 = expf(l[0] - m), e1 = expf(l[1] - m), e2 = expf(l[2] - m);
		float inv = 1.0f / (e0 + e1 + e2);
		value[n] = (e0 - e2) * inv;
		if (wdl) {
			wdl[3 * n] = e0 * inv;
			wdl[3 * n + 1] = e1 * inv;
			wdl[3 * n + 2] = e2 * inv;
		}
	}
out:
	return rc;
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
	n += (size_t)snprintf(buf + n, len > n ? len - n : 0,
			      "cpu: oneDNN %d.%d.%d, %s, threads %d, batch sets", v->major,
			      v->minor, v->patch, nn_precision_name(c->precision), c->threads);
	for (int i = 0; i < c->n_set && n < len; i++) {
		const cpu_set *s = &c->set[i];
		static const char *const algo[2][2] = { { "direct", "direct(no wino)" },
							{ "wino", "wino" } };
		n += (size_t)snprintf(buf + n, len > n ? len - n : 0,
				      " %d[%s layout; in %s %s, tower %s %s/%s]", s->nb,
				      s->lay ? "wino" : "direct", algo[s->algo[0]][!s->wino_ok[0]], cpu_impl(&s->conv[0]),
				      cpu_impl(&s->conv[1]), algo[s->algo[1]][!s->wino_ok[1]],
				      algo[s->algo[2]][!s->wino_ok[2]]);
	}
}

const nn_backend_ops nn_backend_cpu = {
	.name = "cpu",
	.create = cpu_create,
	.forward = cpu_forward,
	.destroy = cpu_destroy,
	.describe = cpu_describe,
};
