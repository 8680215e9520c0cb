/* cpu_train.c: the trainer on oneDNN 2.6 (C API). Every oneDNN call of the
 * learner lives in this file, so a port to oneDNN 3.x touches only it.
 *
 * Shape of the work, decided once in trainer_new for the fixed batch N:
 * - Primitives are made per layer SHAPE, not per layer: the input conv, one
 *   tower conv shared by every block conv, the two head convs, with their
 *   batch norms and ReLUs, and the three inner products. Each conv has
 *   forward_training, backward_data (not for the input conv: the planes
 *   need no gradient) and backward_weights primitives. The tower conv is
 *   Winograd's where oneDNN has all three passes for its shape
 *   (train_options.algo; 1.7x direct on 6x64 19x19), else direct.
 * - Layout: the tower and the head convs run in one layout, nChw16c (the
 *   blocked layout of oneDNN's AVX-512 convolutions) when the width is a
 *   multiple of 16, else NHWC; plain NCHW would send the convolutions to
 *   oneDNN's reference code, 20x slower. The input planes (NCHW) are
 *   reordered in when needed; the head activations are reordered to NCHW
 *   for the inner products, which read them as a flat [N][C*H*W]
 *   (channel-major, as net.h says), and their gradients back. Every tower
 *   activation and its gradient share one layout without padding, which
 *   the squeeze-excitation loops walk as plain arrays. A ReLU right after a batch norm is fused into it (oneDNN's
 *   fuse_norm_relu, its mask kept for the backward); the residual add
 *   and its ReLU are one oneDNN binary pass.
 * - Weights: the user-side tensors are the trainer's own nn_net (OIHW / OI);
 *   conv weights are reordered into the formats the primitives chose
 *   ("any") at the start of each pass, and weight gradients back to OIHW
 *   into the gradient array, which is parallel to nn_net.data. Biases, BN
 *   scale/shift and their gradients are memories directly over those
 *   arrays; inner products use plain OI weights in place.
 * - Memory: every internal buffer is carved from one allocation (the
 *   arena), and every primitive shares one user-mode scratchpad; both are
 *   sized once all primitives exist. Steps allocate nothing.
 * - Threads: oneDNN runs on OpenMP here; omp_set_num_threads (looked up
 *   with dlsym, as in nn/cpu) is applied on the calling thread at create
 *   and at every pass.
 * - Losses, the running-statistics update, the optimizers and the
 *   squeeze-excitation of SE blocks (tr_se_fwd, tr_se_bwd) are plain C.
 * - Data parallel (trainer_set_comm with several ranks): batch norm in
 *   training runs on the statistics of the global batch (synchronised
 *   batch norm). Forward: oneDNN's training BN gives the local mean and
 *   variance, one all-reduce of (mean, var, mean^2) gives the global ones,
 *   and the inference-mode primitive (global statistics) writes the output.
 *   Backward: oneDNN's training BN backward, given the global statistics,
 *   computes the local sums dgamma = sum dy xhat, dbeta = sum dy and an
 *   input gradient that uses them; one all-reduce of (dgamma, dbeta) and a
 *   plain loop replace the local sums in that gradient by the global means.
 *   Ranks then hold the share of the gradient of the global-batch loss, up
 *   to the factor K that the final average removes.
 */
#include "train/layers.h"
#include "train/train_internal.h"
#include "train/trainer.h"

#include <assert.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>
#include <dnnl_debug.h>

#include "engine/rng.h"
#include "nn/cpu/dnnl_check.h"
#include "train/comm.h"

/* Runs a primitive with the given {arg, memory} pairs plus its scratchpad;
 * needs `c` (the tr_ctx) and what DNNL_CHECK needs. */
#define RUN(op, ...)                                                                    \
	do {                                                                            \
		dnnl_exec_arg_t a_[] = { __VA_ARGS__, { DNNL_ARG_SCRATCHPAD, (op)->scratch } }; \
		DNNL_CHECK(dnnl_primitive_execute((op)->prim, c->stream,                \
						  (int)(sizeof(a_) / sizeof(a_[0])), a_)); \
	} while (0)

/* ---- context: engine, stream, owned memories, arena, scratchpad ---------- */

enum { TR_MEM_EXTERNAL, TR_MEM_ARENA, TR_MEM_SCRATCH };

/* One memory object the context owns. */
typedef struct tr_mem {
	dnnl_memory_t m; /* the object (destroyed with the context) */
	size_t size;     /* bytes it needs (arena and scratch kinds) */
	int kind;        /* TR_MEM_*: over caller data, carved, or the scratchpad */
} tr_mem;

typedef struct tr_ctx {
	dnnl_engine_t engine;     /* CPU engine */
	dnnl_stream_t stream;     /* in-order stream */
	tr_mem *mem;              /* every memory object made */
	int n_mem, cap_mem;       /* used and allocated entries of mem */
	dnnl_primitive_t *prim;   /* every primitive made */
	int n_prim, cap_prim;     /* used and allocated entries of prim */
	void *arena;              /* one allocation for every internal buffer */
	void *scratch;            /* the shared scratchpad */
	void (*omp_set)(int);     /* omp_set_num_threads, or NULL */
	int threads;              /* thread count to apply, 0 = default */
} tr_ctx;

/* A primitive and its scratchpad view (both owned by the context). */
typedef struct tr_op {
	dnnl_primitive_t prim;  /* NULL when the op is not needed */
	dnnl_memory_t scratch;  /* scratchpad view */
} tr_op;

static void tr_apply_threads(const tr_ctx *c)
{
	if (c->threads > 0 && c->omp_set)
		c->omp_set(c->threads);
}

static int tr_ctx_init(tr_ctx *c, int threads, char *err, size_t errlen)
{
	int rc = 0;
	memset(c, 0, sizeof(*c));
	c->threads = threads;
	c->omp_set = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
	tr_apply_threads(c);
	DNNL_CHECK(dnnl_engine_create(&c->engine, dnnl_cpu, 0));
	DNNL_CHECK(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags));
out:
	return rc;
}

static void tr_ctx_free(tr_ctx *c)
{
	for (int i = 0; i < c->n_prim; i++)
		dnnl_primitive_destroy(c->prim[i]);
	for (int i = 0; i < c->n_mem; i++)
		dnnl_memory_destroy(c->mem[i].m);
	free(c->prim);
	free(c->mem);
	free(c->arena);
	free(c->scratch);
	if (c->stream)
		dnnl_stream_destroy(c->stream);
	if (c->engine)
		dnnl_engine_destroy(c->engine);
	memset(c, 0, sizeof(*c));
}

/* Makes a memory of layout md: over `data` when given (caller-owned),
 * else carved from the arena once tr_ctx_finish runs. */
static int tr_mem_new(tr_ctx *c, const dnnl_memory_desc_t *md, void *data, int kind,
		      dnnl_memory_t *out, char *err, size_t errlen)
{
	int rc = 0;
	*out = NULL;
	if (c->n_mem == c->cap_mem) {
		int cap = c->cap_mem ? 2 * c->cap_mem : 64;
		tr_mem *m = realloc(c->mem, (size_t)cap * sizeof(*m));
		if (!m) {
			snprintf(err, errlen, "out of memory for the trainer");
			return -1;
		}
		c->mem = m;
		c->cap_mem = cap;
	}
	DNNL_CHECK(dnnl_memory_create(out, md, c->engine, data ? data : DNNL_MEMORY_NONE));
	c->mem[c->n_mem].m = *out;
	c->mem[c->n_mem].size = dnnl_memory_desc_get_size(md);
	c->mem[c->n_mem].kind = data ? TR_MEM_EXTERNAL : kind;
	c->n_mem++;
out:
	return rc;
}

static int tr_buf(tr_ctx *c, const dnnl_memory_desc_t *md, dnnl_memory_t *out, char *err,
		  size_t errlen)
{
	return tr_mem_new(c, md, NULL, TR_MEM_ARENA, out, err, errlen);
}

static int tr_ext(tr_ctx *c, const dnnl_memory_desc_t *md, const void *data, dnnl_memory_t *out,
		  char *err, size_t errlen)
{
	return tr_mem_new(c, md, (void *)data, TR_MEM_EXTERNAL, out, err, errlen);
}

/* Creates the primitive of pd, registers it and its scratchpad view. */
static int tr_op_from_pd(tr_ctx *c, const_dnnl_primitive_desc_t pd, tr_op *op, char *err,
			 size_t errlen)
{
	int rc = 0;
	if (c->n_prim == c->cap_prim) {
		int cap = c->cap_prim ? 2 * c->cap_prim : 32;
		dnnl_primitive_t *p = realloc(c->prim, (size_t)cap * sizeof(*p));
		if (!p) {
			snprintf(err, errlen, "out of memory for the trainer");
			return -1;
		}
		c->prim = p;
		c->cap_prim = cap;
	}
	DNNL_CHECK(dnnl_primitive_create(&op->prim, pd));
	c->prim[c->n_prim++] = op->prim;
	const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
	if (tr_mem_new(c, smd, NULL, TR_MEM_SCRATCH, &op->scratch, err, errlen) < 0)
		rc = -1;
out:
	return rc;
}

/* The primitive for op descriptor `desc` (hint: its forward pd, or NULL),
 * with post-ops po (NULL: none). When pd_out is given the pd is returned
 * there (the caller destroys it). */
static int tr_op_make_po(tr_ctx *c, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
			 const_dnnl_post_ops_t po, tr_op *op, dnnl_primitive_desc_t *pd_out,
			 char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t pd = NULL;
	DNNL_CHECK(dnnl_primitive_attr_create(&attr));
	DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
	if (po)
		DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, desc, attr, c->engine, hint));
	if (tr_op_from_pd(c, pd, op, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	if (pd_out) {
		*pd_out = pd;
		pd = NULL;
	}
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

static int tr_op_make(tr_ctx *c, const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
		      tr_op *op, dnnl_primitive_desc_t *pd_out, char *err, size_t errlen)
{
	return tr_op_make_po(c, desc, hint, NULL, op, pd_out, err, errlen);
}

static int tr_reorder_make(tr_ctx *c, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
			   tr_op *op, char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_primitive_desc_t pd = NULL;
	DNNL_CHECK(dnnl_primitive_attr_create(&attr));
	DNNL_CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, from, c->engine, to, c->engine, attr));
	rc = tr_op_from_pd(c, pd, op, err, errlen);
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	return rc;
}

/* Allocates the arena and the scratchpad and points the deferred memories
 * into them. Called once, after every primitive and buffer is made. */
static int tr_ctx_finish(tr_ctx *c, char *err, size_t errlen)
{
	int rc = 0;
	size_t arena = 0, scratch = 64;
	for (int i = 0; i < c->n_mem; i++) {
		size_t sz = (c->mem[i].size + 63) / 64 * 64;
		if (c->mem[i].kind == TR_MEM_ARENA)
			arena += sz;
		else if (c->mem[i].kind == TR_MEM_SCRATCH && sz > scratch)
			scratch = sz;
	}
	c->arena = aligned_alloc(64, arena ? arena : 64);
	c->scratch = aligned_alloc(64, scratch);
	if (!c->arena || !c->scratch) {
		snprintf(err, errlen, "out of memory for %zu bytes of trainer buffers",
			 arena + scratch);
		return -1;
	}
	/* Zeroed so that padding and never-written gradients read as 0. */
	memset(c->arena, 0, arena ? arena : 64);
	size_t off = 0;
	for (int i = 0; i < c->n_mem; i++) {
		if (c->mem[i].kind == TR_MEM_ARENA) {
			DNNL_CHECK(dnnl_memory_set_data_handle(c->mem[i].m, (char *)c->arena + off));
			off += (c->mem[i].size + 63) / 64 * 64;
		} else if (c->mem[i].kind == TR_MEM_SCRATCH) {
			DNNL_CHECK(dnnl_memory_set_data_handle(c->mem[i].m, c->scratch));
		}
	}
out:
	return rc;
}

static float *tr_ptr(dnnl_memory_t m)
{
	void *h = NULL;
	dnnl_status_t s = dnnl_memory_get_data_handle(m, &h);
	assert(s == dnnl_success && h);
	(void)s;
	return h;
}

static size_t tr_floats(dnnl_memory_t m)
{
	const dnnl_memory_desc_t *md;
	dnnl_status_t s = dnnl_memory_get_memory_desc(m, &md);
	assert(s == dnnl_success);
	(void)s;
	return dnnl_memory_desc_get_size(md) / sizeof(float);
}

/* ---- layer shapes ---------------------------------------------------------- */

/* The primitives of one convolution shape. */
typedef struct tr_conv_prims {
	dnnl_memory_desc_t src, dst; /* activation layouts */
	dnnl_memory_desc_t w_user;   /* OIHW, the net's layout */
	dnnl_memory_desc_t w_fwd;    /* weights as forward wants them */
	dnnl_memory_desc_t w_bwd;    /* weights as backward_data wants them */
	dnnl_memory_desc_t dw;       /* weight gradient as backward_weights writes it */
	dnnl_memory_desc_t bias;     /* x */
	int has_bwd_d;               /* 1: backward_data exists */
	int bf16;                    /* 1: the passes take bf16 sources, output
				      * gradients and weights (src_lp, dst_lp, w_fwd,
				      * w_bwd), and write fp32 */
	dnnl_memory_desc_t src_lp, dst_lp; /* bf16: src's and dst's layouts in bf16 */
	tr_op fwd, bwd_d, bwd_w;     /* the three passes */
	tr_op to_fwd, to_bwd, from_dw; /* reorders; prim NULL when formats agree */
	tr_op src_to_lp, dst_to_lp;  /* bf16: fp32 activations (gradients) -> bf16 */
} tr_conv_prims;

/* One conv's weight memories over the net and gradient arrays. */
typedef struct tr_convw {
	dnnl_memory_t w_user, w_fwd, w_bwd; /* OIHW over the net; formatted copies or aliases */
	dnnl_memory_t b;                    /* bias over the net */
	dnnl_memory_t dw_user, dw;          /* OIHW over the gradient; as written, or alias */
	dnnl_memory_t db;                   /* bias gradient over the gradient array */
} tr_convw;

typedef struct tr_bn_prims {
	dnnl_memory_desc_t data, stat; /* activation layout; [C] statistics */
	tr_op fwd, inf, bwd;           /* training forward, inference forward, backward */
	/* The same with the ReLU after it fused in (oneDNN's fuse_norm_relu):
	 * the forward writes relu(BN(z)) and a mask of where it passed, which
	 * the backward applies to its output gradient, so neither pass reads
	 * or writes the activations a second time for the ReLU. */
	tr_op fwd_relu, bwd_relu;
	dnnl_memory_desc_t ws;         /* that mask's layout */
} tr_bn_prims;

typedef struct tr_relu_prims {
	tr_op fwd, bwd; /* in-place forward; backward from the output */
} tr_relu_prims;

