/* cuda_backend.c: the CUDA inference backend (nn_backend_cuda), the same
 * function as the CPU backend computed on one GPU.
 *
 * Layout: activations NHWC, fp16 (tensor cores, fp32 accumulation) or fp32
 * (for checking; FMA math, no TF32), every channel count padded to a
 * multiple of 8 with zero weights. Convolutions are cuDNN's (legacy API,
 * still in cuDNN 9 through libcudnn_cnn): cudnnConvolutionBiasActivationForward
 * fuses conv + bias + ReLU, and for the second conv of a plain block the
 * residual add too (z = skip); where cuDNN declines the fused call for a
 * layer, that layer falls back to cudnnConvolutionForward plus our own
 * bias/residual/ReLU kernel, for good. The policy FC and the value FC1 are
 * cuBLAS GEMMs (fp16 in, fp32 out); squeeze-excitation, the input
 * expansion and the heads' tail (value FC2, tanh or win/draw/loss softmax)
 * are our kernels (kernels.cu). BN is folded and weights are converted to
 * these layouts on the host at create (pack.c, tested without a device).
 *
 * Batches: a forward of n positions runs at the smallest "bucket" size >= n
 * (powers of two and max_batch), so that every launch has a fixed shape:
 * algorithms are chosen per bucket (cudnnFindConvolutionForwardAlgorithmEx)
 * and each bucket's whole forward (upload, expansion, tower, heads,
 * download) is captured once as a CUDA graph and replayed. Inputs travel
 * bit-packed (pack.h) from a pinned buffer; a batch whose planes cannot be
 * packed goes up as floats, launched eagerly. Everything is allocated at
 * create for the max batch: two device allocations (weights, activations),
 * two pinned host buffers.
 *
 * STATUS: run on an H100 (2026-11-27, bench/results/gpu-2026-11-27-*.md):
 * tests/nn_cuda, which compares it with the CPU backend (fused and not,
 * graphs and not, fp32 and fp16), passes there; the suite skips itself
 * where no device is present.
 */
#include "nn/backend.h"
#include "nn/cuda/cuda.h"

#include <stdio.h>

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <cublas_v2.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cuda_common.h"
#include "nn/cuda/cuda_dl.h"
#include "nn/cuda/cudnn_status.h"
#include "nn/cuda/kernels.h"
#include "nn/cuda/pack.h"


/* cuDNN and cuBLAS are dlopened at the first create (cuda_dl.h): every
 * call below goes through that table. */
static int cb_dl_ready(char *err, size_t errlen) { return nn_cuda_dl_ready(err, errlen); }

/* cudnn_status.c decides on cuDNN 9's codes: they must be this header's. */
_Static_assert((int)CUDNN_STATUS_BAD_PARAM == NN_CUDNN_STATUS_BAD_PARAM &&
		       (int)CUDNN_STATUS_NOT_SUPPORTED == NN_CUDNN_STATUS_NOT_SUPPORTED &&
		       (int)CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER ==
			       NN_CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER &&
		       (int)CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE ==
			       NN_CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE &&
		       (int)CUDNN_STATUS_INTERNAL_ERROR == NN_CUDNN_STATUS_INTERNAL_ERROR &&
		       (int)CUDNN_STATUS_EXECUTION_FAILED == NN_CUDNN_STATUS_EXECUTION_FAILED,
	       "cudnn_status.h's codes are cuDNN 9's");
_Static_assert((int)CUDNN_DEFAULT_MATH == NN_CUDNN_DEFAULT_MATH &&
		       (int)CUDNN_TENSOR_OP_MATH == NN_CUDNN_TENSOR_OP_MATH &&
		       (int)CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ==
			       NN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
		       (int)CUDNN_FMA_MATH == NN_CUDNN_FMA_MATH,
	       "cudnn_status.h's math types are cuDNN 9's");

#define CB_MAX_BUCKETS 16
#define CB_WS_LIMIT ((size_t)256 << 20)   /* largest cuDNN workspace we accept */
#define CB_CUBLAS_WS ((size_t)32 << 20)   /* cuBLAS workspace (graph capture) */
#define CB_ALIGN 256

/* Channel-count slots of the tensor descriptors. */
enum { SLOT_IN, SLOT_TOWER, SLOT_POL, SLOT_VAL, N_SLOTS };
/* Conv shapes that share an algorithm choice. */
enum { SHAPE_INPUT, SHAPE_TOWER, SHAPE_POL, SHAPE_VAL, N_SHAPES };

typedef struct cb_conv {
	int cin, cout, k;      /* padded channels in and out, kernel size */
	int in_slot, out_slot; /* descriptor slots of input and output */
	int shape;             /* SHAPE_*: whose algorithm it uses */
	void *w;               /* [cout][k][k][cin] (KRSC), storage type */
	void *b;               /* [cout] bias, storage type (fused call) */
	float *bf;             /* [cout] bias, fp32 (our epilogue kernel) */
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	cudnnTensorDescriptor_t bd; /* 1 x cout x 1 x 1 */
	int fused;             /* 1 while cuDNN accepts the fused call */
} cb_conv;

typedef struct cb_se {
	float *w1, *b1, *w2, *b2; /* fp32: [se][c], [se], [2c][se], [2c] */
} cb_se;