typedef struct tr_ip_prims {
	dnnl_memory_desc_t src, w, bias, dst; /* all plain */
	tr_op fwd, bwd_d, bwd_w;              /* the three passes */
} tr_ip_prims;

/* Whether oneDNN has Winograd kernels for all three passes of a 3x3
 * convolution of this shape and layout (oneDNN 2.6: AVX-512, blocked
 * layout, widths that are multiples of 16). Nothing is kept. */
static bool tr_conv_has_winograd(const tr_ctx *c, int n, int cin, int cout, int h, int w,
				 dnnl_format_tag_t src_tag, dnnl_format_tag_t dst_tag, int bwd_d)
{
	dnnl_dims_t sd = { n, cin, h, w }, dd = { n, cout, h, w }, wd = { cout, cin, 3, 3 },
		    bd = { cout };
	dnnl_dims_t strides = { 1, 1 }, pad = { 1, 1 };
	dnnl_memory_desc_t src, dst, w_any, bias;
	dnnl_convolution_desc_t d;
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	bool ok = dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, src_tag) == dnnl_success &&
		  dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dst_tag) == dnnl_success &&
		  dnnl_memory_desc_init_by_tag(&w_any, 4, wd, dnnl_f32, dnnl_format_tag_any) ==
			  dnnl_success &&
		  dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_x) == dnnl_success &&
		  dnnl_convolution_forward_desc_init(&d, dnnl_forward_training,
						     dnnl_convolution_winograd, &src, &w_any, &bias,
						     &dst, strides, pad, pad) == dnnl_success &&
		  dnnl_primitive_desc_create(&fpd, &d, NULL, c->engine, NULL) == dnnl_success;
	if (ok && bwd_d) {
		ok = dnnl_convolution_backward_data_desc_init(&d, dnnl_convolution_winograd, &src,
							      &w_any, &dst, strides, pad,
							      pad) == dnnl_success &&
		     dnnl_primitive_desc_create(&pd, &d, NULL, c->engine, fpd) == dnnl_success;
		if (pd)
			dnnl_primitive_desc_destroy(pd);
		pd = NULL;
	}
	if (ok)
		ok = dnnl_convolution_backward_weights_desc_init(&d, dnnl_convolution_winograd, &src,
								 &w_any, &bias, &dst, strides, pad,
								 pad) == dnnl_success &&
		     dnnl_primitive_desc_create(&pd, &d, NULL, c->engine, fpd) == dnnl_success;
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	return ok;
}

/* The primitives of one convolution shape, in algorithm `alg` (direct, or
 * Winograd where tr_conv_has_winograd says so), with bf16 operands when
 * bf16 (then src_tag must not be "any"). */
static int tr_conv_prims_make(tr_ctx *c, tr_conv_prims *p, int n, int cin, int cout, int k, int h,
			      int w, dnnl_format_tag_t src_tag, dnnl_format_tag_t dst_tag,
			      int bwd_d, dnnl_alg_kind_t alg, int bf16, char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_desc_t fpd = NULL, pd = NULL;
	dnnl_dims_t sd = { n, cin, h, w }, dd = { n, cout, h, w }, wd = { cout, cin, k, k },
		    bd = { cout };
	dnnl_dims_t strides = { 1, 1 }, pad = { k / 2, k / 2 };
	dnnl_memory_desc_t w_any, dw_any;
	dnnl_convolution_desc_t d;
	memset(p, 0, sizeof(*p));
	p->has_bwd_d = bwd_d;
	p->bf16 = bf16;
	dnnl_data_type_t op_t = bf16 ? dnnl_bf16 : dnnl_f32;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->src, 4, sd, dnnl_f32, src_tag));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->dst, 4, dd, dnnl_f32, dst_tag));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->w_user, 4, wd, dnnl_f32, dnnl_oihw));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&w_any, 4, wd, op_t, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&dw_any, 4, wd, dnnl_f32, dnnl_format_tag_any));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->bias, 1, bd, dnnl_f32, dnnl_x));
	/* The operands the passes read: the activations themselves in fp32,
	 * bf16 copies of them otherwise. */
	p->src_lp = p->src;
	p->dst_lp = p->dst;
	if (bf16) {
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->src_lp, 4, sd, dnnl_bf16, src_tag));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->dst_lp, 4, dd, dnnl_bf16, dst_tag));
	}
	DNNL_CHECK(dnnl_convolution_forward_desc_init(&d, dnnl_forward_training, alg, &p->src_lp,
						      &w_any, &p->bias, &p->dst, strides, pad, pad));
	if (tr_op_make(c, &d, NULL, &p->fwd, &fpd, err, errlen) < 0)
		goto fail;
	p->w_fwd = *dnnl_primitive_desc_query_md(fpd, dnnl_query_weights_md, 0);
	p->w_bwd = p->w_fwd;
	/* A source asked as "any" (the input conv, fp32) is what forward chose. */
	if (!bf16)
		p->src = p->src_lp = *dnnl_primitive_desc_query_md(fpd, dnnl_query_src_md, 0);
	if (bwd_d) {
		DNNL_CHECK(dnnl_convolution_backward_data_desc_init(&d, alg,
								    &p->src, &w_any, &p->dst_lp,
								    strides, pad, pad));
		if (tr_op_make(c, &d, fpd, &p->bwd_d, &pd, err, errlen) < 0)
			goto fail;
		p->w_bwd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
		dnnl_primitive_desc_destroy(pd);
		pd = NULL;
	}
	DNNL_CHECK(dnnl_convolution_backward_weights_desc_init(&d, alg,
							       &p->src_lp, &dw_any, &p->bias,
							       &p->dst_lp, strides, pad, pad));
	if (tr_op_make(c, &d, fpd, &p->bwd_w, &pd, err, errlen) < 0)
		goto fail;
	p->dw = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
	if (!dnnl_memory_desc_equal(&p->w_user, &p->w_fwd) &&
	    tr_reorder_make(c, &p->w_user, &p->w_fwd, &p->to_fwd, err, errlen) < 0)
		goto fail;
	if (bwd_d && !dnnl_memory_desc_equal(&p->w_bwd, &p->w_fwd) &&
	    !dnnl_memory_desc_equal(&p->w_bwd, &p->w_user) &&
	    tr_reorder_make(c, &p->w_user, &p->w_bwd, &p->to_bwd, err, errlen) < 0)
		goto fail;
	if (!dnnl_memory_desc_equal(&p->dw, &p->w_user) &&
	    tr_reorder_make(c, &p->dw, &p->w_user, &p->from_dw, err, errlen) < 0)
		goto fail;
	if (bf16 && (tr_reorder_make(c, &p->src, &p->src_lp, &p->src_to_lp, err, errlen) < 0 ||
		     tr_reorder_make(c, &p->dst, &p->dst_lp, &p->dst_to_lp, err, errlen) < 0))
		goto fail;
	goto out;
fail:
	rc = -1;
out:
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	return rc;
}

/* Weight memories of one conv of shape p over w/b (net) and dw/db (grad). */
static int tr_convw_bind(tr_ctx *c, const tr_conv_prims *p, tr_convw *m, const float *w,
			 const float *b, float *dw, float *db, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (tr_ext(c, &p->w_user, w, &m->w_user, err, errlen) < 0 ||
	    tr_ext(c, &p->bias, b, &m->b, err, errlen) < 0 ||
	    tr_ext(c, &p->w_user, dw, &m->dw_user, err, errlen) < 0 ||
	    tr_ext(c, &p->bias, db, &m->db, err, errlen) < 0)
		return -1;
	m->w_fwd = m->w_user;
	if (p->to_fwd.prim && tr_buf(c, &p->w_fwd, &m->w_fwd, err, errlen) < 0)
		return -1;
	if (dnnl_memory_desc_equal(&p->w_bwd, &p->w_fwd))
		m->w_bwd = m->w_fwd;
	else if (dnnl_memory_desc_equal(&p->w_bwd, &p->w_user))
		m->w_bwd = m->w_user;
	else if (tr_buf(c, &p->w_bwd, &m->w_bwd, err, errlen) < 0)
		return -1;
	m->dw = m->dw_user;
	if (p->from_dw.prim && tr_buf(c, &p->dw, &m->dw, err, errlen) < 0)
		return -1;
	return 0;
}

/* Brings the formatted weight copies up to date with the net's weights. */
static int tr_convw_prep(tr_ctx *c, const tr_conv_prims *p, const tr_convw *m, char *err,
			 size_t errlen)
{
	int rc = 0;
	if (p->to_fwd.prim)
		RUN(&p->to_fwd, { DNNL_ARG_FROM, m->w_user }, { DNNL_ARG_TO, m->w_fwd });
	if (p->to_bwd.prim)
		RUN(&p->to_bwd, { DNNL_ARG_FROM, m->w_user }, { DNNL_ARG_TO, m->w_bwd });
out:
	return rc;
}

static int tr_bn_prims_make(tr_ctx *c, tr_bn_prims *p, const dnnl_memory_desc_t *data, int ch,
			    char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_desc_t fpd = NULL;
	dnnl_batch_normalization_desc_t d;
	dnnl_dims_t cd = { ch };
	unsigned flags = dnnl_use_scale | dnnl_use_shift;
	memset(p, 0, sizeof(*p));
	p->data = *data;
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->stat, 1, cd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, data,
							       NN_BN_EPS, flags));
	if (tr_op_make(c, &d, NULL, &p->fwd, &fpd, err, errlen) < 0)
		goto fail;
	DNNL_CHECK(dnnl_batch_normalization_backward_desc_init(&d, dnnl_backward, data, data,
								NN_BN_EPS, flags));
	if (tr_op_make(c, &d, fpd, &p->bwd, NULL, err, errlen) < 0)
		goto fail;
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, data,
							       NN_BN_EPS,
							       flags | dnnl_use_global_stats));
	if (tr_op_make(c, &d, NULL, &p->inf, NULL, err, errlen) < 0)
		goto fail;
	dnnl_primitive_desc_destroy(fpd);
	fpd = NULL;
	DNNL_CHECK(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_training, data,
							       NN_BN_EPS,
							       flags | dnnl_fuse_norm_relu));
	if (tr_op_make(c, &d, NULL, &p->fwd_relu, &fpd, err, errlen) < 0)
		goto fail;
	p->ws = *dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0);
	DNNL_CHECK(dnnl_batch_normalization_backward_desc_init(&d, dnnl_backward, data, data,
								NN_BN_EPS, flags | dnnl_fuse_norm_relu));
	if (tr_op_make(c, &d, fpd, &p->bwd_relu, NULL, err, errlen) < 0)
		goto fail;
	goto out;
fail:
	rc = -1;
out:
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	return rc;
}

/* dst = src0 + src1 over layout `data`, then a ReLU when `relu`: oneDNN's
 * binary add, on every thread (in place with dst = src0). */
static int tr_add_make(tr_ctx *c, tr_op *op, const dnnl_memory_desc_t *data, int relu, char *err,
		       size_t errlen)
{
	int rc = 0;
	dnnl_post_ops_t po = NULL;
	dnnl_binary_desc_t d;
	DNNL_CHECK(dnnl_binary_desc_init(&d, dnnl_binary_add, data, data, data));
	if (relu) {
		DNNL_CHECK(dnnl_post_ops_create(&po));
		DNNL_CHECK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
	}
	rc = tr_op_make_po(c, &d, NULL, po, op, NULL, err, errlen);
out:
	if (po)
		dnnl_post_ops_destroy(po);
	return rc;
}

static int tr_relu_prims_make(tr_ctx *c, tr_relu_prims *p, const dnnl_memory_desc_t *data,
			      char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_desc_t fpd = NULL;
	dnnl_eltwise_desc_t d;
	memset(p, 0, sizeof(*p));
	/* The _use_dst_for_bwd form lets the forward run in place: backward
	 * needs only the output. */
	DNNL_CHECK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_training,
						  dnnl_eltwise_relu_use_dst_for_bwd, data, 0.0f,
						  0.0f));
	if (tr_op_make(c, &d, NULL, &p->fwd, &fpd, err, errlen) < 0)
		goto fail;
	DNNL_CHECK(dnnl_eltwise_backward_desc_init(&d, dnnl_eltwise_relu_use_dst_for_bwd, data,
						   data, 0.0f, 0.0f));
	if (tr_op_make(c, &d, fpd, &p->bwd, NULL, err, errlen) < 0)
		goto fail;
	goto out;
fail:
	rc = -1;
out:
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	return rc;
}

/* An inner product from src (4-D NCHW when ch > 0, else 2-D [n][nin]) to
 * [n][nout]; weights plain OIHW / OI, so they are the net's [out][in]. */
static int tr_ip_prims_make(tr_ctx *c, tr_ip_prims *p, int n, int nin, int nout, int ch, int h,
			    int w, char *err, size_t errlen)
{
	int rc = 0;
	dnnl_primitive_desc_t fpd = NULL;
	dnnl_inner_product_desc_t d;
	dnnl_dims_t bd = { nout }, dd = { n, nout };
	memset(p, 0, sizeof(*p));
	if (ch > 0) {
		dnnl_dims_t sd = { n, ch, h, w }, wd = { nout, ch, h, w };
		assert(ch * h * w == nin);
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->src, 4, sd, dnnl_f32, dnnl_nchw));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->w, 4, wd, dnnl_f32, dnnl_oihw));
	} else {
		dnnl_dims_t sd = { n, nin }, wd = { nout, nin };
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->src, 2, sd, dnnl_f32, dnnl_nc));
		DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->w, 2, wd, dnnl_f32, dnnl_oi));
	}
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->bias, 1, bd, dnnl_f32, dnnl_x));
	DNNL_CHECK(dnnl_memory_desc_init_by_tag(&p->dst, 2, dd, dnnl_f32, dnnl_nc));
	DNNL_CHECK(dnnl_inner_product_forward_desc_init(&d, dnnl_forward_training, &p->src, &p->w,
							&p->bias, &p->dst));
	if (tr_op_make(c, &d, NULL, &p->fwd, &fpd, err, errlen) < 0)
		goto fail;
	DNNL_CHECK(dnnl_inner_product_backward_data_desc_init(&d, &p->src, &p->w, &p->dst));
	if (tr_op_make(c, &d, fpd, &p->bwd_d, NULL, err, errlen) < 0)
		goto fail;
	DNNL_CHECK(dnnl_inner_product_backward_weights_desc_init(&d, &p->src, &p->w, &p->bias,
								 &p->dst));
	if (tr_op_make(c, &d, fpd, &p->bwd_w, NULL, err, errlen) < 0)
		goto fail;
	goto out;
fail:
	rc = -1;
out:
	if (fpd)
		dnnl_primitive_desc_destroy(fpd);
	return rc;
}

/* ---- losses (plain C, double accumulation) -------------------------------- */