typedef struct cb_ctx {
	nn_arch arch;           /* the net's shapes */
	int device;             /* CUDA device index */
	int max_batch;          /* largest forward */
	int hw;                 /* board points */
	nn_dtype dt;            /* storage type of weights and activations */
	size_t elt;             /* its size in bytes */
	int cin, c, creal;      /* padded input planes, padded and real tower width */
	int pp, vp;             /* padded policy and value conv widths */
	int n_buckets;          /* used entries of bucket */
	int bucket[CB_MAX_BUCKETS]; /* batch sizes launched, ascending */
	size_t pstride;         /* 32-bit slots of one packed position */
	size_t in_n;            /* floats of one position's planes */
	int out_stride;         /* floats per output row: logits, value, wdl */
	int verbose;            /* describe decisions on stderr */
	int no_fusion;          /* never try the fused call */

	cudaStream_t stream;    /* every launch and copy of this context */
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	cudnnDataType_t cdt;    /* cuDNN storage type */
	cudnnActivationDescriptor_t relu, ident;
	cudnnTensorDescriptor_t td[CB_MAX_BUCKETS][N_SLOTS]; /* NHWC activations */
	cudnnConvolutionFwdAlgo_t algo[N_SHAPES][CB_MAX_BUCKETS];
	cudnnMathType_t math[N_SHAPES][CB_MAX_BUCKETS]; /* the math type cuDNN
				 * timed the chosen algorithm with, set on the
				 * layer's descriptor before each call */

	cb_conv input;                    /* input conv */
	cb_conv conv1[NN_MAX_BLOCKS], conv2[NN_MAX_BLOCKS]; /* the tower */
	cb_se se[NN_MAX_BLOCKS];          /* SE weights; w1 NULL: plain block */
	cb_conv pconv, vconv;             /* head convs */
	void *pfc_w;                      /* [np][hw * pp], storage type */
	float *pfc_b;                     /* [np] */
	void *vfc1_w;                     /* [vhid][hw * vp], storage type */
	float *vfc1_b, *vfc2_w, *vfc2_b;  /* fp32 */

	void *wmem;             /* the one device allocation of the weights */
	void *amem;             /* the one device allocation of the activations */
	void *act[3];           /* tower activations [max][hw][c] */
	void *xin;              /* expanded input [max][hw][cin] */
	void *pact, *vact;      /* head conv outputs [max][hw][pp|vp] */
	float *vh;              /* value FC1 output [max][vhid] */
	float *gates;           /* SE gates [max][2 * creal] */
	float *dpw, *hpw;       /* masked pooling: each point's weight in the SE means
				 * [max][hw] (nn_board_pool_weights), on the device
				 * and pinned on the host; hpw NULL without */
	float *dout;            /* outputs [max][out_stride] */
	uint32_t *dpacked;      /* packed input [max][pstride] */
	float *dplanes;         /* float input [max][in_n] (unpackable batches) */
	void *ws;               /* cuDNN workspace */
	size_t ws_bytes;
	void *blas_ws;          /* cuBLAS workspace */
	uint32_t *hpacked;      /* pinned: packed input */
	float *hplanes;         /* pinned: float input */
	float *hout;            /* pinned: outputs */
	/* The ownership and score heads (net.h), on the host after a forward:
	 * copies of their weights (NULL without the head) and of vact / vh. */
	float *own_w, own_b;    /* [value_channels], bias */
	float *score_w, score_b; /* [value_hidden], bias */
	float *vfc1_b_host;     /* value FC1 bias (the score head reads the
				 * hidden layer after it and its ReLU) */
	void *hvact;            /* [max][hw][vp], storage type */
	float *hvh;             /* [max][vhid] */

	cudaGraphExec_t graph[CB_MAX_BUCKETS]; /* per bucket, NULL: eager */
	int capturing;          /* inside a stream capture: no fallbacks */
	int n_fused;            /* layers running the fused call (for describe) */
	char graph_note[600];   /* why graphs are off, or "" */
} cb_ctx;

static size_t cb_align(size_t n) { return (n + CB_ALIGN - 1) / CB_ALIGN * CB_ALIGN; }

/* Carves `bytes` from base at *off; with base NULL only counts. */
static void *cb_carve(char *base, size_t *off, size_t bytes)
{
	void *p = base ? base + *off : NULL;
	*off += cb_align(bytes);
	return p;
}

/* Weights staging: in the counting pass host is NULL. */
typedef struct cb_stage {
	char *host;  /* staging copy of the device weights, or NULL: count */
	char *dev;   /* device base */
	size_t off;  /* bytes used */
	size_t elt;  /* storage type size */
} cb_stage;

/* Puts n floats (as the storage type when as_store, else fp32); returns
 * the device address (NULL in the counting pass). */
static void *cb_put(cb_stage *s, const float *src, size_t n, int as_store)
{
	size_t esz = as_store ? s->elt : sizeof(float);
	size_t at = s->off;
	s->off += cb_align(n * esz);
	if (!s->host)
		return NULL;
	if (esz == sizeof(float)) {
		memcpy(s->host + at, src, n * sizeof(float));
	} else {
		uint16_t *h = (uint16_t *)(s->host + at);
		for (size_t i = 0; i < n; i++)
			h[i] = nn_half_from_float(src[i]);
	}
	return s->dev + at;
}

/* Converts one conv (BN folded, KRSC, padded) into the stage. */
static int cb_stage_conv(cb_ctx *c, cb_stage *s, const nn_net *net, const nn_conv *src,
			 cb_conv *l, float *tmp_w, float *tmp_k, float *tmp_b)
{
	if (s->host) {
		nn_conv_folded(net, src, tmp_w, tmp_b);
		nn_conv_to_krsc(tmp_w, src->c_out, src->c_in, src->k, l->cout, l->cin, tmp_k);
		for (int i = src->c_out; i < l->cout; i++)
			tmp_b[i] = 0.0f;
	}
	size_t nw = (size_t)l->cout * l->k * l->k * l->cin;
	l->w = cb_put(s, tmp_k, nw, 1);
	l->b = cb_put(s, tmp_b, (size_t)l->cout, 1);
	l->bf = cb_put(s, tmp_b, (size_t)l->cout, 0);
	return 0;
}

/* Lays out (counting pass: host NULL) or fills every weight. */
static void cb_stage_all(cb_ctx *c, cb_stage *s, const nn_net *net, float *tw, float *tk,
			 float *tb)
{
	const nn_arch *a = &net->arch;
	cb_stage_conv(c, s, net, &net->input, &c->input, tw, tk, tb);
	for (int i = 0; i < a->blocks; i++) {
		const nn_block *b = &net->block[i];
		cb_stage_conv(c, s, net, &b->conv1, &c->conv1[i], tw, tk, tb);
		cb_stage_conv(c, s, net, &b->conv2, &c->conv2[i], tw, tk, tb);
		if (b->se1.w) {
			cb_se *e = &c->se[i];
			e->w1 = cb_put(s, b->se1.w, (size_t)b->se1.n_out * b->se1.n_in, 0);
			e->b1 = cb_put(s, b->se1.b, (size_t)b->se1.n_out, 0);
			e->w2 = cb_put(s, b->se2.w, (size_t)b->se2.n_out * b->se2.n_in, 0);
			e->b2 = cb_put(s, b->se2.b, (size_t)b->se2.n_out, 0);
			if (!s->host) /* mark as SE in the counting pass too */
				e->w1 = (float *)(uintptr_t)1;
		}
	}
	cb_stage_conv(c, s, net, &net->policy_conv, &c->pconv, tw, tk, tb);
	cb_stage_conv(c, s, net, &net->value_conv, &c->vconv, tw, tk, tb);
	if (s->host)
		nn_fc_nchw_to_nhwc(net->policy_fc.w, a->policy_outputs, a->policy_channels, c->hw,
				   c->pp, tk);
	c->pfc_w = cb_put(s, tk, (size_t)a->policy_outputs * c->hw * c->pp, 1);
	c->pfc_b = cb_put(s, net->policy_fc.b, (size_t)a->policy_outputs, 0);
	if (s->host)
		nn_fc_nchw_to_nhwc(net->value_fc1.w, a->value_hidden, a->value_channels, c->hw,
				   c->vp, tk);
	c->vfc1_w = cb_put(s, tk, (size_t)a->value_hidden * c->hw * c->vp, 1);
	c->vfc1_b = cb_put(s, net->value_fc1.b, (size_t)a->value_hidden, 0);
	c->vfc2_w = cb_put(s, net->value_fc2.w, (size_t)a->value_outputs * a->value_hidden, 0);
	c->vfc2_b = cb_put(s, net->value_fc2.b, (size_t)a->value_outputs, 0);
}