double train_loss_policy(int n, int n_actions, const float *logits, const float *target,
			 float *dlogits)
{
	double total = 0;
	for (int i = 0; i < n; i++) {
		const float *z = logits + (size_t)i * n_actions;
		const float *p = target + (size_t)i * n_actions;
		double m = z[0], sum = 0, psum = 0, dot = 0;
		for (int a = 1; a < n_actions; a++)
			if (z[a] > m)
				m = z[a];
		for (int a = 0; a < n_actions; a++) {
			sum += exp(z[a] - m);
			psum += p[a];
			dot += p[a] * (z[a] - m);
		}
		double lse = log(sum);
		/* -sum p log softmax = psum * lse - sum p (z - m) */
		total += psum * lse - dot;
		if (dlogits)
			for (int a = 0; a < n_actions; a++)
				dlogits[(size_t)i * n_actions + a] =
					(float)((psum * exp(z[a] - m) / sum - p[a]) / n);
	}
	return n ? total / n : 0.0;
}

/* The WDL target of value z when none is given (see trainer.h). */
static void tr_wdl_from_value(double z, double *t)
{
	t[0] = z > 0 ? z : 0;
	t[2] = z < 0 ? -z : 0;
	t[1] = 1.0 - fabs(z);
}

double train_loss_value(int n, int outputs, const float *out, const float *value,
			const float *wdl, float *dout)
{
	double total = 0;
	for (int i = 0; i < n; i++) {
		if (outputs == 1) {
			double v = tanh(out[i]), e = v - value[i];
			total += e * e;
			if (dout)
				dout[i] = (float)(2.0 * e * (1.0 - v * v) / n);
			continue;
		}
		const float *z = out + 3 * i;
		double t[3], m = fmax(z[0], fmax(z[1], z[2])), s = 0, tsum = 0, dot = 0;
		if (wdl)
			for (int k = 0; k < 3; k++)
				t[k] = wdl[3 * i + k];
		else
			tr_wdl_from_value(value[i], t);
		for (int k = 0; k < 3; k++) {
			s += exp(z[k] - m);
			tsum += t[k];
			dot += t[k] * (z[k] - m);
		}
		total += tsum * log(s) - dot;
		if (dout)
			for (int k = 0; k < 3; k++)
				dout[3 * i + k] = (float)((tsum * exp(z[k] - m) / s - t[k]) / n);
	}
	return n ? total / n : 0.0;
}

/* ---- the trainer ----------------------------------------------------------- */

/* One conv + BN + ReLU layer of the net. */
typedef struct tr_layer {
	nn_conv *conv;             /* its tensors in the trainer's net */
	const tr_conv_prims *cp;   /* conv shape */
	const tr_bn_prims *bp;     /* BN shape */
	const tr_relu_prims *rp;   /* ReLU shape */
	tr_convw w;                /* conv weight memories */
	dnnl_memory_t gamma, beta; /* BN scale and shift over the net */
	dnnl_memory_t dgamma, dbeta; /* their gradients over the gradient array */
	dnnl_memory_t rmean, rvar; /* running statistics over the net */
	dnnl_memory_t mean, var;   /* batch statistics of the last training pass */
	dnnl_memory_t z;           /* conv output (BN input) */
	dnnl_memory_t a;           /* BN output (+ skip), ReLU in place: the layer output */
	dnnl_memory_t ws;          /* ReLU mask of the fused BN (layers without a skip), or NULL */
	int fused;                 /* the last training forward ran the fused BN + ReLU */
	dnnl_memory_t lp;          /* bf16 convs: the source as the forward rounded it, which
				    * the backward reuses */
	struct tr_se *se;          /* the block's squeeze-excitation (its second layer), or NULL */
} tr_layer;

/* Squeeze-excitation of one block (net.h: Leela Chess Zero's form), in
 * plain loops over the tower layout: after the second BN, u, the mean of
 * each channel over the board, FC1 + ReLU, FC2 to 2C: a sigmoid gate and a
 * bias per channel, a = gate * u + bias (then + skip, ReLU). Its buffers
 * are per block; the gradients' scratch is shared. */
typedef struct tr_se {
	const nn_block *blk;       /* se1 (C -> S), se2 (S -> 2C) over the net */
	dnnl_memory_t u;           /* the BN output before the gate (tower layout) */
	float *pool;               /* [N][C] channel means of u */
	float *hid;                /* [N][S] ReLU(se1(pool)) */
	float *gate;               /* [N][2C] sigmoid of se2's first C, then its last C */
} tr_se;

/* One inner product of the heads. */
typedef struct tr_fc {
	const tr_ip_prims *ip; /* shape */
	dnnl_memory_t w, b;    /* over the net */
	dnnl_memory_t dw, db;  /* over the gradient array */
	dnnl_memory_t y;       /* output */
} tr_fc;

enum { TR_ROLE_BUFFER = 0, TR_ROLE_PARAM = 1, TR_ROLE_DECAY = 2 };
/* Floats after the gradient: loss, policy loss, value loss, opponent-reply
 * loss, ownership loss, score loss. */
enum { TR_GRAD_EXTRA = 6 };

struct trainer {
	train_options opt;        /* as given (validated) */
	nn_net *net;              /* the weights, training form (owned) */
	float *grad;              /* gradient, parallel to net->data */
	uint8_t *role;            /* TR_ROLE_* of each float of net->data */
	float *mom[2];            /* optimizer moments, parallel to net->data */
	int n_mom;                /* SGD 1, AdamW 2 */
	int64_t step;             /* optimizer steps done */
	uint64_t rng;             /* splitmix64 state of trainer_random */
	int batch;                /* N of every primitive */
	tr_ctx c;                 /* oneDNN objects and buffers */
	tr_conv_prims cp_in, cp_tower, cp_pol, cp_val; /* conv shapes */
	tr_bn_prims bp_tower, bp_pol, bp_val;          /* BN shapes */
	tr_relu_prims rp_tower, rp_pol, rp_val, rp_hid; /* ReLU shapes */
	tr_ip_prims ip_pol, ip_v1, ip_v2;              /* inner-product shapes */
	tr_layer *layer;          /* 0 input, 1..2B the tower, 2B+1 policy, 2B+2 value */
	int n_layer;              /* 2 * blocks + 3 */
	tr_fc fc_pol, fc_v1, fc_v2; /* policy FC, value FC1 and FC2 */
	tr_fc fc_opp;             /* opponent-reply FC (ip_pol's shape); ip NULL without */
	dnnl_memory_t dopp;       /* its logits' gradient */
	dnnl_memory_t gopp;       /* the policy head's gradient from it (ip_pol.src) */
	float *own_dz;            /* [batch][points] the ownership logits' gradient, or
				   * NULL without the head (plain loops: one weight per
				   * value channel) */
	float *score_dy;          /* [batch] the score output's gradient, or NULL without
				   * the head (plain loops on the value hidden layer) */
	dnnl_memory_t in_user;    /* input planes, NCHW */
	dnnl_memory_t in;         /* the same in the input conv's layout (or in_user) */
	tr_op in_reorder;         /* in_user -> in; prim NULL when the same */
	dnnl_memory_t head_plain[2];  /* policy, value head activations in NCHW (or the layer's a) */
	dnnl_memory_t head_gplain[2]; /* their gradients from the inner products, NCHW */
	tr_op head_to_plain[2];   /* a -> head_plain; prim NULL when the layout is NCHW */
	tr_op head_from_plain[2]; /* head_gplain -> layout of the head conv */
	dnnl_memory_t g[4];       /* tower-gradient buffers */
	dnnl_memory_t gp[3], gv[3]; /* policy and value head-conv gradient buffers */
	dnnl_memory_t dlogits;    /* policy-logit gradient */
	dnnl_memory_t dvh, dvh2;  /* value-hidden gradient after and before ReLU */
	dnnl_memory_t dvout;      /* value-output gradient */
	int blocked;              /* 1: activations nChw16c, 0: NHWC */
	int winograd;             /* 1: the tower's 3x3 convs are Winograd's */
	dnnl_memory_t lp_g;       /* bf16 tower: a layer's output gradient in bf16 (shared) */
	tr_op add_relu, add;      /* tower layout: a + skip then ReLU; gradient sums */
	tr_se *se;                /* [blocks] SE state (blk NULL: a plain block), or NULL */
	float *se_buf;            /* one allocation: every SE block's pool, hid, gate, then
				   * the shared scratch of the backward pass */
	float *se_dz, *se_dhid, *se_dpool; /* scratch: [2C], [S], [C] of one position */
	float *se_pw;             /* masked pooling: [batch][H * W] each point's weight in
				   * the means (nn_board_pool_weights), else NULL */
	comm *comm;               /* data-parallel ranks, or NULL (not owned) */
	float *bn_sync;           /* [3 * widest BN] scratch of the BN all-reduces */
	double *bn_acc;           /* trainer_bn_*: per BN channel of every layer, the sums
				   * of the batch means and of (variance + mean^2) */
	int bn_acc_n;             /* batches accumulated */
	train_stats last;         /* losses of the last training pass */
	int ckpt_world;           /* world size of the last checkpoint loaded, 0 none */
	char err[256];            /* last failure */
};

train_options train_options_default(void)
{
	train_options o;
	memset(&o, 0, sizeof(o));
	o.batch = 64;
	o.optimizer = TRAIN_OPTIMIZER_SGD;
	o.lr = 0.02;
	o.momentum = 0.9;
	o.weight_decay = 1e-4;
	o.adam_beta1 = 0.9;
	o.adam_beta2 = 0.999;
	o.adam_eps = 1e-8;
	o.value_weight = 1.0;
	o.opp_weight = 0.15;
	o.own_weight = 1.5;
	o.score_weight = 1.0;
	o.bn_momentum = 0.01;
	o.lr_schedule = TRAIN_LR_SCHEDULE_CONSTANT;
	o.lr_gamma = 0.1;
	o.seed = 1;
	o.precision = NN_DTYPE_FP32;
	return o;
}

int train_options_check(const train_options *o, char *err, size_t errlen)
{
#define OPT_FAIL(...)                                   \
	do {                                            \
		snprintf(err, errlen, __VA_ARGS__);     \
		return -1;                              \
	} while (0)
	if (o->batch < 2 || o->batch > 8192)
		OPT_FAIL("batch %d: must be 2..8192 (batch norm needs two positions)", o->batch);
	if (o->threads < 0 || o->threads > 1024)
		OPT_FAIL("%d threads: must be 0 (default) .. 1024", o->threads);
	if (o->optimizer != TRAIN_OPTIMIZER_SGD && o->optimizer != TRAIN_OPTIMIZER_ADAMW)
		OPT_FAIL("unknown optimizer %d", (int)o->optimizer);
	if (!(o->lr >= 0) || !(o->momentum >= 0 && o->momentum < 1) || !(o->weight_decay >= 0))
		OPT_FAIL("learning rate, momentum (< 1) and weight decay must be >= 0");
	if (!(o->adam_beta1 >= 0 && o->adam_beta1 < 1) || !(o->adam_beta2 >= 0 && o->adam_beta2 < 1) ||
	    !(o->adam_eps > 0))
		OPT_FAIL("Adam betas must be in [0, 1) and eps > 0");
	if (!(o->value_weight >= 0) || !(o->opp_weight >= 0) || !(o->own_weight >= 0) ||
	    !(o->score_weight >= 0) ||
	    !(o->bn_momentum >= 0 && o->bn_momentum <= 1))
		OPT_FAIL("value, opponent-reply, ownership and score weights must be >= 0 and BN "
			 "momentum in [0, 1]");
	if ((unsigned)o->layout > TRAIN_LAYOUT_NHWC)
		OPT_FAIL("unknown layout %d", (int)o->layout);
	if ((unsigned)o->algo > NN_CONV_WINOGRAD)
		OPT_FAIL("unknown convolution algorithm %d", (int)o->algo);
	if ((unsigned)o->lr_schedule > TRAIN_LR_SCHEDULE_COSINE)
		OPT_FAIL("unknown learning-rate schedule %d", (int)o->lr_schedule);
	if (o->n_lr_steps < 0 || o->n_lr_steps > TRAIN_MAX_LR_STEPS)
		OPT_FAIL("%d learning-rate drops: at most %d", o->n_lr_steps, TRAIN_MAX_LR_STEPS);
	if (o->lr_schedule == TRAIN_LR_SCHEDULE_COSINE && o->lr_total_steps < 1)
		OPT_FAIL("a cosine schedule needs lr_total_steps >= 1");
	if (o->warmup_steps < 0)
		OPT_FAIL("warm-up steps must be >= 0");
	if (o->precision != NN_DTYPE_FP32 && o->precision != NN_DTYPE_BF16)
		OPT_FAIL("the CPU learner trains in fp32 or bf16, not %s",
			 nn_dtype_name(o->precision));
	return 0;
#undef OPT_FAIL
}

/* Marks the floats of conv/FC tensors with their role. */
static void tr_roles(trainer *t)
{
	nn_net *n = t->net;
	uint8_t *r = t->role;
	memset(r, TR_ROLE_PARAM, n->n_floats);
	for (int l = 0; l < t->n_layer; l++) {
		const nn_conv *cv = t->layer[l].conv;
		size_t nw = (size_t)cv->c_out * cv->c_in * cv->k * cv->k;
		memset(r + (cv->w - n->data), TR_ROLE_DECAY, nw);
		memset(r + (cv->bn_mean - n->data), TR_ROLE_BUFFER, (size_t)cv->c_out);
		memset(r + (cv->bn_var - n->data), TR_ROLE_BUFFER, (size_t)cv->c_out);
	}
	const nn_fc *fcs[6] = { &n->policy_fc, &n->value_fc1, &n->value_fc2, &n->opp_fc,
				&n->own_fc, &n->score_fc };
	for (int f = 0; f < 6; f++)
		if (fcs[f]->w)
			memset(r + (fcs[f]->w - n->data), TR_ROLE_DECAY,
			       (size_t)fcs[f]->n_in * fcs[f]->n_out);
	for (int i = 0; i < n->arch.blocks; i++) {
		const nn_block *b = &n->block[i];
		if (!b->se1.w)
			continue;
		memset(r + (b->se1.w - n->data), TR_ROLE_DECAY, (size_t)b->se1.n_in * b->se1.n_out);
		memset(r + (b->se2.w - n->data), TR_ROLE_DECAY, (size_t)b->se2.n_in * b->se2.n_out);
	}
}

static float *tr_g(const trainer *t, const float *p)
{
	return t->grad + (p - t->net->data);
}

/* Memories of layer l (conv cv) over the net and gradient arrays, plus its
 * activations. */
static int tr_layer_bind(trainer *t, tr_layer *L, nn_conv *cv, const tr_conv_prims *cp,
			 const tr_bn_prims *bp, const tr_relu_prims *rp, int skip, char *err,
			 size_t errlen)
{
	tr_ctx *c = &t->c;
	L->conv = cv;
	L->cp = cp;
	L->bp = bp;
	L->rp = rp;
	if (tr_convw_bind(c, cp, &L->w, cv->w, cv->b, tr_g(t, cv->w), tr_g(t, cv->b), err,
			  errlen) < 0 ||
	    tr_ext(c, &bp->stat, cv->bn_gamma, &L->gamma, err, errlen) < 0 ||
	    tr_ext(c, &bp->stat, cv->bn_beta, &L->beta, err, errlen) < 0 ||
	    tr_ext(c, &bp->stat, tr_g(t, cv->bn_gamma), &L->dgamma, err, errlen) < 0 ||
	    tr_ext(c, &bp->stat, tr_g(t, cv->bn_beta), &L->dbeta, err, errlen) < 0 ||
	    tr_ext(c, &bp->stat, cv->bn_mean, &L->rmean, err, errlen) < 0 ||
	    tr_ext(c, &bp->stat, cv->bn_var, &L->rvar, err, errlen) < 0 ||
	    tr_buf(c, &bp->stat, &L->mean, err, errlen) < 0 ||
	    tr_buf(c, &bp->stat, &L->var, err, errlen) < 0 ||
	    tr_buf(c, &cp->dst, &L->z, err, errlen) < 0 || tr_buf(c, &cp->dst, &L->a, err, errlen) < 0)
		return -1;
	/* A layer without a skip has its ReLU right after the BN: fused. */
	if (!skip && tr_buf(c, &bp->ws, &L->ws, err, errlen) < 0)
		return -1;
	if (cp->bf16 && tr_buf(c, &cp->src_lp, &L->lp, err, errlen) < 0)
		return -1;
	return 0;
}

static int tr_fc_bind(trainer *t, tr_fc *F, nn_fc *f, const tr_ip_prims *ip, char *err,
		      size_t errlen)
{
	tr_ctx *c = &t->c;
	F->ip = ip;
	if (tr_ext(c, &ip->w, f->w, &F->w, err, errlen) < 0 ||
	    tr_ext(c, &ip->bias, f->b, &F->b, err, errlen) < 0 ||
	    tr_ext(c, &ip->w, tr_g(t, f->w), &F->dw, err, errlen) < 0 ||
	    tr_ext(c, &ip->bias, tr_g(t, f->b), &F->db, err, errlen) < 0 ||
	    tr_buf(c, &ip->dst, &F->y, err, errlen) < 0)
		return -1;
	return 0;
}

/* The SE state of every SE block, bound to its second layer; its u in
 * the arena. 0, or -1 with a message. */
static int tr_se_make(trainer *t, char *err, size_t errlen)
{
	const nn_arch *a = &t->net->arch;
	size_t N = (size_t)t->batch, C = (size_t)a->channels, S = (size_t)a->se_channels, n_se = 0;
	for (int i = 0; i < a->blocks; i++)
		n_se += a->block_kind[i] == NN_BLOCK_SE;
	if (!n_se)
		return 0;
	size_t per = N * (C + S + 2 * C), HW = (size_t)a->board_w * a->board_h;
	t->se = calloc((size_t)a->blocks, sizeof(*t->se));
	t->se_buf = calloc(n_se * per + 2 * C + S + C + (a->masked_pool ? N * HW : 0),
			   sizeof(float));
	if (!t->se || !t->se_buf) {
		snprintf(err, errlen, "out of memory for a trainer");
		return -1;
	}
	float *p = t->se_buf;
	for (int i = 0; i < a->blocks; i++) {
		if (a->block_kind[i] != NN_BLOCK_SE)
			continue;
		tr_se *e = &t->se[i];
		e->blk = &t->net->block[i];
		e->pool = p;
		e->hid = p + N * C;
		e->gate = p + N * (C + S);
		p += per;
		if (tr_buf(&t->c, &t->cp_tower.dst, &e->u, err, errlen) < 0)
			return -1;
		t->layer[2 + 2 * i].se = e;
	}
	t->se_dz = p;
	t->se_dhid = p + 2 * C;
	t->se_dpool = p + 2 * C + S;
	if (a->masked_pool)
		t->se_pw = p + 2 * C + S + C;
	return 0;
}

/* One squeeze-excitation pass over plain arrays: the trainer's blocks
 * (tr_se_fwd, tr_se_bwd) and train_layer_se (layers.h) share it. */
typedef struct tr_se_view {
	int N, C, S, HW;           /* positions, channels, bottleneck, points */
	int layout;                /* TR_SE_* of the activations */
	const float *pw;           /* [N][HW] each point's weight in the means
				    * (masked pooling), or NULL: 1 / HW */
	const nn_fc *f1, *f2;      /* se1 (C -> S), se2 (S -> 2C) */
	float *pool, *hid, *gate;  /* [N][C], [N][S], [N][2C] (see tr_se) */
	float *dz, *dhid, *dpool;  /* backward scratch: [2C], [S], [C] of one position */
} tr_se_view;

/* Activation layouts, all unpadded: the tower's nChw16c or NHWC, and
 * layers.h's NCHW. */
enum { TR_SE_NHWC, TR_SE_BLOCKED, TR_SE_NCHW };

/* Where channel c of position n starts in an activation, and (step) the
 * distance between its points. */
static size_t tr_se_at(const tr_se_view *v, int n, int c, size_t *step)
{
	size_t C = (size_t)v->C, HW = (size_t)v->HW;
	if (v->layout == TR_SE_BLOCKED) {
		*step = 16;
		return (((size_t)n * (C / 16) + (size_t)c / 16) * HW) * 16 + (size_t)c % 16;
	}
	if (v->layout == TR_SE_NCHW) {
		*step = 1;
		return ((size_t)n * C + (size_t)c) * HW;
	}
	*step = C;
	return (size_t)n * HW * C + (size_t)c;
}

/* x = gate * u + bias over all the view's positions. */
static void tr_se_forward(const tr_se_view *v, const float *u, float *x)
{
	int C = v->C, S = v->S, HW = v->HW;
	const nn_fc *f1 = v->f1, *f2 = v->f2;
	for (int n = 0; n < v->N; n++) {
		float *pool = v->pool + (size_t)n * C, *hid = v->hid + (size_t)n * S,
		      *gate = v->gate + (size_t)n * 2 * C;
		const float *pw = v->pw ? v->pw + (size_t)n * HW : NULL;
		for (int c = 0; c < C; c++) {
			size_t st, o = tr_se_at(v, n, c, &st);
			double sum = 0;
			for (int p = 0; p < HW; p++)
				sum += u[o + (size_t)p * st] * (pw ? (double)pw[p] : 1.0 / HW);
			pool[c] = (float)sum;
		}
		for (int j = 0; j < S; j++) {
			double h = f1->b[j];
			for (int c = 0; c < C; c++)
				h += (double)f1->w[(size_t)j * C + c] * pool[c];
			hid[j] = h > 0 ? (float)h : 0.0f;
		}
		for (int k = 0; k < 2 * C; k++) {
			double z = f2->b[k];
			for (int j = 0; j < S; j++)
				z += (double)f2->w[(size_t)k * S + j] * hid[j];
			gate[k] = k < C ? (float)(1 / (1 + exp(-z))) : (float)z;
		}
		for (int c = 0; c < C; c++) {
			size_t st, o = tr_se_at(v, n, c, &st);
			float g = gate[c], bias = gate[C + c];
			for (int p = 0; p < HW; p++)
				x[o + (size_t)p * st] = g * u[o + (size_t)p * st] + bias;
		}
	}
}

/* dy, the gradient of gate * u + bias, into du, the gradient of u, and
 * the FCs' gradients gw1, gb1, gw2, gb2 (overwritten). du may not be dy. */
static void tr_se_backward(const tr_se_view *v, const float *dy, const float *u, float *du,
			   float *gw1, float *gb1, float *gw2, float *gb2)
{
	int C = v->C, S = v->S, HW = v->HW;
	const nn_fc *f1 = v->f1, *f2 = v->f2;
	float *dz = v->dz, *dhid = v->dhid, *dpool = v->dpool;
	memset(gw1, 0, sizeof(float) * (size_t)S * C);
	memset(gb1, 0, sizeof(float) * (size_t)S);
	memset(gw2, 0, sizeof(float) * (size_t)2 * C * S);
	memset(gb2, 0, sizeof(float) * (size_t)2 * C);
	for (int n = 0; n < v->N; n++) {
		const float *pool = v->pool + (size_t)n * C, *hid = v->hid + (size_t)n * S,
			    *gate = v->gate + (size_t)n * 2 * C;
		for (int c = 0; c < C; c++) {
			size_t st, o = tr_se_at(v, n, c, &st);
			double dg = 0, db = 0;
			for (int p = 0; p < HW; p++) {
				double d = dy[o + (size_t)p * st];
				dg += d * u[o + (size_t)p * st];
				db += d;
			}
			dz[c] = (float)(dg * gate[c] * (1 - gate[c]));
			dz[C + c] = (float)db;
		}
		for (int k = 0; k < 2 * C; k++) {
			gb2[k] += dz[k];
			for (int j = 0; j < S; j++)
				gw2[(size_t)k * S + j] += dz[k] * hid[j];
		}
		for (int j = 0; j < S; j++) {
			double d = 0;
			if (hid[j] > 0)
				for (int k = 0; k < 2 * C; k++)
					d += (double)f2->w[(size_t)k * S + j] * dz[k];
			dhid[j] = (float)d;
			gb1[j] += dhid[j];
			for (int c = 0; c < C; c++)
				gw1[(size_t)j * C + c] += dhid[j] * pool[c];
		}
		for (int c = 0; c < C; c++) {
			double d = 0;
			for (int j = 0; j < S; j++)
				d += (double)f1->w[(size_t)j * C + c] * dhid[j];
			dpool[c] = (float)d;
		}
		/* The mean's gradient: each point's weight in it. */
		const float *pw = v->pw ? v->pw + (size_t)n * HW : NULL;
		for (int c = 0; c < C; c++) {
			size_t st, o = tr_se_at(v, n, c, &st);
			float g = gate[c], dp = dpool[c];
			for (int p = 0; p < HW; p++)
				du[o + (size_t)p * st] = g * dy[o + (size_t)p * st] +
							 dp * (pw ? pw[p] : 1.0f / (float)HW);
		}
	}
}

/* The view of layer L's SE block over the trainer's arrays. */
static tr_se_view tr_se_view_of(const trainer *t, const tr_layer *L)
{
	const nn_arch *a = &t->net->arch;
	const tr_se *e = L->se;
	tr_se_view v = {
		.N = t->batch, .C = a->channels, .S = a->se_channels,
		.HW = a->board_w * a->board_h,
		.layout = t->blocked ? TR_SE_BLOCKED : TR_SE_NHWC, .pw = t->se_pw,
		.f1 = &e->blk->se1, .f2 = &e->blk->se2,
		.pool = e->pool, .hid = e->hid, .gate = e->gate,
		.dz = t->se_dz, .dhid = t->se_dhid, .dpool = t->se_dpool,
	};
	return v;
}

/* SE forward on the layer's BN output, which the BN wrote into se->u:
 * a = gate * u + bias, for all the trainer's positions. */
static void tr_se_fwd(trainer *t, tr_layer *L)
{
	tr_se_view v = tr_se_view_of(t, L);
	tr_se_forward(&v, tr_ptr(L->se->u), tr_ptr(L->a));
}

/* SE backward: gy, the gradient of gate * u + bias (the layer's gradient
 * before its ReLU), into gu, the gradient of u (the BN output), and the
 * SE weights' gradients (overwritten). gu may not be gy. */
static void tr_se_bwd(trainer *t, tr_layer *L, dnnl_memory_t gy, dnnl_memory_t gu)
{
	tr_se_view v = tr_se_view_of(t, L);
	const nn_block *b = L->se->blk;
	tr_se_backward(&v, tr_ptr(gy), tr_ptr(L->se->u), tr_ptr(gu), tr_g(t, b->se1.w),
		       tr_g(t, b->se1.b), tr_g(t, b->se2.w), tr_g(t, b->se2.b));
}