/* Descriptors of one conv layer. */
static int cb_conv_init(cb_ctx *c, cb_conv *l, int cin, int cout, int k, int in_slot,
			int out_slot, int shape, char *err, size_t errlen)
{
	int rc = 0;
	l->cin = cin;
	l->cout = cout;
	l->k = k;
	l->in_slot = in_slot;
	l->out_slot = out_slot;
	l->shape = shape;
	l->fused = !c->no_fusion;
	CUDNN_CHECK(cudnnCreateFilterDescriptor(&l->wd));
	CUDNN_CHECK(cudnnSetFilter4dDescriptor(l->wd, c->cdt, CUDNN_TENSOR_NHWC, cout, cin, k, k));
	CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&l->cd));
	CUDNN_CHECK(cudnnSetConvolution2dDescriptor(l->cd, k / 2, k / 2, 1, 1, 1, 1,
						    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
	CUDNN_CHECK(cudnnSetConvolutionMathType(
		l->cd, c->dt == NN_DTYPE_FP16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
	CUDNN_CHECK(cudnnCreateTensorDescriptor(&l->bd));
	CUDNN_CHECK(cudnnSetTensor4dDescriptor(l->bd, CUDNN_TENSOR_NHWC, c->cdt, 1, cout, 1, 1));
out:
	return rc;
}

static void cb_conv_free(cb_conv *l)
{
	if (l->wd)
		cudnnDestroyFilterDescriptor(l->wd);
	if (l->cd)
		cudnnDestroyConvolutionDescriptor(l->cd);
	if (l->bd)
		cudnnDestroyTensorDescriptor(l->bd);
}

/* The math type of the precision: tensor ops for fp16, plain FMA for fp32
 * (never TF32, whose 10-bit mantissa the fp32 path exists to avoid). */
static cudnnMathType_t cb_plain_math(const cb_ctx *c)
{
	return c->dt == NN_DTYPE_FP16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

/* The math type a chosen algorithm runs with: cuDNN's for fp16, FMA for
 * fp32. */
static cudnnMathType_t cb_run_math(const cb_ctx *c, cudnnMathType_t found)
{
	return c->dt == NN_DTYPE_FP16 ? found : CUDNN_FMA_MATH;
}

/* Runs conv l at bucket bi: y = act(conv(x) + bias + res); res may be NULL. */
static int cb_conv_run(cb_ctx *c, cb_conv *l, int bi, const void *x, void *y, const void *res,
		       int relu, char *err, size_t errlen)
{
	int rc = 0;
	const float one = 1.0f, zero = 0.0f;
	cudnnTensorDescriptor_t xd = c->td[bi][l->in_slot], yd = c->td[bi][l->out_slot];
	cudnnConvolutionFwdAlgo_t algo = c->algo[l->shape][bi];
	cudnnMathType_t math = c->math[l->shape][bi];
	if (l->fused) {
		/* cuDNN allows the identity activation with this algorithm only,
		 * which runs with the precision's own math type. */
		cudnnConvolutionFwdAlgo_t fa =
			relu ? algo : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
		CUDNN_CHECK(cudnnSetConvolutionMathType(l->cd, relu ? math : cb_plain_math(c)));
		cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
			c->dnn, &one, xd, x, l->wd, l->w, l->cd, fa, c->ws, c->ws_bytes,
			res ? &one : &zero, yd, res ? res : y, l->bd, l->b,
			relu ? c->relu : c->ident, yd, y);
		if (s == CUDNN_STATUS_SUCCESS)
			return 0;
		if (c->capturing || !nn_cudnn_fused_declines((int)s)) {
			snprintf(err, errlen, "%s:%d: fused convolution %dx%d %d->%d%s: %s (%d)",
				 __FILE__, __LINE__, l->k, l->k, l->cin, l->cout,
				 c->capturing ? " during capture" : "", cudnnGetErrorString(s), (int)s);
			return -1;
		}
		/* Declined (not supported): this layer takes the plain path from now on. */
		cudaGetLastError();
		l->fused = 0;
		if (c->verbose)
			fprintf(stderr, "cuda: fused conv %dx%d %d->%d declined (%s), plain path\n",
				l->k, l->k, l->cin, l->cout, cudnnGetErrorString(s));
	}
	CUDNN_CHECK(cudnnSetConvolutionMathType(l->cd, math));
	CUDNN_CHECK(cudnnConvolutionForward(c->dnn, &one, xd, x, l->wd, l->w, l->cd, algo, c->ws,
					    c->ws_bytes, &zero, yd, y));
	CUDA_CHECK(nnk_bias_res_act(c->dt, y, l->bf, res, (long)c->bucket[bi] * c->hw, l->cout, relu,
				    c->stream));
out:
	return rc;
}

/* y[n][m] (row stride ldc) = x[n][k] . w[m][k]^T, fp32 out. */
static int cb_gemm(cb_ctx *c, int n, int m, int k, const void *w, const void *x, float *y,
		   int ldc, char *err, size_t errlen)
{
	int rc = 0;
	const float one = 1.0f, zero = 0.0f;
	cudaDataType_t t = c->dt == NN_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_32F;
	CUBLAS_CHECK(cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, w, t, k, x, t, k,
				  &zero, y, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
out:
	return rc;
}

/* Enqueues the whole forward of bucket bi on the stream: upload (packed
 * or float), tower, heads, download into hout. */
static int cb_enqueue(cb_ctx *c, int bi, int packed, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &c->arch;
	int n = c->bucket[bi];
	if (packed) {
		CUDA_CHECK(cudaMemcpyAsync(c->dpacked, c->hpacked, sizeof(uint32_t) * c->pstride * n,
					   cudaMemcpyHostToDevice, c->stream));
		CUDA_CHECK(nnk_expand_packed(c->dt, c->dpacked, n, a->in_planes, c->hw, c->cin, c->xin,
					     c->stream));
	} else {
		CUDA_CHECK(cudaMemcpyAsync(c->dplanes, c->hplanes, sizeof(float) * c->in_n * n,
					   cudaMemcpyHostToDevice, c->stream));
		CUDA_CHECK(nnk_expand_float(c->dt, c->dplanes, n, a->in_planes, c->hw, c->cin, c->xin,
					    c->stream));
	}
	if (c->hpw)
		CUDA_CHECK(cudaMemcpyAsync(c->dpw, c->hpw, sizeof(float) * c->hw * n,
					   cudaMemcpyHostToDevice, c->stream));
	void *cur = c->act[0], *t = c->act[1], *u = c->act[2], *sw;
	if (cb_conv_run(c, &c->input, bi, c->xin, cur, NULL, 1, err, errlen) < 0)
		return -1;
	for (int i = 0; i < a->blocks; i++) {
		if (cb_conv_run(c, &c->conv1[i], bi, cur, t, NULL, 1, err, errlen) < 0)
			return -1;
		if (c->se[i].w1) {
			const cb_se *e = &c->se[i];
			if (cb_conv_run(c, &c->conv2[i], bi, t, u, NULL, 0, err, errlen) < 0)
				return -1;
			CUDA_CHECK(nnk_se_gates(c->dt, u, c->hpw ? c->dpw : NULL, n, c->hw, c->c,
						c->creal, a->se_channels, e->w1, e->b1, e->w2, e->b2,
						c->gates, c->stream));
			CUDA_CHECK(nnk_se_apply(c->dt, u, cur, c->gates, t, n, c->hw, c->c, c->creal,
						c->stream));
			sw = cur, cur = t, t = sw; /* t holds the block's output */
		} else {
			if (cb_conv_run(c, &c->conv2[i], bi, t, u, cur, 1, err, errlen) < 0)
				return -1;
			sw = cur, cur = u, u = sw;
		}
	}
	if (cb_conv_run(c, &c->pconv, bi, cur, c->pact, NULL, 1, err, errlen) < 0 ||
	    cb_gemm(c, n, a->policy_outputs, c->hw * c->pp, c->pfc_w, c->pact, c->dout,
		    c->out_stride, err, errlen) < 0)
		return -1;
	if (cb_conv_run(c, &c->vconv, bi, cur, c->vact, NULL, 1, err, errlen) < 0 ||
	    cb_gemm(c, n, a->value_hidden, c->hw * c->vp, c->vfc1_w, c->vact, c->vh, a->value_hidden,
		    err, errlen) < 0)
		return -1;
	CUDA_CHECK(nnk_heads_finish(c->dout, c->out_stride, a->policy_outputs, c->pfc_b, c->vh,
				    a->value_hidden, c->vfc1_b, c->vfc2_w, c->vfc2_b, a->value_outputs,
				    n, c->stream));
	CUDA_CHECK(cudaMemcpyAsync(c->hout, c->dout, sizeof(float) * c->out_stride * n,
				   cudaMemcpyDeviceToHost, c->stream));
out:
	return rc;
}

static int cb_bucket_of(const cb_ctx *c, int batch)
{
	for (int i = 0; i < c->n_buckets; i++)
		if (c->bucket[i] >= batch)
			return i;
	return c->n_buckets - 1;
}

static int cb_forward(void *ctx, int batch, const float *planes, float *policy_logits,
		      float *value, float *wdl)
{
	cb_ctx *c = ctx;
	char err[512];
	size_t errlen = sizeof(err);
	int rc = 0;
	int bi = cb_bucket_of(c, batch);
	const nn_arch *a = &c->arch;
	CUDA_CHECK(cudaSetDevice(c->device));
	if (c->hpw)
		for (int i = 0; i < batch; i++)
			nn_board_pool_weights(a->encoding, planes + (size_t)i * c->in_n, c->hw,
					      c->hpw + (size_t)i * c->hw);
	if (nn_pack_planes(batch, a->in_planes, c->hw, planes, c->hpacked)) {
		if (c->graph[bi])
			CUDA_CHECK(cudaGraphLaunch(c->graph[bi], c->stream));
		else if (cb_enqueue(c, bi, 1, err, errlen) < 0)
			goto fail;
	} else {
		memcpy(c->hplanes, planes, sizeof(float) * c->in_n * batch);
		if (cb_enqueue(c, bi, 0, err, errlen) < 0)
			goto fail;
	}
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	for (int i = 0; i < batch; i++) {
		const float *row = c->hout + (size_t)i * c->out_stride;
		memcpy(policy_logits + (size_t)i * a->policy_outputs, row,
		       sizeof(float) * a->policy_outputs);
		value[i] = row[a->policy_outputs];
		if (wdl)
			memcpy(wdl + (size_t)i * 3, row + a->policy_outputs + 1, sizeof(float) * 3);
	}
out:
	if (rc < 0)
		fprintf(stderr, "cuda backend: %s\n", err);
	return rc;
fail:
	fprintf(stderr, "cuda backend: %s\n", err);
	return -1;
}

/* cb_forward, then the ownership and score heads on the host from the
 * value conv's output and the value FC1's (as the reference computes
 * them: tanh of a per-point dot product over the channels; a dot product
 * with the hidden layer after its bias and ReLU). */
static int cb_forward_heads(void *ctx, int batch, const float *planes, float *policy_logits,
			    float *value, float *wdl, float *ownership, float *score)
{
	cb_ctx *c = ctx;
	const nn_arch *a = &c->arch;
	char err[512];
	size_t errlen = sizeof(err);
	int rc = cb_forward(ctx, batch, planes, policy_logits, value, wdl);
	if (rc < 0)
		return rc;
	if (ownership && c->own_w) {
		size_t n = (size_t)batch * c->hw * c->vp;
		CUDA_CHECK(cudaMemcpy(c->hvact, c->vact, n * c->elt, cudaMemcpyDeviceToHost));
		const float *f32 = c->hvact;
		const uint16_t *f16 = c->hvact;
		for (int i = 0; i < batch; i++)
			for (int p = 0; p < c->hw; p++) {
				size_t at = ((size_t)i * c->hw + p) * c->vp;
				float z = c->own_b;
				for (int ch = 0; ch < a->value_channels; ch++)
					z += c->own_w[ch] * (c->dt == NN_DTYPE_FP16
								     ? nn_float_from_half(f16[at + ch])
								     : f32[at + ch]);
				ownership[(size_t)i * c->hw + p] = tanhf(z);
			}
	}
	if (score && c->score_w) {
		size_t n = (size_t)batch * a->value_hidden;
		CUDA_CHECK(cudaMemcpy(c->hvh, c->vh, n * sizeof(float), cudaMemcpyDeviceToHost));
		for (int i = 0; i < batch; i++) {
			float z = c->score_b;
			for (int j = 0; j < a->value_hidden; j++) {
				float h = c->hvh[(size_t)i * a->value_hidden + j] + c->vfc1_b_host[j];
				z += c->score_w[j] * (h > 0 ? h : 0);
			}
			score[i] = z;
		}
	}
out:
	if (rc < 0)
		fprintf(stderr, "cuda backend: %s\n", err);
	return rc;
}

static void cb_destroy(void *ctx)
{
	cb_ctx *c = ctx;
	if (!c)
		return;
	cudaSetDevice(c->device);
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	for (int i = 0; i < CB_MAX_BUCKETS; i++) {
		if (c->graph[i])
			cudaGraphExecDestroy(c->graph[i]);
		for (int s = 0; s < N_SLOTS; s++)
			if (c->td[i][s])
				cudnnDestroyTensorDescriptor(c->td[i][s]);
	}
	cb_conv_free(&c->input);
	for (int i = 0; i < c->arch.blocks; i++) {
		cb_conv_free(&c->conv1[i]);
		cb_conv_free(&c->conv2[i]);
	}
	cb_conv_free(&c->pconv);
	cb_conv_free(&c->vconv);
	if (c->relu)
		cudnnDestroyActivationDescriptor(c->relu);
	if (c->ident)
		cudnnDestroyActivationDescriptor(c->ident);
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->dnn)
		cudnnDestroy(c->dnn);
	cudaFree(c->wmem);
	cudaFree(c->amem);
	cudaFree(c->ws);
	cudaFree(c->blas_ws);
	cudaFreeHost(c->hpacked);
	cudaFreeHost(c->hplanes);
	cudaFreeHost(c->hpw);
	cudaFreeHost(c->hout);
	free(c->own_w);
	free(c->score_w);
	free(c->vfc1_b_host);
	free(c->hvact);
	free(c->hvh);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	cudaGetLastError();
	free(c);
}

/* Chooses the algorithm of each conv shape at each bucket: timed by cuDNN
 * when a scratch workspace can be had, else its heuristics. Leaves the
 * largest workspace any choice needs in *need. */
static int cb_choose_algos(cb_ctx *c, size_t *need, char *err, size_t errlen)
{
	int rc = 0;
	void *scratch = NULL;
	size_t scratch_bytes = CB_WS_LIMIT;
	if (cudaMalloc(&scratch, scratch_bytes) != cudaSuccess) {
		cudaGetLastError();
		scratch = NULL;
		scratch_bytes = 0;
	}
	struct {
		cb_conv *l;
		const void *x;
		void *y;
	} rep[N_SHAPES] = {
		[SHAPE_INPUT] = { &c->input, c->xin, c->act[0] },
		[SHAPE_TOWER] = { c->arch.blocks ? &c->conv1[0] : NULL, c->act[0], c->act[1] },
		[SHAPE_POL] = { &c->pconv, c->act[0], c->pact },
		[SHAPE_VAL] = { &c->vconv, c->act[0], c->vact },
	};
	*need = 0;
	for (int sh = 0; sh < N_SHAPES; sh++) {
		cb_conv *l = rep[sh].l;
		if (!l)
			continue;
		for (int bi = 0; bi < c->n_buckets; bi++) {
			cudnnTensorDescriptor_t xd = c->td[bi][l->in_slot], yd = c->td[bi][l->out_slot];
			cudnnConvolutionFwdAlgoPerf_t perf[8];
			int got = 0, found = 0;
			if (scratch &&
			    cudnnFindConvolutionForwardAlgorithmEx(c->dnn, xd, rep[sh].x, l->wd, l->w, l->cd,
								   yd, rep[sh].y, 8, &got, perf, scratch,
								   scratch_bytes) != CUDNN_STATUS_SUCCESS)
				got = 0;
			if (got == 0)
				CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(c->dnn, xd, l->wd, l->cd, yd,
										   8, &got, perf));
			nn_cudnn_algo_perf cand[8];
			for (int i = 0; i < got; i++)
				cand[i] = (nn_cudnn_algo_perf){ (int)perf[i].status, (int)perf[i].mathType,
								perf[i].memory };
			int i = nn_cudnn_pick_algo(cand, got, c->dt == NN_DTYPE_FP16, CB_WS_LIMIT);
			if (i >= 0) {
				c->algo[sh][bi] = perf[i].algo;
				c->math[sh][bi] = cb_run_math(c, perf[i].mathType);
				if (perf[i].memory > *need)
					*need = perf[i].memory;
				found = 1;
			}
			if (!found) {
				snprintf(err, errlen, "cuDNN has no algorithm for a %dx%d conv %d->%d at batch %d%s",
					 l->k, l->k, l->cin, l->cout, c->bucket[bi],
					 c->dt == NN_DTYPE_FP32 ? " with FMA math (no TF32)" : "");
				rc = -1;
				goto out;
			}
			/* The fused call with the identity activation (SE blocks) needs this one. */
			size_t ws = 0;
			if (cudnnGetConvolutionForwardWorkspaceSize(
				    c->dnn, xd, l->wd, l->cd, yd,
				    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws) == CUDNN_STATUS_SUCCESS &&
			    ws > *need && ws <= CB_WS_LIMIT)
				*need = ws;
			if (c->verbose)
				fprintf(stderr, "cuda: conv %dx%d %d->%d batch %d: algorithm %d, math type %d\n",
					l->k, l->k, l->cin, l->cout, c->bucket[bi], (int)c->algo[sh][bi],
					(int)c->math[sh][bi]);
		}
	}
out:
	cudaFree(scratch);
	cudaGetLastError();
	return rc;
}

/* Why the capture of the bucket of `batch` failed, from each step's
 * result: begin, enqueue (its message, "" when it went well), end and
 * instantiate. Never empty. */
static void cb_capture_reason(char *buf, size_t len, int batch, cudaError_t begin,
			      const char *enqueue, cudaError_t end, cudaError_t inst)
{
	size_t at = (size_t)snprintf(buf, len, "off (capture of batch %d failed:", batch);
	if (begin != cudaSuccess && at < len)
		at += (size_t)snprintf(buf + at, len - at, " begin: %s;", cudaGetErrorString(begin));
	if (enqueue[0] && at < len)
		at += (size_t)snprintf(buf + at, len - at, " %s;", enqueue);
	if (end != cudaSuccess && at < len)
		at += (size_t)snprintf(buf + at, len - at, " end: %s;", cudaGetErrorString(end));
	if (inst != cudaSuccess && at < len)
		at += (size_t)snprintf(buf + at, len - at, " instantiate: %s;", cudaGetErrorString(inst));
	if (at < len && buf[at - 1] == ';')
		buf[--at] = '\0';
	if (at + 1 < len)
		snprintf(buf + at, len - at, ")");
}

/* Runs every bucket once (cuDNN may decline fused calls here, and lazy
 * module loading happens), then captures each as a graph. A failed capture
 * turns graphs off and is not an error. */
static int cb_warm_and_capture(cb_ctx *c, int want_graphs, char *err, size_t errlen)
{
	int rc = 0;
	for (int bi = c->n_buckets - 1; bi >= 0; bi--)
		if (cb_enqueue(c, bi, 1, err, errlen) < 0)
			return -1;
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	/* A second pass: layers declined in the first run went plain for all. */
	for (int bi = c->n_buckets - 1; bi >= 0; bi--)
		if (cb_enqueue(c, bi, 1, err, errlen) < 0)
			return -1;
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
	if (!want_graphs) {
		snprintf(c->graph_note, sizeof(c->graph_note), "off (asked)");
		return 0;
	}
	for (int bi = 0; bi < c->n_buckets; bi++) {
		cudaGraph_t g = NULL;
		char cerr[512] = "";
		cudaError_t eb = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
		cudaError_t ee = cudaSuccess, ei = cudaSuccess;
		int r = 0;
		if (eb == cudaSuccess) {
			c->capturing = 1;
			r = cb_enqueue(c, bi, 1, cerr, sizeof(cerr));
			c->capturing = 0;
			/* Always ended, also after a failed enqueue: its error (the
			 * capture invalidated, and by what) is part of the reason. */
			ee = cudaStreamEndCapture(c->stream, &g);
		}
		if (eb == cudaSuccess && ee == cudaSuccess && r == 0)
			ei = cudaGraphInstantiate(&c->graph[bi], g, 0);
		if (g)
			cudaGraphDestroy(g);
		if (eb != cudaSuccess || ee != cudaSuccess || ei != cudaSuccess || r != 0) {
			cb_capture_reason(c->graph_note, sizeof(c->graph_note), c->bucket[bi], eb,
					  r ? cerr : "", ee, ei);
			cudaGetLastError();
			for (int i = 0; i < c->n_buckets; i++)
				if (c->graph[i]) {
					cudaGraphExecDestroy(c->graph[i]);
					c->graph[i] = NULL;
				}
			if (c->verbose)
				fprintf(stderr, "cuda: graphs %s\n", c->graph_note);
			return 0;
		}
	}
	/* One replay each, checked, before they serve. */
	for (int bi = 0; bi < c->n_buckets; bi++)
		CUDA_CHECK(cudaGraphLaunch(c->graph[bi], c->stream));
	CUDA_CHECK(cudaStreamSynchronize(c->stream));
out:
	return rc;
}

static int cb_create(const nn_net *net, int max_batch, const nn_backend_options *opt,
		     void **out_ctx, char *err, size_t errlen)
{
	int rc = 0;
	const nn_arch *a = &net->arch;
	float *tw = NULL, *tk = NULL, *tb = NULL;
	char *stage_host = NULL;
	cb_ctx *c = NULL;
	*out_ctx = NULL;
	if (opt->precision != NN_DTYPE_FP16 && opt->precision != NN_DTYPE_FP32) {
		snprintf(err, errlen, "the CUDA backend runs fp16 or fp32, not %s",
			 nn_dtype_name(opt->precision));
		return -1;
	}
	if (max_batch < 1 || max_batch > 4096) {
		snprintf(err, errlen, "max batch %d: must be 1..4096", max_batch);
		return -1;
	}
	if (nn_arch_check(a, err, errlen) < 0)
		return -1;
	if (cb_dl_ready(err, errlen) < 0)
		return -1;
	if (opt->device < 0 || opt->device >= nn_cuda_device_count()) {
		snprintf(err, errlen, "no CUDA device %d", opt->device);
		return -1;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->arch = *a;
	c->device = opt->device;
	c->max_batch = max_batch;
	c->hw = a->board_w * a->board_h;
	c->dt = opt->precision; /* fp16 or fp32: checked above */
	c->elt = nn_dtype_size(c->dt);
	c->cdt = c->dt == NN_DTYPE_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
	c->cin = nn_pad8(a->in_planes);
	c->creal = a->channels;
	c->c = nn_pad8(a->channels);
	c->pp = nn_pad8(a->policy_channels);
	c->vp = nn_pad8(a->value_channels);
	if (net->own_fc.w) {
		c->own_w = malloc(sizeof(float) * (size_t)a->value_channels);
		c->hvact = malloc((size_t)max_batch * c->hw * c->vp * c->elt);
		if (!c->own_w || !c->hvact)
			goto oom;
		memcpy(c->own_w, net->own_fc.w, sizeof(float) * (size_t)a->value_channels);
		c->own_b = net->own_fc.b[0];
	}
	if (net->score_fc.w) {
		c->score_w = malloc(sizeof(float) * (size_t)a->value_hidden);
		c->vfc1_b_host = malloc(sizeof(float) * (size_t)a->value_hidden);
		c->hvh = malloc(sizeof(float) * (size_t)max_batch * a->value_hidden);
		if (!c->score_w || !c->vfc1_b_host || !c->hvh)
			goto oom;
		memcpy(c->score_w, net->score_fc.w, sizeof(float) * (size_t)a->value_hidden);
		memcpy(c->vfc1_b_host, net->value_fc1.b, sizeof(float) * (size_t)a->value_hidden);
		c->score_b = net->score_fc.b[0];
	}
	c->pstride = nn_pack_stride(a->in_planes, c->hw);
	c->in_n = (size_t)a->in_planes * c->hw;
	c->out_stride = a->policy_outputs + 4;
	c->verbose = opt->verbose;
	c->no_fusion = opt->cuda_no_fusion;
	for (int b = 1; b < max_batch && c->n_buckets < CB_MAX_BUCKETS - 1; b *= 2)
		c->bucket[c->n_buckets++] = b;
	c->bucket[c->n_buckets++] = max_batch;

	CUDA_CHECK(cudaSetDevice(c->device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
	CUDNN_CHECK(cudnnCreate(&c->dnn));
	CUDNN_CHECK(cudnnSetStream(c->dnn, c->stream));
	CUBLAS_CHECK(cublasCreate(&c->blas));
	CUBLAS_CHECK(cublasSetStream(c->blas, c->stream));
	CUBLAS_CHECK(cublasSetMathMode(c->blas, c->dt == NN_DTYPE_FP16 ? CUBLAS_DEFAULT_MATH
								       : CUBLAS_PEDANTIC_MATH));
	CUDA_CHECK(cudaMalloc(&c->blas_ws, CB_CUBLAS_WS));
	CUBLAS_CHECK(cublasSetWorkspace(c->blas, c->blas_ws, CB_CUBLAS_WS));
	CUDNN_CHECK(cudnnCreateActivationDescriptor(&c->relu));
	CUDNN_CHECK(cudnnSetActivationDescriptor(c->relu, CUDNN_ACTIVATION_RELU,
						 CUDNN_NOT_PROPAGATE_NAN, 0.0));
	CUDNN_CHECK(cudnnCreateActivationDescriptor(&c->ident));
	CUDNN_CHECK(cudnnSetActivationDescriptor(c->ident, CUDNN_ACTIVATION_IDENTITY,
						 CUDNN_NOT_PROPAGATE_NAN, 0.0));
	{
		const int slot_c[N_SLOTS] = { c->cin, c->c, c->pp, c->vp };
		for (int bi = 0; bi < c->n_buckets; bi++)
			for (int s = 0; s < N_SLOTS; s++) {
				CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->td[bi][s]));
				CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->td[bi][s], CUDNN_TENSOR_NHWC, c->cdt,
								       c->bucket[bi], slot_c[s], a->board_h,
								       a->board_w));
			}
	}
	if (cb_conv_init(c, &c->input, c->cin, c->c, 3, SLOT_IN, SLOT_TOWER, SHAPE_INPUT, err,
			 errlen) < 0)
		goto fail;
	for (int i = 0; i < a->blocks; i++)
		if (cb_conv_init(c, &c->conv1[i], c->c, c->c, 3, SLOT_TOWER, SLOT_TOWER, SHAPE_TOWER,
				 err, errlen) < 0 ||
		    cb_conv_init(c, &c->conv2[i], c->c, c->c, 3, SLOT_TOWER, SLOT_TOWER, SHAPE_TOWER,
				 err, errlen) < 0)
			goto fail;
	if (cb_conv_init(c, &c->pconv, c->c, c->pp, 1, SLOT_TOWER, SLOT_POL, SHAPE_POL, err,
			 errlen) < 0 ||
	    cb_conv_init(c, &c->vconv, c->c, c->vp, 1, SLOT_TOWER, SLOT_VAL, SHAPE_VAL, err,
			 errlen) < 0)
		goto fail;

	/* Weights: count, allocate, fill a host copy, one upload. */
	{
		/* Scratch for the largest tensor, padded. */
		size_t need[] = {
			(size_t)c->c * 9 * c->c, (size_t)c->c * 9 * c->cin, (size_t)c->pp * c->c,
			(size_t)c->vp * c->c, (size_t)a->policy_outputs * c->hw * c->pp,
			(size_t)a->value_hidden * c->hw * c->vp,
		};
		size_t big = 0;
		for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
			if (need[i] > big)
				big = need[i];
		tw = malloc(sizeof(float) * big);
		tk = malloc(sizeof(float) * big);
		tb = malloc(sizeof(float) * (NN_MAX_CHANNELS + 8));
		if (!tw || !tk || !tb)
			goto oom;
		cb_stage st = { .host = NULL, .dev = NULL, .off = 0, .elt = c->elt };
		cb_stage_all(c, &st, net, tw, tk, tb);
		size_t total = st.off;
		CUDA_CHECK(cudaMalloc(&c->wmem, total));
		stage_host = malloc(total);
		if (!stage_host)
			goto oom;
		memset(stage_host, 0, total);
		st = (cb_stage){ .host = stage_host, .dev = c->wmem, .off = 0, .elt = c->elt };
		cb_stage_all(c, &st, net, tw, tk, tb);
		/* On the context's stream (non-blocking: a copy on the default
		 * stream would not be ordered before its work), and waited for
		 * before the staging copy is freed. */
		CUDA_CHECK(cudaMemcpyAsync(c->wmem, stage_host, total, cudaMemcpyHostToDevice,
					   c->stream));
		CUDA_CHECK(cudaStreamSynchronize(c->stream));
	}

	/* Activations: one allocation carved by a table of sizes. */
	{
		size_t mb = (size_t)max_batch, hw = (size_t)c->hw, e = c->elt;
		size_t sizes[] = {
			mb * hw * c->c * e, mb * hw * c->c * e, mb * hw * c->c * e, mb * hw * c->cin * e,
			mb * hw * c->pp * e, mb * hw * c->vp * e, mb * a->value_hidden * sizeof(float),
			mb * 2 * c->creal * sizeof(float), mb * c->out_stride * sizeof(float),
			mb * c->pstride * sizeof(uint32_t), mb * c->in_n * sizeof(float),
			mb * hw * sizeof(float),
		};
		void **where[] = {
			&c->act[0], &c->act[1], &c->act[2], &c->xin, &c->pact, &c->vact,
			(void **)&c->vh, (void **)&c->gates, (void **)&c->dout, (void **)&c->dpacked,
			(void **)&c->dplanes, (void **)&c->dpw,
		};
		size_t off = 0;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			cb_carve(NULL, &off, sizes[i]);
		CUDA_CHECK(cudaMalloc(&c->amem, off));
		CUDA_CHECK(cudaMemsetAsync(c->amem, 0, off, c->stream));
		off = 0;
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			*where[i] = cb_carve(c->amem, &off, sizes[i]);
		CUDA_CHECK(cudaHostAlloc((void **)&c->hpacked, mb * c->pstride * sizeof(uint32_t),
					 cudaHostAllocDefault));
		CUDA_CHECK(cudaHostAlloc((void **)&c->hplanes, mb * c->in_n * sizeof(float),
					 cudaHostAllocDefault));
		CUDA_CHECK(cudaHostAlloc((void **)&c->hout, mb * c->out_stride * sizeof(float),
					 cudaHostAllocDefault));
		memset(c->hpacked, 0, mb * c->pstride * sizeof(uint32_t));
		memset(c->hplanes, 0, mb * c->in_n * sizeof(float));
		if (a->masked_pool) {
			CUDA_CHECK(cudaHostAlloc((void **)&c->hpw, mb * hw * sizeof(float),
						 cudaHostAllocDefault));
			for (size_t i = 0; i < mb * hw; i++)
				c->hpw[i] = 1.0f / (float)hw;
		}
	}
	{
		size_t need = 0;
		if (cb_choose_algos(c, &need, err, errlen) < 0)
			goto fail;
		c->ws_bytes = need > 0 ? need : CB_ALIGN;
		CUDA_CHECK(cudaMalloc(&c->ws, c->ws_bytes));
	}
	if (cb_warm_and_capture(c, !opt->cuda_no_graphs, err, errlen) < 0)
		goto fail;
	c->n_fused = c->input.fused + c->pconv.fused + c->vconv.fused;
	for (int i = 0; i < a->blocks; i++)
		c->n_fused += c->conv1[i].fused + c->conv2[i].fused;
	if (c->verbose) {
		char buf[1024];
		nn_backend_cuda.describe(c, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	goto out;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	rc = -1;
out:
	free(tw);
	free(tk);
	free(tb);
	free(stage_host);
	if (rc < 0) {
		cb_destroy(c);
		return -1;
	}
	*out_ctx = c;
	return 0;
}

static void cb_describe(void *ctx, char *buf, size_t len)
{
	cb_ctx *c = ctx;
	char name[128];
	nn_cuda_device_name(c->device, name, sizeof(name));
	int graphs = 0;
	for (int i = 0; i < c->n_buckets; i++)
		graphs += c->graph[i] != NULL;
	snprintf(buf, len,
		 "cuda %s on GPU %d (%s): NHWC, channels %d->%d, %d batch buckets up to %d, "
		 "fused conv+bias+act on %d of %d convs, cuDNN workspace %zu KiB, graphs %s",
		 nn_dtype_name(c->dt), c->device, name, c->creal, c->c, c->n_buckets,
		 c->max_batch, c->n_fused, 3 + 2 * c->arch.blocks, c->ws_bytes >> 10,
		 graphs ? "on" : c->graph_note[0] ? c->graph_note : "off");
}

const nn_backend_ops nn_backend_cuda = {
	.name = "cuda",
	.create = cb_create,
	.forward = cb_forward,
	.forward_heads = cb_forward_heads,
	.destroy = cb_destroy,
	.describe = cb_describe,
};

int nn_cuda_backend_built(void) { return 1; }

int nn_cuda_load_libraries(char *err, size_t errlen) { return cb_dl_ready(err, errlen); }

int nn_cuda_expand_check(int device, int batch, int planes, int hw, int c_pad,
			 const unsigned *packed, float *out, char *err, size_t errlen)
{
	int rc = 0;
	uint32_t *dp = NULL;
	float *dout = NULL;
	size_t in = nn_pack_stride(planes, hw) * (size_t)batch, on = (size_t)batch * hw * c_pad;
	if (device < 0 || device >= nn_cuda_device_count()) {
		snprintf(err, errlen, "no CUDA device %d", device);
		return 1;
	}
	CUDA_CHECK(cudaSetDevice(device));
	CUDA_CHECK(cudaMalloc((void **)&dp, in * sizeof(uint32_t)));
	CUDA_CHECK(cudaMalloc((void **)&dout, on * sizeof(float)));
	CUDA_CHECK(cudaMemcpy(dp, packed, in * sizeof(uint32_t), cudaMemcpyHostToDevice));
	CUDA_CHECK(nnk_expand_packed(NN_DTYPE_FP32, dp, batch, planes, hw, c_pad, dout, 0));
	CUDA_CHECK(cudaMemcpy(out, dout, on * sizeof(float), cudaMemcpyDeviceToHost));
out:
	cudaFree(dp);
	cudaFree(dout);
	return rc;
}

#else /* no CUDA, or no cuDNN: a table that says why */

static int cb_refuse(const nn_net *net, int max_batch, const nn_backend_options *opt,
		     void **ctx, char *err, size_t errlen)
{
	*ctx = NULL;
#ifdef SENTE_HAVE_CUDA
	snprintf(err, errlen, "built without cuDNN (install it under CUDA_HOME and rebuild)");
#else
	snprintf(err, errlen, "built without CUDA (make CUDA=1 needs nvcc)");
#endif
	return -1;
}

static int cb_no_forward(void *ctx, int batch, const float *planes, float *policy_logits,
			 float *value, float *wdl_or_null)
{
	return -1;
}

static void cb_no_destroy(void *ctx) {}

static void cb_no_describe(void *ctx, char *buf, size_t len) { snprintf(buf, len, "none"); }

const nn_backend_ops nn_backend_cuda = {
	.name = "cuda",
	.create = cb_refuse,
	.forward = cb_no_forward,
	.destroy = cb_no_destroy,
	.describe = cb_no_describe,
};

int nn_cuda_backend_built(void) { return 0; }

int nn_cuda_load_libraries(char *err, size_t errlen)
{
	snprintf(err, errlen, "built without the CUDA backend");
	return -1;
}

int nn_cuda_expand_check(int device, int batch, int planes, int hw, int c_pad,
			 const unsigned *packed, float *out, char *err, size_t errlen)
{
	snprintf(err, errlen, "built without the CUDA backend");
	return 1;
}

#endif