bool trainer_bf16_fast(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	return (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

trainer *trainer_new(const nn_net *net, const train_options *o, char *err, size_t errlen)
{
	trainer *t = NULL;
	const nn_arch *a = &net->arch;
	int N = o->batch, H = a->board_h, W = a->board_w, C = a->channels;
	if (train_options_check(o, err, errlen) < 0)
		return NULL;
	if (net->bn_folded) {
		snprintf(err, errlen, "the net has its batch norms folded (an inference export); "
			 "training needs the unfolded form: start from a checkpoint or a "
			 "training-form model");
		return NULL;
	}
	for (int i = 0; i < a->blocks; i++)
		if (a->block_kind[i] != NN_BLOCK_PLAIN && a->block_kind[i] != NN_BLOCK_SE) {
			snprintf(err, errlen, "the CPU trainer does not train block kind %d (block %d)",
				 a->block_kind[i], i);
			return NULL;
		}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto oom;
	t->opt = *o;
	t->batch = N;
	t->rng = o->seed;
	t->net = nn_net_clone(net);
	if (!t->net)
		goto oom;
	nn_net *n = t->net;
	/* Four floats past the gradient carry the loss terms through the same
	 * all-reduce in a data-parallel step. */
	t->grad = calloc(n->n_floats + TR_GRAD_EXTRA, sizeof(float));
	{
		int widest = C > a->policy_channels ? C : a->policy_channels;
		widest = widest > a->value_channels ? widest : a->value_channels;
		t->bn_sync = calloc(3 * (size_t)widest, sizeof(float));
	}
	t->role = malloc(n->n_floats);
	t->n_mom = o->optimizer == TRAIN_OPTIMIZER_ADAMW ? 2 : 1;
	for (int k = 0; k < t->n_mom; k++)
		if (!(t->mom[k] = calloc(n->n_floats, sizeof(float))))
			goto oom;
	t->n_layer = 2 * a->blocks + 3;
	t->layer = calloc((size_t)t->n_layer, sizeof(*t->layer));
	if (!t->grad || !t->role || !t->layer || !t->bn_sync)
		goto oom;
	if (tr_ctx_init(&t->c, o->threads, err, errlen) < 0)
		goto fail;
	tr_ctx *c = &t->c;
	int pc = a->policy_channels, vc = a->value_channels, hw = H * W;
	/* A blocked layout pads channels to 16, which the squeeze-excitation
	 * loops over tower activations would walk over: blocked only for
	 * widths without padding. The head convs write the same layout (padded there, which
	 * only oneDNN primitives touch) since a blocked source with another
	 * destination layout has no fast kernel. */
	if (o->layout == TRAIN_LAYOUT_BLOCKED && C % 16) {
		snprintf(err, errlen, "the blocked layout needs a width that is a multiple of 16, "
			 "not %d; use the NHWC or auto layout", C);
		goto fail;
	}
	/* nChw16c is AVX-512's block: without AVX-512 oneDNN 2.6 has no
	 * kernel for its backward convolutions and runs the reference code
	 * (measured on an AVX2 machine, 4x48 Connect Four: 0.6 samples/s
	 * blocked, about 850 in NHWC), so auto takes it only with AVX-512. */
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	bool avx512 = (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
	/* bf16 convolutions run on AMX tiles in NHWC; in nChw16c oneDNN 2.6
	 * takes its AVX-512 BF16 kernels, slower than fp32's (4x48, 9x9,
	 * batch 256, one core of an AMX Xeon: 7.0 / 6.6 / 9.7 ms for forward,
	 * backward data and weights, against 0.8 / 1.0 / 1.9 in NHWC and 4.6
	 * / 4.5 / 4.5 in fp32). */
	int bf16 = o->precision == NN_DTYPE_BF16;
	if (bf16 && (isa & dnnl_cpu_isa_avx512_core_bf16) != dnnl_cpu_isa_avx512_core_bf16) {
		snprintf(err, errlen, "bf16 training needs a CPU with AVX-512 BF16 or AMX; this "
			 "one has neither (or ONEDNN_MAX_CPU_ISA hides them): train in fp32");
		goto fail;
	}
	if (bf16 && o->layout == TRAIN_LAYOUT_BLOCKED) {
		snprintf(err, errlen, "bf16 training uses the NHWC layout, not the blocked one");
		goto fail;
	}
	if (bf16 && o->algo == NN_CONV_WINOGRAD) {
		snprintf(err, errlen, "bf16 training has direct convolutions only (oneDNN 2.6 "
			 "has no bf16 Winograd)");
		goto fail;
	}
	int blocked = o->layout == TRAIN_LAYOUT_BLOCKED ||
		      (o->layout == TRAIN_LAYOUT_AUTO && C % 16 == 0 && avx512 && !bf16);
	dnnl_format_tag_t tl = blocked ? dnnl_nChw16c : dnnl_nhwc;
	t->blocked = blocked;
	/* The input conv reads the planes in the layout it likes best (NCHW
	 * for very few planes, else blocked); they are reordered in. "any"
	 * with an NHWC destination picks NCHW and oneDNN's reference code,
	 * so NHWC it is there. */
	dnnl_format_tag_t in_tag = blocked ? dnnl_format_tag_any : dnnl_nhwc;
	/* The tower's 3x3 convs (most of the work) in Winograd's algorithm
	 * where oneDNN has it: 6x64 19x19 at batch 64 on 2 AVX-512 cores,
	 * 302 samples/s against 185 direct. Auto keeps narrow towers direct:
	 * at 16 channels Winograd was 10-20% slower (9x9, batch 256), at 32
	 * and 48 level, at 64 faster on every board. The input conv's width
	 * rarely suits it; it stays direct. */
	t->winograd = !bf16 &&
		      (o->algo == NN_CONV_WINOGRAD || (o->algo == NN_CONV_AUTO && C >= 32)) &&
		      a->blocks && tr_conv_has_winograd(c, N, C, C, H, W, tl, tl, 1);
	dnnl_alg_kind_t tower_alg = t->winograd ? dnnl_convolution_winograd : dnnl_convolution_direct;
	/* In bf16 the tower's convs alone (most of the work); the input conv
	 * and the heads' 1x1 convs stay fp32. */
	if (tr_conv_prims_make(c, &t->cp_in, N, a->in_planes, C, 3, H, W, in_tag, tl, 0,
			       dnnl_convolution_direct, 0, err, errlen) < 0 ||
	    (a->blocks && tr_conv_prims_make(c, &t->cp_tower, N, C, C, 3, H, W, tl, tl, 1,
					     tower_alg, bf16, err, errlen) < 0) ||
	    tr_conv_prims_make(c, &t->cp_pol, N, C, pc, 1, H, W, tl, tl, 1,
			       dnnl_convolution_direct, 0, err, errlen) < 0 ||
	    tr_conv_prims_make(c, &t->cp_val, N, C, vc, 1, H, W, tl, tl, 1,
			       dnnl_convolution_direct, 0, err, errlen) < 0 ||
	    tr_bn_prims_make(c, &t->bp_tower, &t->cp_in.dst, C, err, errlen) < 0 ||
	    tr_bn_prims_make(c, &t->bp_pol, &t->cp_pol.dst, pc, err, errlen) < 0 ||
	    tr_bn_prims_make(c, &t->bp_val, &t->cp_val.dst, vc, err, errlen) < 0 ||
	    tr_relu_prims_make(c, &t->rp_tower, &t->cp_in.dst, err, errlen) < 0 ||
	    tr_relu_prims_make(c, &t->rp_pol, &t->cp_pol.dst, err, errlen) < 0 ||
	    tr_relu_prims_make(c, &t->rp_val, &t->cp_val.dst, err, errlen) < 0 ||
	    tr_ip_prims_make(c, &t->ip_pol, N, pc * hw, a->policy_outputs, pc, H, W, err, errlen) < 0 ||
	    tr_ip_prims_make(c, &t->ip_v1, N, vc * hw, a->value_hidden, vc, H, W, err, errlen) < 0 ||
	    tr_ip_prims_make(c, &t->ip_v2, N, a->value_hidden, a->value_outputs, 0, 1, 1, err,
			     errlen) < 0 ||
	    tr_relu_prims_make(c, &t->rp_hid, &t->ip_v1.dst, err, errlen) < 0)
		goto fail;
	if (tr_layer_bind(t, &t->layer[0], &n->input, &t->cp_in, &t->bp_tower, &t->rp_tower, 0, err,
			  errlen) < 0)
		goto fail;
	for (int i = 0; i < a->blocks; i++)
		if (tr_layer_bind(t, &t->layer[1 + 2 * i], &n->block[i].conv1, &t->cp_tower,
				  &t->bp_tower, &t->rp_tower, 0, err, errlen) < 0 ||
		    tr_layer_bind(t, &t->layer[2 + 2 * i], &n->block[i].conv2, &t->cp_tower,
				  &t->bp_tower, &t->rp_tower, 1, err, errlen) < 0)
			goto fail;
	if (tr_layer_bind(t, &t->layer[t->n_layer - 2], &n->policy_conv, &t->cp_pol, &t->bp_pol,
			  &t->rp_pol, 0, err, errlen) < 0 ||
	    tr_layer_bind(t, &t->layer[t->n_layer - 1], &n->value_conv, &t->cp_val, &t->bp_val,
			  &t->rp_val, 0, err, errlen) < 0 ||
	    tr_add_make(c, &t->add_relu, &t->cp_in.dst, 1, err, errlen) < 0 ||
	    tr_add_make(c, &t->add, &t->cp_in.dst, 0, err, errlen) < 0 ||
	    tr_fc_bind(t, &t->fc_pol, &n->policy_fc, &t->ip_pol, err, errlen) < 0 ||
	    tr_fc_bind(t, &t->fc_v1, &n->value_fc1, &t->ip_v1, err, errlen) < 0 ||
	    tr_fc_bind(t, &t->fc_v2, &n->value_fc2, &t->ip_v2, err, errlen) < 0 ||
	    tr_buf(c, &t->cp_in.src, &t->in, err, errlen) < 0)
		goto fail;
	if (tr_se_make(t, err, errlen) < 0)
		goto fail;
	if (a->ownership && !(t->own_dz = calloc((size_t)N * H * W, sizeof(float))))
		goto oom;
	if (a->score && !(t->score_dy = calloc((size_t)N, sizeof(float))))
		goto oom;
	if (a->opp_policy &&
	    (tr_fc_bind(t, &t->fc_opp, &n->opp_fc, &t->ip_pol, err, errlen) < 0 ||
	     tr_buf(c, &t->ip_pol.dst, &t->dopp, err, errlen) < 0 ||
	     tr_buf(c, &t->ip_pol.src, &t->gopp, err, errlen) < 0))
		goto fail;
	t->in_user = t->in;
	dnnl_memory_desc_t umd;
	dnnl_dims_t ud = { N, a->in_planes, H, W };
	if (dnnl_memory_desc_init_by_tag(&umd, 4, ud, dnnl_f32, dnnl_nchw) != dnnl_success) {
		snprintf(err, errlen, "bad input shape %dx%dx%dx%d", N, a->in_planes, H, W);
		goto fail;
	}
	if (!dnnl_memory_desc_equal(&umd, &t->cp_in.src)) {
		if (tr_buf(c, &umd, &t->in_user, err, errlen) < 0 ||
		    tr_reorder_make(c, &umd, &t->cp_in.src, &t->in_reorder, err, errlen) < 0)
			goto fail;
	}
	const tr_ip_prims *hip[2] = { &t->ip_pol, &t->ip_v1 };
	const tr_conv_prims *hcp[2] = { &t->cp_pol, &t->cp_val };
	for (int h = 0; h < 2; h++) {
		if (dnnl_memory_desc_equal(&hcp[h]->dst, &hip[h]->src)) {
			t->head_plain[h] = t->layer[t->n_layer - 2 + h].a;
			continue;
		}
		if (tr_buf(c, &hip[h]->src, &t->head_plain[h], err, errlen) < 0 ||
		    tr_buf(c, &hip[h]->src, &t->head_gplain[h], err, errlen) < 0 ||
		    tr_reorder_make(c, &hcp[h]->dst, &hip[h]->src, &t->head_to_plain[h], err,
				    errlen) < 0 ||
		    tr_reorder_make(c, &hip[h]->src, &hcp[h]->dst, &t->head_from_plain[h], err,
				    errlen) < 0)
			goto fail;
	}
	for (int i = 0; i < 4; i++)
		if (tr_buf(c, &t->cp_in.dst, &t->g[i], err, errlen) < 0)
			goto fail;
	if (a->blocks && bf16 && tr_buf(c, &t->cp_tower.dst_lp, &t->lp_g, err, errlen) < 0)
		goto fail;
	for (int i = 0; i < 3; i++)
		if (tr_buf(c, &t->cp_pol.dst, &t->gp[i], err, errlen) < 0 ||
		    tr_buf(c, &t->cp_val.dst, &t->gv[i], err, errlen) < 0)
			goto fail;
	if (tr_buf(c, &t->ip_pol.dst, &t->dlogits, err, errlen) < 0 ||
	    tr_buf(c, &t->ip_v1.dst, &t->dvh, err, errlen) < 0 ||
	    tr_buf(c, &t->ip_v1.dst, &t->dvh2, err, errlen) < 0 ||
	    tr_buf(c, &t->ip_v2.dst, &t->dvout, err, errlen) < 0 || tr_ctx_finish(c, err, errlen) < 0)
		goto fail;
	tr_roles(t);
	return t;
oom:
	snprintf(err, errlen, "out of memory for a trainer");
fail:
	trainer_free(t);
	return NULL;
}

void trainer_free(trainer *t)
{
	if (!t)
		return;
	tr_ctx_free(&t->c);
	nn_net_free(t->net);
	free(t->grad);
	free(t->bn_sync);
	free(t->bn_acc);
	free(t->role);
	free(t->mom[0]);
	free(t->mom[1]);
	free(t->layer);
	free(t->own_dz);
	free(t->score_dy);
	free(t->se);
	free(t->se_buf);
	free(t);
}

static int tr_sync(const trainer *t)
{
	return t->comm && comm_size(t->comm) > 1;
}

/* Replaces L's batch statistics (mean, biased variance) of the local
 * share by those of the global batch: shares are equal, so the global mean
 * is the mean of the means and the variance the mean of (var + mean^2)
 * less mean^2, the last difference taken in double. */
static int tr_bn_sync_stats(trainer *t, tr_layer *L)
{
	int C = L->conv->c_out;
	float *mean = tr_ptr(L->mean), *var = tr_ptr(L->var), *s = t->bn_sync;
	memcpy(s, mean, sizeof(float) * (size_t)C);
	if (comm_allreduce(t->comm, s, (size_t)C, COMM_OP_AVG) != 0)
		goto fail;
	for (int c = 0; c < C; c++) {
		float d = mean[c] - s[c];
		s[C + c] = var[c] + d * d;
	}
	if (comm_allreduce(t->comm, s + C, (size_t)C, COMM_OP_AVG) != 0)
		goto fail;
	memcpy(mean, s, sizeof(float) * (size_t)C);
	memcpy(var, s + C, sizeof(float) * (size_t)C);
	return 0;
fail:
	snprintf(t->err, sizeof(t->err), "batch-norm statistics: %s", comm_error(t->comm));
	return -1;
}

/* After oneDNN's BN backward on the local share (global statistics,
 * local sums): replaces the local dgamma/dbeta in the input gradient gc by
 * the means over ranks, dx += gamma istd / M ((dbeta - mean dbeta) +
 * xhat (dgamma - mean dgamma)), M the local count. The parameter
 * gradients stay local sums; the step's all-reduce averages them. */
static int tr_bn_sync_grad(trainer *t, tr_layer *L, dnnl_memory_t gc)
{
	const nn_arch *a = &t->net->arch;
	int C = L->conv->c_out, HW = a->board_w * a->board_h, N = t->batch;
	const float *dg = tr_ptr(L->dgamma), *db = tr_ptr(L->dbeta), *gamma = L->conv->bn_gamma;
	const float *mean = tr_ptr(L->mean), *var = tr_ptr(L->var), *z = tr_ptr(L->z);
	float *s = t->bn_sync, *g = tr_ptr(gc);
	memcpy(s, dg, sizeof(float) * (size_t)C);
	memcpy(s + C, db, sizeof(float) * (size_t)C);
	if (comm_allreduce(t->comm, s, 2 * (size_t)C, COMM_OP_AVG) != 0) {
		snprintf(t->err, sizeof(t->err), "batch-norm gradients: %s", comm_error(t->comm));
		return -1;
	}
	/* s[c]: the constant term, s[C + c]: the factor of (z - mean). */
	for (int c = 0; c < C; c++) {
		float istd = 1.0f / sqrtf(var[c] + NN_BN_EPS);
		float k = gamma[c] * istd / (float)((size_t)N * HW);
		float dgm = s[c], dbm = s[C + c];
		s[c] = k * (db[c] - dbm);
		s[C + c] = k * istd * (dg[c] - dgm);
	}
	if (t->blocked) {
		int cb_n = (C + 15) / 16;
		assert(tr_floats(gc) == (size_t)N * cb_n * 16 * HW);
		size_t i = 0;
		for (int n = 0; n < N; n++)
			for (int cb = 0; cb < cb_n; cb++)
				for (int p = 0; p < HW; p++)
					for (int k = 0; k < 16; k++, i++) {
						int c = cb * 16 + k;
						if (c < C)
							g[i] += s[c] + s[C + c] * (z[i] - mean[c]);
					}
	} else {
		size_t e = (size_t)N * HW * C;
		assert(tr_floats(gc) == e);
		for (size_t i = 0; i < e; i++) {
			int c = (int)(i % (size_t)C);
			g[i] += s[c] + s[C + c] * (z[i] - mean[c]);
		}
	}
	return 0;
}

/* Forward of one conv layer from src; skip (may be NULL) is added before
 * the ReLU. */
static int tr_layer_fwd(trainer *t, tr_layer *L, dnnl_memory_t src, dnnl_memory_t skip,
			int training)
{
	tr_ctx *c = &t->c;
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	/* An SE layer's BN writes the gate's input, kept for the backward. */
	dnnl_memory_t bn = L->se ? L->se->u : L->a;
	dnnl_memory_t in = src;
	/* BN and ReLU as one pass where the ReLU follows the BN (no skip, no
	 * SE); not when ranks share the statistics, since the output is made
	 * again with the global ones and the mask would be the local one's. */
	int fuse = training && L->ws && !skip && !L->se && !tr_sync(t);
	L->fused = fuse;
	if (L->cp->bf16) {
		RUN(&L->cp->src_to_lp, { DNNL_ARG_FROM, src }, { DNNL_ARG_TO, L->lp });
		in = L->lp;
	}
	RUN(&L->cp->fwd, { DNNL_ARG_SRC, in }, { DNNL_ARG_WEIGHTS, L->w.w_fwd },
	    { DNNL_ARG_BIAS, L->w.b }, { DNNL_ARG_DST, L->z });
	if (fuse) {
		RUN(&L->bp->fwd_relu, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_DST, bn },
		    { DNNL_ARG_MEAN, L->mean }, { DNNL_ARG_VARIANCE, L->var },
		    { DNNL_ARG_SCALE, L->gamma }, { DNNL_ARG_SHIFT, L->beta },
		    { DNNL_ARG_WORKSPACE, L->ws });
		return 0;
	}
	if (training) {
		RUN(&L->bp->fwd, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_DST, bn },
		    { DNNL_ARG_MEAN, L->mean }, { DNNL_ARG_VARIANCE, L->var },
		    { DNNL_ARG_SCALE, L->gamma }, { DNNL_ARG_SHIFT, L->beta });
		if (tr_sync(t)) {
			DNNL_CHECK(dnnl_stream_wait(c->stream));
			if (tr_bn_sync_stats(t, L) < 0)
				return -1;
			RUN(&L->bp->inf, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_DST, bn },
			    { DNNL_ARG_MEAN, L->mean }, { DNNL_ARG_VARIANCE, L->var },
			    { DNNL_ARG_SCALE, L->gamma }, { DNNL_ARG_SHIFT, L->beta });
		}
	} else
		RUN(&L->bp->inf, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_DST, bn },
		    { DNNL_ARG_MEAN, L->rmean }, { DNNL_ARG_VARIANCE, L->rvar },
		    { DNNL_ARG_SCALE, L->gamma }, { DNNL_ARG_SHIFT, L->beta });
	if (L->se) {
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		tr_se_fwd(t, L);
	}
	if (skip)
		RUN(&t->add_relu, { DNNL_ARG_SRC_0, L->a }, { DNNL_ARG_SRC_1, skip },
		    { DNNL_ARG_DST, L->a });
	else
		RUN(&L->rp->fwd, { DNNL_ARG_SRC, L->a }, { DNNL_ARG_DST, L->a });
out:
	return rc;
}

/* Backward of one conv layer: ga is the gradient of its output; gb and gc
 * are clobbered (gb ends holding the gradient before the ReLU, which a
 * residual skip needs, except after a fused BN + ReLU, which has no skip
 * and leaves gb alone); the input gradient goes to gout when not NULL. */
static int tr_layer_bwd(trainer *t, tr_layer *L, dnnl_memory_t src, dnnl_memory_t ga,
			dnnl_memory_t gb, dnnl_memory_t gc, dnnl_memory_t gout)
{
	tr_ctx *c = &t->c;
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	if (L->fused) {
		/* The ReLU's backward is the BN's mask: gb is not written (no
		 * skip reads it). */
		RUN(&L->bp->bwd_relu, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_MEAN, L->mean },
		    { DNNL_ARG_VARIANCE, L->var }, { DNNL_ARG_SCALE, L->gamma },
		    { DNNL_ARG_SHIFT, L->beta }, { DNNL_ARG_WORKSPACE, L->ws },
		    { DNNL_ARG_DIFF_DST, ga }, { DNNL_ARG_DIFF_SRC, gc },
		    { DNNL_ARG_DIFF_SCALE, L->dgamma }, { DNNL_ARG_DIFF_SHIFT, L->dbeta });
	} else {
		RUN(&L->rp->bwd, { DNNL_ARG_DST, L->a }, { DNNL_ARG_DIFF_DST, ga },
		    { DNNL_ARG_DIFF_SRC, gb });
		/* An SE layer's BN gets the gradient through the gate, in ga
		 * (whose contents are spent); gb stays the skip's. */
		dnnl_memory_t gbn = gb;
		if (L->se) {
			DNNL_CHECK(dnnl_stream_wait(c->stream));
			tr_se_bwd(t, L, gb, ga);
			gbn = ga;
		}
		RUN(&L->bp->bwd, { DNNL_ARG_SRC, L->z }, { DNNL_ARG_MEAN, L->mean },
		    { DNNL_ARG_VARIANCE, L->var }, { DNNL_ARG_SCALE, L->gamma },
		    { DNNL_ARG_SHIFT, L->beta }, { DNNL_ARG_DIFF_DST, gbn }, { DNNL_ARG_DIFF_SRC, gc },
		    { DNNL_ARG_DIFF_SCALE, L->dgamma }, { DNNL_ARG_DIFF_SHIFT, L->dbeta });
	}
	if (tr_sync(t)) {
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		if (tr_bn_sync_grad(t, L, gc) < 0)
			return -1;
	}
	/* bf16: the source as the forward rounded it. */
	dnnl_memory_t x = src, gy = gc;
	if (L->cp->bf16) {
		RUN(&L->cp->dst_to_lp, { DNNL_ARG_FROM, gc }, { DNNL_ARG_TO, t->lp_g });
		x = L->lp;
		gy = t->lp_g;
	}
	RUN(&L->cp->bwd_w, { DNNL_ARG_SRC, x }, { DNNL_ARG_DIFF_DST, gy },
	    { DNNL_ARG_DIFF_WEIGHTS, L->w.dw }, { DNNL_ARG_DIFF_BIAS, L->w.db });
	if (L->cp->from_dw.prim)
		RUN(&L->cp->from_dw, { DNNL_ARG_FROM, L->w.dw }, { DNNL_ARG_TO, L->w.dw_user });
	if (gout)
		RUN(&L->cp->bwd_d, { DNNL_ARG_DIFF_DST, gy }, { DNNL_ARG_WEIGHTS, L->w.w_bwd },
		    { DNNL_ARG_DIFF_SRC, gout });
out:
	return rc;
}

/* Backward of an inner product: weight gradients, and the input gradient
 * into gx. */
static int tr_fc_bwd(trainer *t, const tr_fc *F, dnnl_memory_t x, dnnl_memory_t gy,
		     dnnl_memory_t gx)
{
	tr_ctx *c = &t->c;
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	RUN(&F->ip->bwd_w, { DNNL_ARG_SRC, x }, { DNNL_ARG_DIFF_DST, gy },
	    { DNNL_ARG_DIFF_WEIGHTS, F->dw }, { DNNL_ARG_DIFF_BIAS, F->db });
	RUN(&F->ip->bwd_d, { DNNL_ARG_DIFF_DST, gy }, { DNNL_ARG_WEIGHTS, F->w },
	    { DNNL_ARG_DIFF_SRC, gx });
out:
	return rc;
}

static void tr_add(dnnl_memory_t dst, dnnl_memory_t src)
{
	float *d = tr_ptr(dst);
	const float *s = tr_ptr(src);
	size_t n = tr_floats(dst);
	for (size_t i = 0; i < n; i++)
		d[i] += s[i];
}

/* The ownership head on the value conv's output (NCHW in head_plain[1]):
 * per point z = b + w . v, the loss of tanh(z) against the targets (see
 * trainer.h), mean over the points and the nb positions; with grad, the
 * logits' gradient (weighted) into own_dz and the head's weight and bias
 * gradients into t->grad. */
static double tr_own_loss(trainer *t, const train_batch *b, int nb, int grad)
{
	const nn_net *n = t->net;
	int vc = n->arch.value_channels, np = b->n_points;
	const float *x = tr_ptr(t->head_plain[1]), *w = n->own_fc.w;
	float *gw = tr_g(t, n->own_fc.w), *gb = tr_g(t, n->own_fc.b);
	double total = 0, scale = t->opt.own_weight / ((double)np * nb);
	if (grad) {
		memset(gw, 0, sizeof(float) * (size_t)vc);
		gb[0] = 0;
	}
	for (int i = 0; i < nb; i++) {
		const float *xi = x + (size_t)i * vc * np, *ti = b->own + (size_t)i * np;
		float *dz = t->own_dz + (size_t)i * np;
		double wi = b->own_w[i];
		for (int p = 0; p < np; p++) {
			double z = n->own_fc.b[0];
			for (int c = 0; c < vc; c++)
				z += (double)w[c] * xi[(size_t)c * np + p];
			/* -[a log q + (1 - a) log(1 - q)], q = (1 + tanh z) / 2 =
			 * sigmoid(2z), a = (1 + t) / 2: softplus(2z) - 2 a z. */
			double a = (1 + ti[p]) / 2, u = 2 * z;
			double sp = u > 0 ? u + log1p(exp(-u)) : log1p(exp(u));
			total += wi * (sp - a * u);
			dz[p] = (float)(grad ? wi * scale * (tanh(z) - ti[p]) : 0);
		}
		if (grad)
			for (int p = 0; p < np; p++) {
				for (int c = 0; c < vc; c++)
					gw[c] += dz[p] * xi[(size_t)c * np + p];
				gb[0] += dz[p];
			}
	}
	return total / ((double)np * nb);
}

/* Adds the ownership head's gradient (own_dz through its weights) to the
 * value conv's output gradient vg (NCHW, as head_plain[1]). */
static void tr_own_backward(trainer *t, int nb, dnnl_memory_t vg)
{
	const nn_net *n = t->net;
	int vc = n->arch.value_channels, np = n->arch.board_w * n->arch.board_h;
	float *g = tr_ptr(vg);
	for (int i = 0; i < nb; i++)
		for (int c = 0; c < vc; c++) {
			float wc = n->own_fc.w[c];
			float *gi = g + ((size_t)i * vc + c) * np;
			const float *dz = t->own_dz + (size_t)i * np;
			for (int p = 0; p < np; p++)
				gi[p] += wc * dz[p];
		}
}

/* The score head on the value head's hidden layer (fc_v1.y, after its
 * ReLU): s = b + w . h, the loss (s - target)^2 over the nb positions
 * (those without a target counting 0); with grad, the output's gradient
 * (weighted) into score_dy and the head's weight and bias gradients into
 * t->grad. */
static double tr_score_loss(trainer *t, const train_batch *b, int nb, int grad)
{
	const nn_net *n = t->net;
	int hid = n->arch.value_hidden;
	const float *h = tr_ptr(t->fc_v1.y), *w = n->score_fc.w;
	float *gw = tr_g(t, n->score_fc.w), *gb = tr_g(t, n->score_fc.b);
	double total = 0;
	if (grad) {
		memset(gw, 0, sizeof(float) * (size_t)hid);
		gb[0] = 0;
	}
	for (int i = 0; i < nb; i++) {
		const float *hi = h + (size_t)i * hid;
		double s = n->score_fc.b[0];
		for (int j = 0; j < hid; j++)
			s += (double)w[j] * hi[j];
		double e = s - b->score[i], wi = b->score_w[i];
		total += wi * e * e;
		if (!grad)
			continue;
		float dy = (float)(2 * t->opt.score_weight * wi * e / nb);
		t->score_dy[i] = dy;
		for (int j = 0; j < hid; j++)
			gw[j] += dy * hi[j];
		gb[0] += dy;
	}
	return total / nb;
}

/* Adds the score head's gradient to the value hidden layer's (dvh, after
 * the ReLU, before its backward). */
static void tr_score_backward(trainer *t, int nb)
{
	const nn_net *n = t->net;
	int hid = n->arch.value_hidden;
	float *g = tr_ptr(t->dvh);
	for (int i = 0; i < nb; i++)
		for (int j = 0; j < hid; j++)
			g[(size_t)i * hid + j] += t->score_dy[i] * n->score_fc.w[j];
}

/* Forward (training or inference BN), loss over the first n positions,
 * and, when grad is set, the backward pass into t->grad (L2 included for
 * SGD). */
static int tr_pass(trainer *t, const train_batch *b, int training, int grad, train_stats *st)
{
	tr_ctx *c = &t->c;
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	nn_net *n = t->net;
	const nn_arch *a = &n->arch;
	int nb = b->n, B = a->blocks, L = t->n_layer;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	assert(b->in_size == (int)in_n && b->n_actions == a->policy_outputs);
	assert(nb >= 1 && nb <= t->batch);
	tr_apply_threads(c);
	float *in = tr_ptr(t->in_user);
	memcpy(in, b->planes, sizeof(float) * in_n * (size_t)nb);
	/* Padding positions (eval only) must not be garbage: zeros. */
	memset(in + in_n * (size_t)nb, 0, sizeof(float) * in_n * (size_t)(t->batch - nb));
	if (t->se_pw) {
		int hw = a->board_w * a->board_h;
		for (int k = 0; k < t->batch; k++)
			nn_board_pool_weights(a->encoding, in + in_n * (size_t)k, hw,
					      t->se_pw + (size_t)k * hw);
	}
	if (t->in_reorder.prim)
		RUN(&t->in_reorder, { DNNL_ARG_FROM, t->in_user }, { DNNL_ARG_TO, t->in });
	for (int l = 0; l < L; l++)
		if (tr_convw_prep(c, t->layer[l].cp, &t->layer[l].w, err, errlen) < 0)
			return -1;
	/* Tower. */
	if (tr_layer_fwd(t, &t->layer[0], t->in, NULL, training) < 0)
		return -1;
	for (int i = 0; i < B; i++)
		if (tr_layer_fwd(t, &t->layer[1 + 2 * i], t->layer[2 * i].a, NULL, training) < 0 ||
		    tr_layer_fwd(t, &t->layer[2 + 2 * i], t->layer[1 + 2 * i].a, t->layer[2 * i].a,
				 training) < 0)
			return -1;
	dnnl_memory_t top = t->layer[2 * B].a;
	tr_layer *Lp = &t->layer[L - 2], *Lv = &t->layer[L - 1];
	/* Heads. */
	if (tr_layer_fwd(t, Lp, top, NULL, training) < 0 ||
	    tr_layer_fwd(t, Lv, top, NULL, training) < 0)
		return -1;
	for (int h = 0; h < 2; h++)
		if (t->head_to_plain[h].prim)
			RUN(&t->head_to_plain[h], { DNNL_ARG_FROM, t->layer[L - 2 + h].a },
			    { DNNL_ARG_TO, t->head_plain[h] });
	RUN(&t->ip_pol.fwd, { DNNL_ARG_SRC, t->head_plain[0] }, { DNNL_ARG_WEIGHTS, t->fc_pol.w },
	    { DNNL_ARG_BIAS, t->fc_pol.b }, { DNNL_ARG_DST, t->fc_pol.y });
	if (t->fc_opp.ip)
		RUN(&t->ip_pol.fwd, { DNNL_ARG_SRC, t->head_plain[0] },
		    { DNNL_ARG_WEIGHTS, t->fc_opp.w }, { DNNL_ARG_BIAS, t->fc_opp.b },
		    { DNNL_ARG_DST, t->fc_opp.y });
	RUN(&t->ip_v1.fwd, { DNNL_ARG_SRC, t->head_plain[1] }, { DNNL_ARG_WEIGHTS, t->fc_v1.w },
	    { DNNL_ARG_BIAS, t->fc_v1.b }, { DNNL_ARG_DST, t->fc_v1.y });
	RUN(&t->rp_hid.fwd, { DNNL_ARG_SRC, t->fc_v1.y }, { DNNL_ARG_DST, t->fc_v1.y });
	RUN(&t->ip_v2.fwd, { DNNL_ARG_SRC, t->fc_v1.y }, { DNNL_ARG_WEIGHTS, t->fc_v2.w },
	    { DNNL_ARG_BIAS, t->fc_v2.b }, { DNNL_ARG_DST, t->fc_v2.y });
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	/* Loss. */
	float *dlog = grad ? tr_ptr(t->dlogits) : NULL, *dv = grad ? tr_ptr(t->dvout) : NULL;
	double pl = train_loss_policy(nb, a->policy_outputs, tr_ptr(t->fc_pol.y), b->policy, dlog);
	double vl = train_loss_value(nb, a->value_outputs, tr_ptr(t->fc_v2.y), b->value, b->wdl, dv);
	double ol = 0;
	if (t->fc_opp.ip) {
		if (!b->opp) {
			snprintf(err, errlen, "the net has an opponent-reply head and the batch no "
				 "targets for it");
			return -1;
		}
		float *dop = grad ? tr_ptr(t->dopp) : NULL;
		ol = train_loss_policy(nb, a->policy_outputs, tr_ptr(t->fc_opp.y), b->opp, dop);
		if (dop) {
			float w = (float)t->opt.opp_weight;
			for (int i = 0; i < nb * a->policy_outputs; i++)
				dop[i] *= w;
		}
	}
	double l2 = 0;
	for (size_t i = 0; i < n->n_floats; i++)
		if (t->role[i] == TR_ROLE_DECAY)
			l2 += (double)n->data[i] * n->data[i];
	l2 *= t->opt.weight_decay;
	double wl = 0;
	if (t->own_dz) {
		if (!b->own) {
			snprintf(err, errlen, "the net has an ownership head and the batch no targets "
				 "for it");
			return -1;
		}
		wl = tr_own_loss(t, b, nb, grad);
	}
	double sl = 0;
	if (t->score_dy) {
		if (!b->score) {
			snprintf(err, errlen, "the net has a score head and the batch no targets for it");
			return -1;
		}
		sl = tr_score_loss(t, b, nb, grad);
	}
	if (st) {
		memset(st, 0, sizeof(*st));
		st->loss_scale = 1;
		st->policy_loss = pl;
		st->value_loss = vl;
		st->opp_loss = ol;
		st->own_loss = wl;
		st->score_loss = sl;
		st->l2 = l2;
		st->loss = pl + t->opt.value_weight * vl + t->opt.opp_weight * ol +
			   t->opt.own_weight * wl + t->opt.score_weight * sl +
			   (t->opt.optimizer == TRAIN_OPTIMIZER_SGD ? l2 : 0.0);
		st->step = t->step;
	}
	if (!grad)
		goto out;
	{
		float vw = (float)t->opt.value_weight;
		for (int i = 0; i < nb * a->value_outputs; i++)
			dv[i] *= vw;
	}
	/* Heads backward; the tower-output gradient ends in g[0]. */
	dnnl_memory_t pg = t->head_to_plain[0].prim ? t->head_gplain[0] : t->gp[0];
	dnnl_memory_t vg = t->head_to_plain[1].prim ? t->head_gplain[1] : t->gv[0];
	if (tr_fc_bwd(t, &t->fc_pol, t->head_plain[0], t->dlogits, pg) < 0)
		return -1;
	if (t->fc_opp.ip) {
		if (tr_fc_bwd(t, &t->fc_opp, t->head_plain[0], t->dopp, t->gopp) < 0)
			return -1;
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		tr_add(pg, t->gopp);
	}
	if (t->head_from_plain[0].prim)
		RUN(&t->head_from_plain[0], { DNNL_ARG_FROM, pg }, { DNNL_ARG_TO, t->gp[0] });
	if (tr_layer_bwd(t, Lp, top, t->gp[0], t->gp[1], t->gp[2], t->g[0]) < 0 ||
	    tr_fc_bwd(t, &t->fc_v2, t->fc_v1.y, t->dvout, t->dvh) < 0)
		return -1;
	if (t->score_dy) {
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		tr_score_backward(t, nb);
	}
	RUN(&t->rp_hid.bwd, { DNNL_ARG_DST, t->fc_v1.y }, { DNNL_ARG_DIFF_DST, t->dvh },
	    { DNNL_ARG_DIFF_SRC, t->dvh2 });
	if (tr_fc_bwd(t, &t->fc_v1, t->head_plain[1], t->dvh2, vg) < 0)
		return -1;
	if (t->own_dz) {
		DNNL_CHECK(dnnl_stream_wait(c->stream));
		tr_own_backward(t, nb, vg);
	}
	if (t->head_from_plain[1].prim)
		RUN(&t->head_from_plain[1], { DNNL_ARG_FROM, vg }, { DNNL_ARG_TO, t->gv[0] });
	if (tr_layer_bwd(t, Lv, top, t->gv[0], t->gv[1], t->gv[2], t->g[1]) < 0)
		return -1;
	RUN(&t->add, { DNNL_ARG_SRC_0, t->g[0] }, { DNNL_ARG_SRC_1, t->g[1] },
	    { DNNL_ARG_DST, t->g[0] });
	/* Tower backward, block by block: g[0] holds the gradient of the block
	 * output; g[1] keeps the pre-ReLU gradient for the skip. */
	for (int i = B - 1; i >= 0; i--) {
		tr_layer *l1 = &t->layer[1 + 2 * i], *l2l = &t->layer[2 + 2 * i];
		dnnl_memory_t x0 = t->layer[2 * i].a;
		if (tr_layer_bwd(t, l2l, l1->a, t->g[0], t->g[1], t->g[2], t->g[3]) < 0 ||
		    tr_layer_bwd(t, l1, x0, t->g[3], t->g[0], t->g[2], t->g[0]) < 0)
			return -1;
		RUN(&t->add, { DNNL_ARG_SRC_0, t->g[0] }, { DNNL_ARG_SRC_1, t->g[1] },
		    { DNNL_ARG_DST, t->g[0] });
	}
	if (tr_layer_bwd(t, &t->layer[0], t->in, t->g[0], t->g[1], t->g[2], NULL) < 0)
		return -1;
	DNNL_CHECK(dnnl_stream_wait(c->stream));
	if (t->opt.optimizer == TRAIN_OPTIMIZER_SGD && t->opt.weight_decay > 0) {
		float c2 = (float)(2.0 * t->opt.weight_decay);
		for (size_t i = 0; i < n->n_floats; i++)
			if (t->role[i] == TR_ROLE_DECAY)
				t->grad[i] += c2 * n->data[i];
	}
out:
	return rc;
}

int trainer_gradient(trainer *t, const train_batch *b, train_stats *st)
{
	assert(b->n == t->batch);
	if (tr_pass(t, b, 1, 1, &t->last) < 0)
		return -1;
	if (st)
		*st = t->last;
	return 0;
}

int trainer_eval(trainer *t, const train_batch *b, train_stats *st)
{
	assert(b->n >= 1 && b->n <= t->batch);
	return tr_pass(t, b, 0, 0, st);
}

double trainer_lr_at(const trainer *t, int64_t step)
{
	return train_lr_at(&t->opt, step);
}

double train_lr_at(const train_options *o, int64_t step)
{
	double lr = o->lr;
	if (o->lr_schedule == TRAIN_LR_SCHEDULE_STEP) {
		for (int k = 0; k < o->n_lr_steps; k++)
			if (step >= o->lr_steps[k])
				lr *= o->lr_gamma;
	} else if (o->lr_schedule == TRAIN_LR_SCHEDULE_COSINE) {
		double s = step < o->lr_total_steps ? (double)step : (double)o->lr_total_steps;
		lr = o->lr_min + 0.5 * (o->lr - o->lr_min) * (1.0 + cos(M_PI * s / o->lr_total_steps));
	}
	if (o->warmup_steps > 0 && step < o->warmup_steps)
		lr *= (double)(step + 1) / (double)o->warmup_steps;
	return lr;
}

/* Running statistics, PyTorch's rule (see trainer.h). */
static void tr_update_running(trainer *t)
{
	const nn_arch *a = &t->net->arch;
	int world = t->comm ? comm_size(t->comm) : 1;
	double m = (double)world * t->batch * a->board_w * a->board_h;
	float mo = (float)t->opt.bn_momentum, keep = 1.0f - mo;
	float unbias = (float)(m / (m - 1.0));
	for (int l = 0; l < t->n_layer; l++) {
		nn_conv *cv = t->layer[l].conv;
		const float *mean = tr_ptr(t->layer[l].mean), *var = tr_ptr(t->layer[l].var);
		for (int o = 0; o < cv->c_out; o++) {
			cv->bn_mean[o] = keep * cv->bn_mean[o] + mo * mean[o];
			cv->bn_var[o] = keep * cv->bn_var[o] + mo * var[o] * unbias;
		}
	}
}

/* The optimizer update from gradient g (parallel to the net's data) and
 * the running statistics of the last training pass. */
static void tr_update(trainer *t, const float *g, train_stats *st)
{
	nn_net *n = t->net;
	const train_options *o = &t->opt;
	tr_update_running(t);
	double norm2 = 0;
	for (size_t i = 0; i < n->n_floats; i++)
		norm2 += (double)g[i] * g[i]; /* buffers' entries are 0 */
	double norm = sqrt(norm2);
	float scale = 1.0f;
	if (o->clip_norm > 0 && norm > o->clip_norm)
		scale = (float)(o->clip_norm / norm);
	double lr = trainer_lr_at(t, t->step);
	float flr = (float)lr;
	float *w = n->data;
	if (o->optimizer == TRAIN_OPTIMIZER_SGD) {
		float mu = (float)o->momentum, *buf = t->mom[0];
		for (size_t i = 0; i < n->n_floats; i++) {
			if (t->role[i] == TR_ROLE_BUFFER)
				continue;
			float gi = g[i] * scale;
			buf[i] = mu * buf[i] + gi;
			w[i] -= flr * (gi + mu * buf[i]);
		}
	} else {
		double t1 = (double)(t->step + 1);
		float b1 = (float)o->adam_beta1, b2 = (float)o->adam_beta2, eps = (float)o->adam_eps;
		float bc1 = (float)(1.0 - pow(o->adam_beta1, t1));
		float sbc2 = (float)sqrt(1.0 - pow(o->adam_beta2, t1));
		float decay = (float)(1.0 - lr * o->weight_decay), step = flr / bc1;
		float *m = t->mom[0], *v = t->mom[1];
		for (size_t i = 0; i < n->n_floats; i++) {
			if (t->role[i] == TR_ROLE_BUFFER)
				continue;
			if (t->role[i] == TR_ROLE_DECAY)
				w[i] *= decay;
			float gi = g[i] * scale;
			m[i] = b1 * m[i] + (1.0f - b1) * gi;
			v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
			w[i] -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
		}
	}
	t->step++;
	n->meta.train_step = (uint64_t)t->step;
	if (st) {
		*st = t->last;
		st->grad_norm = norm;
		st->lr = lr;
		st->step = t->step;
	}
}

int trainer_step(trainer *t, const train_batch *b, train_stats *st)
{
	assert(b->n == t->batch);
	double c0 = t->comm ? comm_seconds(t->comm) : 0;
	if (tr_pass(t, b, 1, 1, &t->last) < 0)
		return -1;
	if (tr_sync(t)) {
		/* One all-reduce: the gradient and, past it, the loss terms. */
		float *x = t->grad + t->net->n_floats;
		x[0] = (float)t->last.loss;
		x[1] = (float)t->last.policy_loss;
		x[2] = (float)t->last.value_loss;
		x[3] = (float)t->last.opp_loss;
		x[4] = (float)t->last.own_loss;
		x[5] = (float)t->last.score_loss;
		if (comm_allreduce(t->comm, t->grad, t->net->n_floats + TR_GRAD_EXTRA, COMM_OP_AVG) != 0) {
			snprintf(t->err, sizeof(t->err), "gradient all-reduce: %s", comm_error(t->comm));
			return -1;
		}
		t->last.loss = x[0];
		t->last.policy_loss = x[1];
		t->last.value_loss = x[2];
		t->last.opp_loss = x[3];
		t->last.own_loss = x[4];
		t->last.score_loss = x[5];
	}
	tr_update(t, t->grad, st);
	if (st && t->comm)
		st->comm_seconds = comm_seconds(t->comm) - c0;
	return 0;
}

/* BN channels of every layer together. */
static size_t tr_bn_channels(const trainer *t)
{
	size_t n = 0;
	for (int l = 0; l < t->n_layer; l++)
		n += (size_t)t->layer[l].conv->c_out;
	return n;
}

int trainer_bn_begin(trainer *t)
{
	free(t->bn_acc);
	t->bn_acc = calloc(2 * tr_bn_channels(t), sizeof(double));
	t->bn_acc_n = 0;
	if (!t->bn_acc) {
		snprintf(t->err, sizeof(t->err), "out of memory for the batch-norm statistics");
		return -1;
	}
	return 0;
}

int trainer_bn_add(trainer *t, const train_batch *b)
{
	if (!t->bn_acc || b->n != t->batch) {
		snprintf(t->err, sizeof(t->err), "trainer_bn_add: %s",
			 t->bn_acc ? "a batch must be full" : "trainer_bn_begin first");
		return -1;
	}
	/* A training-mode forward: every layer's batch statistics, each layer
	 * fed by the layers before it normalised with theirs. */
	if (tr_pass(t, b, 1, 0, NULL) < 0)
		return -1;
	size_t C = tr_bn_channels(t), at = 0;
	for (int l = 0; l < t->n_layer; l++) {
		const float *mean = tr_ptr(t->layer[l].mean), *var = tr_ptr(t->layer[l].var);
		for (int c = 0; c < t->layer[l].conv->c_out; c++, at++) {
			t->bn_acc[at] += mean[c];
			t->bn_acc[C + at] += (double)var[c] + (double)mean[c] * mean[c];
		}
	}
	t->bn_acc_n++;
	return 0;
}

int trainer_bn_commit(trainer *t)
{
	if (!t->bn_acc || t->bn_acc_n < 1) {
		snprintf(t->err, sizeof(t->err), "trainer_bn_commit: no batch accumulated");
		return -1;
	}
	const nn_arch *a = &t->net->arch;
	int world = t->comm ? comm_size(t->comm) : 1;
	/* Values per channel over all the batches: the variance's unbiasing. */
	double m = (double)t->bn_acc_n * world * t->batch * a->board_w * a->board_h;
	size_t C = tr_bn_channels(t), at = 0;
	for (int l = 0; l < t->n_layer; l++) {
		nn_conv *cv = t->layer[l].conv;
		for (int c = 0; c < cv->c_out; c++, at++) {
			double mean = t->bn_acc[at] / t->bn_acc_n;
			double var = t->bn_acc[C + at] / t->bn_acc_n - mean * mean;
			cv->bn_mean[c] = (float)mean;
			cv->bn_var[c] = (float)(var > 0 ? var * m / (m - 1) : 0);
		}
	}
	free(t->bn_acc);
	t->bn_acc = NULL;
	t->bn_acc_n = 0;
	return 0;
}

int trainer_apply(trainer *t, const float *grad, train_stats *st)
{
	tr_update(t, grad, st);
	return 0;
}

void trainer_set_comm(trainer *t, comm *c)
{
	t->comm = c;
}

comm *trainer_comm(const trainer *t)
{
	return t->comm;
}

int trainer_broadcast(trainer *t, int root)
{
	nn_net *n = t->net;
	uint64_t state[2] = { (uint64_t)t->step, t->rng };
	if (!t->comm || comm_size(t->comm) == 1)
		return 0;
	if (comm_broadcast(t->comm, n->data, n->n_floats * sizeof(float), root) != 0 ||
	    comm_broadcast(t->comm, t->mom[0], n->n_floats * sizeof(float), root) != 0 ||
	    (t->n_mom > 1 &&
	     comm_broadcast(t->comm, t->mom[1], n->n_floats * sizeof(float), root) != 0) ||
	    comm_broadcast(t->comm, state, sizeof(state), root) != 0 ||
	    comm_broadcast(t->comm, &n->meta, sizeof(n->meta), root) != 0) {
		snprintf(t->err, sizeof(t->err), "broadcasting the learner state: %s",
			 comm_error(t->comm));
		return -1;
	}
	t->step = (int64_t)state[0];
	t->rng = state[1];
	return 0;
}

int trainer_world(const trainer *t)
{
	return t->comm ? comm_size(t->comm) : 1;
}

int trainer_checkpoint_world(const trainer *t)
{
	return t->ckpt_world;
}

void trainer_set_checkpoint_world(trainer *t, int world)
{
	t->ckpt_world = world;
}

const float *trainer_grad(const trainer *t)
{
	return t->grad;
}

nn_net *trainer_net(trainer *t)
{
	return t->net;
}

const train_options *trainer_options(const trainer *t)
{
	return &t->opt;
}

int64_t trainer_steps(const trainer *t)
{
	return t->step;
}

uint64_t trainer_random(trainer *t)
{
	return rng_next(&t->rng);
}

const char *trainer_conv_name(const trainer *t)
{
	return t->winograd ? "winograd" : "direct";
}

const char *trainer_error(const trainer *t)
{
	return t->err;
}

int trainer_n_moments(const trainer *t)
{
	return t->n_mom;
}

float *trainer_moment(trainer *t, int k)
{
	assert(k >= 0 && k < t->n_mom);
	return t->mom[k];
}

uint64_t trainer_rng_state(const trainer *t)
{
	return t->rng;
}

void trainer_restore_state(trainer *t, int64_t step, uint64_t rng)
{
	t->step = step;
	t->rng = rng;
}

/* ---- single layers for tests ------------------------------------------------ */

int train_layer_conv(int n, int cin, int cout, int k, int h, int w, const float *x,
		     const float *wt, const float *b, const float *dy, float *y, float *dx,
		     float *dw, float *db, char *err, size_t errlen)
{
	int rc = -1;
	tr_ctx ctx, *c = &ctx;
	tr_conv_prims p;
	tr_convw m;
	dnnl_memory_t mx, my, mdy, mdx = NULL;
	if (tr_ctx_init(c, 0, err, errlen) < 0)
		goto done;
	if (tr_conv_prims_make(c, &p, n, cin, cout, k, h, w, dnnl_nchw, dnnl_nchw, dx != NULL,
			       dnnl_convolution_direct, 0, err, errlen) < 0 ||
	    tr_convw_bind(c, &p, &m, wt, b, dw, db, err, errlen) < 0 ||
	    tr_ext(c, &p.src, x, &mx, err, errlen) < 0 || tr_ext(c, &p.dst, y, &my, err, errlen) < 0 ||
	    tr_ext(c, &p.dst, dy, &mdy, err, errlen) < 0 ||
	    (dx && tr_ext(c, &p.src, dx, &mdx, err, errlen) < 0) || tr_ctx_finish(c, err, errlen) < 0 ||
	    tr_convw_prep(c, &p, &m, err, errlen) < 0)
		goto done;
	rc = 0;
	RUN(&p.fwd, { DNNL_ARG_SRC, mx }, { DNNL_ARG_WEIGHTS, m.w_fwd }, { DNNL_ARG_BIAS, m.b },
	    { DNNL_ARG_DST, my });
	RUN(&p.bwd_w, { DNNL_ARG_SRC, mx }, { DNNL_ARG_DIFF_DST, mdy },
	    { DNNL_ARG_DIFF_WEIGHTS, m.dw }, { DNNL_ARG_DIFF_BIAS, m.db });
	if (p.from_dw.prim)
		RUN(&p.from_dw, { DNNL_ARG_FROM, m.dw }, { DNNL_ARG_TO, m.dw_user });
	if (dx)
		RUN(&p.bwd_d, { DNNL_ARG_DIFF_DST, mdy }, { DNNL_ARG_WEIGHTS, m.w_bwd },
		    { DNNL_ARG_DIFF_SRC, mdx });
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
done:
	tr_ctx_free(c);
	return rc;
}

int train_layer_bn(int n, int ch, int h, int w, const float *x, const float *gamma,
		   const float *beta, const float *dy, float *y, float *mean, float *var,
		   float *dx, float *dgamma, float *dbeta, char *err, size_t errlen)
{
	int rc = -1;
	tr_ctx ctx, *c = &ctx;
	tr_bn_prims p;
	dnnl_memory_desc_t md;
	dnnl_dims_t dd = { n, ch, h, w };
	dnnl_memory_t mx, my, mdy, mdx, mg, mb, mm, mv, mdg, mdb;
	if (tr_ctx_init(c, 0, err, errlen) < 0)
		goto done;
	if (dnnl_memory_desc_init_by_tag(&md, 4, dd, dnnl_f32, dnnl_nchw) != dnnl_success) {
		snprintf(err, errlen, "bad BN shape");
		goto done;
	}
	if (tr_bn_prims_make(c, &p, &md, ch, err, errlen) < 0 ||
	    tr_ext(c, &md, x, &mx, err, errlen) < 0 || tr_ext(c, &md, y, &my, err, errlen) < 0 ||
	    tr_ext(c, &md, dy, &mdy, err, errlen) < 0 || tr_ext(c, &md, dx, &mdx, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, gamma, &mg, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, beta, &mb, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, mean, &mm, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, var, &mv, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, dgamma, &mdg, err, errlen) < 0 ||
	    tr_ext(c, &p.stat, dbeta, &mdb, err, errlen) < 0 || tr_ctx_finish(c, err, errlen) < 0)
		goto done;
	rc = 0;
	RUN(&p.fwd, { DNNL_ARG_SRC, mx }, { DNNL_ARG_DST, my }, { DNNL_ARG_MEAN, mm },
	    { DNNL_ARG_VARIANCE, mv }, { DNNL_ARG_SCALE, mg }, { DNNL_ARG_SHIFT, mb });
	RUN(&p.bwd, { DNNL_ARG_SRC, mx }, { DNNL_ARG_MEAN, mm }, { DNNL_ARG_VARIANCE, mv },
	    { DNNL_ARG_SCALE, mg }, { DNNL_ARG_SHIFT, mb }, { DNNL_ARG_DIFF_DST, mdy },
	    { DNNL_ARG_DIFF_SRC, mdx }, { DNNL_ARG_DIFF_SCALE, mdg }, { DNNL_ARG_DIFF_SHIFT, mdb });
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
done:
	tr_ctx_free(c);
	return rc;
}

int train_layer_relu(int n, int ch, int h, int w, const float *x, const float *dy, float *y,
		     float *dx, char *err, size_t errlen)
{
	int rc = -1;
	tr_ctx ctx, *c = &ctx;
	tr_relu_prims p;
	dnnl_memory_desc_t md;
	dnnl_dims_t dd = { n, ch, h, w };
	dnnl_memory_t my, mdy, mdx;
	if (tr_ctx_init(c, 0, err, errlen) < 0)
		goto done;
	if (dnnl_memory_desc_init_by_tag(&md, 4, dd, dnnl_f32, dnnl_nchw) != dnnl_success) {
		snprintf(err, errlen, "bad ReLU shape");
		goto done;
	}
	/* The trainer runs ReLU in place: so does this. */
	memcpy(y, x, sizeof(float) * (size_t)n * ch * h * w);
	if (tr_relu_prims_make(c, &p, &md, err, errlen) < 0 ||
	    tr_ext(c, &md, y, &my, err, errlen) < 0 || tr_ext(c, &md, dy, &mdy, err, errlen) < 0 ||
	    tr_ext(c, &md, dx, &mdx, err, errlen) < 0 || tr_ctx_finish(c, err, errlen) < 0)
		goto done;
	rc = 0;
	RUN(&p.fwd, { DNNL_ARG_SRC, my }, { DNNL_ARG_DST, my });
	RUN(&p.bwd, { DNNL_ARG_DST, my }, { DNNL_ARG_DIFF_DST, mdy }, { DNNL_ARG_DIFF_SRC, mdx });
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
done:
	tr_ctx_free(c);
	return rc;
}

int train_layer_se(int n, int c, int s, int h, int w, const float *u, const float *skip,
		   const float *pw, const float *w1, const float *b1, const float *w2,
		   const float *b2, const float *dy, float *y, float *du, float *dskip,
		   float *dw1, float *db1, float *dw2, float *db2, char *err, size_t errlen)
{
	size_t act = (size_t)n * c * h * w, N = (size_t)n, C = (size_t)c, S = (size_t)s;
	float *buf = malloc(sizeof(float) * (N * (3 * C + S) + 3 * C + S));
	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The FCs are only read: nn_fc's pointers are not const. */
	nn_fc f1 = { .n_in = c, .n_out = s, .w = (float *)w1, .b = (float *)b1 };
	nn_fc f2 = { .n_in = s, .n_out = 2 * c, .w = (float *)w2, .b = (float *)b2 };
	tr_se_view v = {
		.N = n, .C = c, .S = s, .HW = h * w, .layout = TR_SE_NCHW, .pw = pw,
		.f1 = &f1, .f2 = &f2,
		.pool = buf, .hid = buf + N * C, .gate = buf + N * (C + S),
		.dz = buf + N * (3 * C + S), .dhid = buf + N * (3 * C + S) + 2 * C,
		.dpool = buf + N * (3 * C + S) + 2 * C + S,
	};
	tr_se_forward(&v, u, y);
	/* The layer's skip and ReLU (tr_layer_fwd's), and the ReLU's backward. */
	for (size_t i = 0; i < act; i++) {
		float x = y[i] + (skip ? skip[i] : 0.0f);
		y[i] = x > 0 ? x : 0.0f;
		dskip[i] = y[i] > 0 ? dy[i] : 0.0f;
	}
	tr_se_backward(&v, dskip, u, du, dw1, db1, dw2, db2);
	free(buf);
	return 0;
}

int train_layer_fc(int n, int nin, int nout, const float *x, const float *wt, const float *b,
		   const float *dy, float *y, float *dx, float *dw, float *db, char *err,
		   size_t errlen)
{
	int rc = -1;
	tr_ctx ctx, *c = &ctx;
	tr_ip_prims p;
	dnnl_memory_t mx, mw, mb, my, mdy, mdx, mdw, mdb;
	if (tr_ctx_init(c, 0, err, errlen) < 0)
		goto done;
	if (tr_ip_prims_make(c, &p, n, nin, nout, 0, 1, 1, err, errlen) < 0 ||
	    tr_ext(c, &p.src, x, &mx, err, errlen) < 0 || tr_ext(c, &p.w, wt, &mw, err, errlen) < 0 ||
	    tr_ext(c, &p.bias, b, &mb, err, errlen) < 0 || tr_ext(c, &p.dst, y, &my, err, errlen) < 0 ||
	    tr_ext(c, &p.dst, dy, &mdy, err, errlen) < 0 ||
	    tr_ext(c, &p.src, dx, &mdx, err, errlen) < 0 ||
	    tr_ext(c, &p.w, dw, &mdw, err, errlen) < 0 ||
	    tr_ext(c, &p.bias, db, &mdb, err, errlen) < 0 || tr_ctx_finish(c, err, errlen) < 0)
		goto done;
	rc = 0;
	RUN(&p.fwd, { DNNL_ARG_SRC, mx }, { DNNL_ARG_WEIGHTS, mw }, { DNNL_ARG_BIAS, mb },
	    { DNNL_ARG_DST, my });
	RUN(&p.bwd_w, { DNNL_ARG_SRC, mx }, { DNNL_ARG_DIFF_DST, mdy }, { DNNL_ARG_DIFF_WEIGHTS, mdw },
	    { DNNL_ARG_DIFF_BIAS, mdb });
	RUN(&p.bwd_d, { DNNL_ARG_DIFF_DST, mdy }, { DNNL_ARG_WEIGHTS, mw }, { DNNL_ARG_DIFF_SRC, mdx });
	DNNL_CHECK(dnnl_stream_wait(c->stream));
out:
done:
	tr_ctx_free(c);
	return rc;
}
