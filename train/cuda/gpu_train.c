/* gpu_train.c: the GPU learner (gpu_train.h). Host code in C over cudart,
 * cuDNN's legacy convolution API and cuBLAS (both dlopened, cuda_dl.h);
 * the kernels are in train_kernels.cu.
 *
 * A step, per micro-batch: forward (conv by cuDNN, then our training batch
 * norm: statistics of conv + bias, apply with residual and ReLU; an SE
 * block's second layer puts its squeeze-excitation between), heads
 * (FCs by cuBLAS in fp32), losses and their gradients (already multiplied
 * by the loss scale), backward in the reverse order of net->data so that
 * finished ranges go to the hooks as they are done. Then, once: the norm
 * and overflow reduction, the fused optimizer over the fp32 master weights,
 * the running statistics, and the recast of the compute weights.
 *
 * STATUS: run on H100s and H200s (2026-11-27 and 28, bench/results/): the
 * comparisons with the CPU trainer in tests/train_cuda pass there, and
 * fp16/bf16 loss curves follow fp32's over 1,000 steps; they skip
 * themselves where no device is present. The ownership and score heads
 * (tk_own_loss, tk_score_loss and their gradients) first ran on an H200
 * on 2026-11-28 (gpu-2026-11-28-00581b3.md), where
 * gpu_train/fp32_step_matches_cpu_go_heads_* and
 * micro_batches_average_half_batch_gradients_heads passed.
 * Squeeze-excitation blocks (tk_se_forward, tk_se_backward, as the CPU
 * trainer's tr_se_forward/tr_se_backward) passed the same day: the
 * gpu_train tests named *_se*, the "se" rows of gpu_layers, and memcheck
 * on gpu_train/fp32_step_matches_cpu_go_se_sgd. Their kernels are slow
 * (a thread per channel and position sums its board): SE 32 costs the
 * 19x19 10x128 fp16 step about a third.
 * The opponent-reply head (a second FC on the policy conv, by cuBLAS as
 * the policy FC, its loss by tk_policy_loss, its input gradient added to
 * the policy FC's) has NOT yet run on a device: the gpu_train tests named
 * *_opp* and gpu_replay's opponent-reply expansion on a device are
 * written and compiled but were skipped where they were built.
 * Nets of several board sizes (nn_arch.sizes: framed batches, and SE means
 * masked to each position's board by tk_board_pool_weights from the
 * on-board plane, as the CPU trainer's nn_board_pool_weights) have NOT
 * yet run on a device either: the gpu_train tests named *_sizes_*, the
 * masked "se" rows of gpu_layers, gpu_replay's several-size expansion on a
 * device and gpu_learner/go_run_of_several_sizes_trains_on_the_gpu are
 * written and compiled but were skipped where they were built.
 */
#include "train/cuda/gpu_train.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cuda.h"
#include "nn/encode.h"
#include "train/checkpoint.h"

gpu_train_options gpu_train_options_default(void)
{
	gpu_train_options g;
	memset(&g, 0, sizeof(g));
	g.device = 0;
	g.precision = NN_DTYPE_FP32;
	g.micro_batch = 0;
	g.loss_scale = 32768.0;
	g.growth_interval = 2000;
	g.backoff = 0.5;
	return g;
}

int gpu_train_options_check(const gpu_train_options *g, int batch, char *err, size_t errlen)
{
	if (g->precision != NN_DTYPE_FP32 && g->precision != NN_DTYPE_FP16 &&
	    g->precision != NN_DTYPE_BF16) {
		snprintf(err, errlen, "precision %s: the GPU trainer takes fp32, fp16 or bf16",
			 nn_dtype_name(g->precision));
		return -1;
	}
	if (g->device < 0) {
		snprintf(err, errlen, "device %d: must be >= 0", g->device);
		return -1;
	}
	if (g->micro_batch < 0 || (g->micro_batch > 0 && (g->micro_batch < 2 ||
							  batch % g->micro_batch != 0))) {
		snprintf(err, errlen, "micro-batch %d: must be 0 (automatic) or a divisor >= 2 of "
			 "the batch %d (batch norm needs two positions)", g->micro_batch, batch);
		return -1;
	}
	if (!(g->loss_scale >= 1 && g->loss_scale <= 16777216.0)) {
		snprintf(err, errlen, "loss scale %g: must be in [1, 2^24]", g->loss_scale);
		return -1;
	}
	if (g->growth_interval < 1) {
		snprintf(err, errlen, "loss-scale growth interval %d: must be >= 1",
			 g->growth_interval);
		return -1;
	}
	if (!(g->backoff > 0 && g->backoff < 1)) {
		snprintf(err, errlen, "loss-scale backoff %g: must be in (0, 1)", g->backoff);
		return -1;
	}
	return 0;
}

double gpu_train_forward_flops(const nn_arch *a)
{
	double hw = (double)a->board_w * a->board_h, macs = 0;
	macs += hw * 9.0 * a->in_planes * a->channels;
	macs += a->blocks * 2.0 * hw * 9.0 * a->channels * a->channels;
	for (int i = 0; i < a->blocks; i++)
		if (a->block_kind[i] == NN_BLOCK_SE)
			macs += 3.0 * (double)a->channels * a->se_channels;
	macs += hw * a->channels * (a->policy_channels + a->value_channels);
	macs += hw * a->policy_channels * a->policy_outputs;
	macs += hw * a->value_channels * a->value_hidden;
	macs += (double)a->value_hidden * a->value_outputs;
	if (a->ownership)
		macs += hw * a->value_channels;
	if (a->score)
		macs += a->value_hidden;
	if (a->opp_policy)
		macs += hw * a->policy_channels * a->policy_outputs;
	return 2.0 * macs;
}

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <cuda_runtime_api.h>

#include "engine/clock.h"
#include "engine/rng.h"
#include "nn/cuda/cuda_common.h"
#include "nn/cuda/cuda_dl.h"
#include "nn/cuda/kernels.h"
#include "nn/cuda/pack.h"
#include "train/cuda/train_kernels.h"

int gpu_train_built(void) { return 1; }

#define GT_ALIGN 256
#define GT_WS_LIMIT ((size_t)512 << 20) /* largest cuDNN workspace accepted */
#define GT_MARGIN ((size_t)512 << 20)   /* free memory left to others */

/* Channel-count slots of the activation descriptors. */
enum { SLOT_IN, SLOT_TOWER, SLOT_POL, SLOT_VAL, N_SLOTS };
/* Conv shapes sharing algorithm choices. */
enum { SHAPE_IN, SHAPE_TOWER, SHAPE_POL, SHAPE_VAL, N_SHAPES };

/* One conv + BN (+ ReLU) layer. */
typedef struct gt_layer {
	int cin, cout, creal, k; /* padded channels in and out, real out, kernel */
	int slot_in, slot_out, shape;
	long w_off, nw;          /* compute conv weights: offset, elements */
	size_t o_w, o_b, o_mean, o_var, o_gamma, o_beta; /* indices in net->data */
	int stat;                /* first accumulator index (J) */
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	void *z;                 /* conv output [m][hw][cout], compute type */
	void *a;                 /* layer output, type adt */
	nn_dtype adt;            /* compute type; fp32 for the head convs */
	float *mean, *var, *rstd; /* batch statistics [cout] */
	float *loc;              /* [2][cout] dbeta, dgamma of the micro-batch */
	/* Squeeze-excitation, on an SE block's second layer (se 1): its BN
	 * writes u, the gate's input, and the gate writes a (+ skip, ReLU). */
	int se;
	size_t o_s1w, o_s2w;     /* se1 (C -> S), se2 (S -> 2C) in net->data */
	void *u;                 /* BN output [m][hw][cout], compute type */
	tk_se sop;               /* its operands: weights, gradients, buffers */
} gt_layer;

struct gpu_trainer {
	train_options opt;       /* validated */
	gpu_train_options g;     /* validated */
	nn_arch arch;
	nn_net *host;            /* host net: the layout, and gpu_trainer_net's copy */
	uint8_t *role;           /* host roles (TK_ROLE_*) */
	size_t nf;               /* net->n_floats */
	int batch, micro, hw;
	int cin, c, pp, vp;      /* padded widths */
	nn_dtype dt;             /* compute type */
	size_t esz;              /* its bytes */
	cudnnDataType_t cdt;
	int L;                   /* layers: 2 B + 3 */
	gt_layer *layer;
	int J;                   /* BN channels in all */
	int se_s;                /* SE bottleneck S; 0 without SE blocks */
	/* Masked pooling (arch.masked_pool with SE blocks): the micro-batch's
	 * [m][hw] pool weights, made from its on-board plane(s) (on, also:
	 * nn_board_planes) before the forward, else NULL. */
	float *pool_w;
	int pool_on, pool_also;
	int64_t step;
	uint64_t rng;
	double scale;            /* loss scale */
	double last_scale;       /* scale of the last pass (grad_host unscales) */
	int good;                /* clean steps since the scale last changed */
	int64_t skipped_steps;
	gpu_grad_hooks hooks;
	int has_hooks;

	cudaStream_t stream;
	cudnnHandle_t dnn;
	cublasHandle_t blas;
	cudnnTensorDescriptor_t td[N_SLOTS];
	cudnnConvolutionFwdAlgo_t fwd[N_SHAPES];
	cudnnConvolutionBwdDataAlgo_t bwd_data[N_SHAPES];
	cudnnConvolutionBwdFilterAlgo_t bwd_filter[N_SHAPES];

	/* Weights allocation. */
	void *wmem;
	float *w, *grad, *mom[2]; /* master, gradient (+ GPU_TRAIN_TAIL), moments */
	uint8_t *drole;
	void *wc, *dwc;          /* conv compute weights and their gradients */
	long nwc;
	float *wfc, *dwfc;       /* head FC compute weights (fp32), gradient scratch */
	/* wfc holds the policy FC at 0, value_fc1 at fc1_off and, with the
	 * opponent-reply head, its FC at opp_off (the policy FC's shape) */
	long nfc, fc1_off, opp_off, dwfc_n;
	int32_t *map_conv, *map_fc, *rm, *rv;
	float *acc;              /* [3][J] running-stat accumulators */
	double *norm_part;
	tk_step_result *res;
	/* Activations allocation. */
	void *amem;
	float *bn_part;          /* [3][TK_PARTS][c max] */
	float *logits, *vh, *vout, *dlogits, *dvh, *dvout, *rowloss;
	float *dap, *dav;        /* head activation gradients, fp32 */
	/* The training heads (Go): offsets of their weights in net->data, and
	 * per micro-batch the ownership logits' gradient and losses [m * hw],
	 * the score outputs, gradients and losses [m]. */
	int own, score;
	size_t o_ow, o_ob, o_sw, o_sb;
	float *own_dz, *own_rl, *sout, *score_dy, *score_rl;
	/* The opponent-reply head: its FC's bias in net->data (its weights are
	 * gathered at opp_off), and per micro-batch its logits, their gradient
	 * [m * np] and losses [m]. */
	int opp;
	size_t o_qb;
	float *opp_logits, *dopp, *opp_rl;
	void *dzp, *dzv;         /* head conv-output gradients */
	void *gbuf[3];           /* tower gradients */
	void *ws;
	size_t ws_bytes;
	float *hb_planes, *hb_policy, *hb_value, *hb_wdl; /* host-batch staging */
	float *hb_own, *hb_own_w, *hb_score, *hb_score_w, *hb_opp;
	void *hb_x;

	char err[512];
};

static size_t gt_align(size_t n) { return (n + GT_ALIGN - 1) / GT_ALIGN * GT_ALIGN; }

static void *gt_carve(char *base, size_t *off, size_t bytes)
{
	void *p = base ? base + *off : NULL;
	*off += gt_align(bytes ? bytes : 1);
	return p;
}


/* Activations for micro-batch m (base NULL: count only). */
static size_t gt_carve_acts(gpu_trainer *t, char *base, int m)
{
	size_t off = 0;
	const nn_arch *a = &t->arch;
	long rows = (long)m * t->hw;
	for (int l = 0; l < t->L; l++) {
		gt_layer *y = &t->layer[l];
		void *z = gt_carve(base, &off, rows * y->cout * t->esz);
		void *ac = gt_carve(base, &off, rows * y->cout * nn_dtype_size(y->adt));
		float *st = gt_carve(base, &off, sizeof(float) * 5 * y->cout);
		if (base) {
			y->z = z, y->a = ac;
			y->mean = st, y->var = st + y->cout, y->rstd = st + 2 * y->cout;
			y->loc = st + 3 * y->cout;
		}
		if (!y->se)
			continue;
		void *u = gt_carve(base, &off, rows * y->cout * t->esz);
		float *pool = gt_carve(base, &off, sizeof(float) * m * y->creal);
		float *hid = gt_carve(base, &off, sizeof(float) * m * t->se_s);
		float *gate = gt_carve(base, &off, sizeof(float) * m * 2 * y->creal);
		if (base) {
			tk_se *e = &y->sop;
			size_t o1b = y->o_s1w + (size_t)t->se_s * y->creal;
			size_t o2b = y->o_s2w + (size_t)2 * y->creal * t->se_s;
			y->u = u;
			e->m = m, e->hw = t->hw, e->cp = y->cout, e->creal = y->creal, e->s = t->se_s;
			e->w1 = t->w + y->o_s1w, e->b1 = t->w + o1b;
			e->w2 = t->w + y->o_s2w, e->b2 = t->w + o2b;
			e->gw1 = t->grad + y->o_s1w, e->gb1 = t->grad + o1b;
			e->gw2 = t->grad + y->o_s2w, e->gb2 = t->grad + o2b;
			e->pool = pool, e->hid = hid, e->gate = gate;
		}
	}
	/* The SE backward's scratch and the pool weights, shared by the blocks. */
	int sc = t->se_s ? a->channels : 0;
	int masked = t->se_s && a->masked_pool;
	float *sdz = gt_carve(base, &off, sizeof(float) * m * 2 * sc);
	float *sdh = gt_carve(base, &off, sizeof(float) * m * t->se_s);
	float *sdp = gt_carve(base, &off, sizeof(float) * m * sc);
	float *spw = gt_carve(base, &off, masked ? sizeof(float) * rows : 0);
	if (base)
		t->pool_w = masked ? spw : NULL;
	for (int l = 0; base && l < t->L; l++)
		if (t->layer[l].se) {
			tk_se *e = &t->layer[l].sop;
			e->dz = sdz, e->dhid = sdh, e->dpool = sdp;
			e->pw = base && masked ? spw : NULL;
		}
	/* BN partials are per layer output: the tower's and both heads' widths. */
	int cmax = t->c;
	if (t->pp > cmax)
		cmax = t->pp;
	if (t->vp > cmax)
		cmax = t->vp;
	float *bp = gt_carve(base, &off, sizeof(float) * 3 * TK_PARTS * (size_t)cmax);
	int np = a->policy_outputs, vo = a->value_outputs, vhid = a->value_hidden;
	float *lg = gt_carve(base, &off, sizeof(float) * m * np);
	float *dl = gt_carve(base, &off, sizeof(float) * m * np);
	float *vh = gt_carve(base, &off, sizeof(float) * m * vhid);
	float *dvh = gt_carve(base, &off, sizeof(float) * m * vhid);
	float *vout = gt_carve(base, &off, sizeof(float) * m * vo);
	float *dvout = gt_carve(base, &off, sizeof(float) * m * vo);
	float *rl = gt_carve(base, &off, sizeof(float) * m * 2);
	/* The heads' scratch, and their host-batch staging, only with them. */
	int ho = t->own, hs = t->score;
	float *odz = gt_carve(base, &off, ho ? sizeof(float) * rows : 0);
	float *orl = gt_carve(base, &off, ho ? sizeof(float) * rows : 0);
	float *so = gt_carve(base, &off, hs ? sizeof(float) * m : 0);
	float *sdy = gt_carve(base, &off, hs ? sizeof(float) * m : 0);
	float *srl = gt_carve(base, &off, hs ? sizeof(float) * m : 0);
	float *hown = gt_carve(base, &off, ho ? sizeof(float) * t->batch * t->hw : 0);
	float *hownw = gt_carve(base, &off, ho ? sizeof(float) * t->batch : 0);
	float *hsc = gt_carve(base, &off, hs ? sizeof(float) * t->batch : 0);
	float *hscw = gt_carve(base, &off, hs ? sizeof(float) * t->batch : 0);
	int hq = t->opp;
	float *qlg = gt_carve(base, &off, hq ? sizeof(float) * m * np : 0);
	float *qdl = gt_carve(base, &off, hq ? sizeof(float) * m * np : 0);
	float *qrl = gt_carve(base, &off, hq ? sizeof(float) * m : 0);
	float *hq_t = gt_carve(base, &off, hq ? sizeof(float) * t->batch * np : 0);
	float *dap = gt_carve(base, &off, sizeof(float) * rows * t->pp);
	float *dav = gt_carve(base, &off, sizeof(float) * rows * t->vp);
	void *dzp = gt_carve(base, &off, t->esz * rows * t->pp);
	void *dzv = gt_carve(base, &off, t->esz * rows * t->vp);
	void *g[3];
	for (int i = 0; i < 3; i++)
		g[i] = gt_carve(base, &off, t->esz * rows * t->c);
	size_t in_n = (size_t)a->in_planes * t->hw;
	float *hp = gt_carve(base, &off, sizeof(float) * t->batch * in_n);
	float *hpol = gt_carve(base, &off, sizeof(float) * t->batch * np);
	float *hval = gt_carve(base, &off, sizeof(float) * t->batch);
	float *hwdl = gt_carve(base, &off, sizeof(float) * t->batch * 3);
	void *hx = gt_carve(base, &off, t->esz * t->batch * t->hw * t->cin);
	void *ws = gt_carve(base, &off, t->ws_bytes);
	if (base) {
		t->bn_part = bp, t->logits = lg, t->dlogits = dl, t->vh = vh, t->dvh = dvh;
		t->vout = vout, t->dvout = dvout, t->rowloss = rl, t->dap = dap, t->dav = dav;
		t->dzp = dzp, t->dzv = dzv;
		t->own_dz = odz, t->own_rl = orl, t->sout = so, t->score_dy = sdy, t->score_rl = srl;
		t->hb_own = hown, t->hb_own_w = hownw, t->hb_score = hsc, t->hb_score_w = hscw;
		t->opp_logits = qlg, t->dopp = qdl, t->opp_rl = qrl, t->hb_opp = hq_t;
		for (int i = 0; i < 3; i++)
			t->gbuf[i] = g[i];
		t->hb_planes = hp, t->hb_policy = hpol, t->hb_value = hval, t->hb_wdl = hwdl;
		t->hb_x = hx, t->ws = ws;
	}
	return off;
}

static void gt_layer_init(gpu_trainer *t, gt_layer *y, const nn_conv *cv, int cin_pad, int slot_in,
			  int slot_out, int shape, nn_dtype adt)
{
	const float *d = t->host->data;
	y->cin = cin_pad;
	y->cout = nn_pad8(cv->c_out);
	y->creal = cv->c_out;
	y->k = cv->k;
	y->slot_in = slot_in, y->slot_out = slot_out, y->shape = shape;
	y->adt = adt;
	y->o_w = (size_t)(cv->w - d), y->o_b = (size_t)(cv->b - d);
	y->o_mean = (size_t)(cv->bn_mean - d), y->o_var = (size_t)(cv->bn_var - d);
	y->o_gamma = (size_t)(cv->bn_gamma - d), y->o_beta = (size_t)(cv->bn_beta - d);
	y->nw = (long)y->cout * y->k * y->k * y->cin;
	y->w_off = t->nwc;
	t->nwc += (y->nw + 63) / 64 * 64; /* keeps every layer's weights aligned */
	y->stat = t->J;
	t->J += y->creal;
}

/* Index maps from compute layouts to net->data, roles, running-stat maps. */
static void gt_host_maps(gpu_trainer *t, int32_t *mc, int32_t *mf, int32_t *rm, int32_t *rv)
{
	const nn_net *n = t->host;
	const nn_arch *a = &t->arch;
	for (long i = 0; i < t->nwc; i++)
		mc[i] = -1;
	for (int l = 0; l < t->L; l++) {
		const gt_layer *y = &t->layer[l];
		int k = y->k, ci = (l == 0 ? a->in_planes : a->channels);
		for (int o = 0; o < y->cout; o++)
			for (int r = 0; r < k; r++)
				for (int s = 0; s < k; s++)
					for (int i = 0; i < y->cin; i++) {
						long at = y->w_off + (((long)o * k + r) * k + s) * y->cin + i;
						if (o < y->creal && i < ci)
							mc[at] = (int32_t)(y->o_w +
									   (((size_t)o * ci + i) * k + r) * k + s);
					}
		for (int c = 0; c < y->creal; c++) {
			rm[y->stat + c] = (int32_t)(y->o_mean + c);
			rv[y->stat + c] = (int32_t)(y->o_var + c);
		}
	}
	/* Head FCs read NHWC [hw][c_pad]; net.h flattens NCHW. */
	const nn_fc *fcs[3] = { &n->policy_fc, &n->value_fc1, &n->opp_fc };
	int cr[3] = { a->policy_channels, a->value_channels, a->policy_channels };
	int cp[3] = { t->pp, t->vp, t->pp };
	long base[3] = { 0, t->fc1_off, t->opp_off };
	for (long i = 0; i < t->nfc; i++)
		mf[i] = -1; /* the alignment gaps between the FCs are gathered too */
	for (int f = 0; f < 2 + t->opp; f++) {
		size_t ow = (size_t)(fcs[f]->w - n->data);
		for (int o = 0; o < fcs[f]->n_out; o++)
			for (int p = 0; p < t->hw; p++)
				for (int c = 0; c < cp[f]; c++)
					mf[base[f] + ((long)o * t->hw + p) * cp[f] + c] =
						c < cr[f] ? (int32_t)(ow + (size_t)o * cr[f] * t->hw +
								      (size_t)c * t->hw + p)
							  : -1;
	}
}

static void gt_roles(gpu_trainer *t)
{
	const nn_net *n = t->host;
	memset(t->role, TK_ROLE_PARAM, t->nf);
	for (int l = 0; l < t->L; l++) {
		const gt_layer *y = &t->layer[l];
		int ci = l == 0 ? t->arch.in_planes : t->arch.channels;
		memset(t->role + y->o_w, TK_ROLE_DECAY, (size_t)y->creal * ci * y->k * y->k);
		memset(t->role + y->o_mean, TK_ROLE_BUFFER, (size_t)y->creal);
		memset(t->role + y->o_var, TK_ROLE_BUFFER, (size_t)y->creal);
		if (y->se) {
			/* The SE FCs' weights decay, as the CPU trainer's. */
			size_t c = (size_t)y->creal, sw = (size_t)t->se_s * c;
			memset(t->role + y->o_s1w, TK_ROLE_DECAY, sw);
			memset(t->role + y->o_s2w, TK_ROLE_DECAY, 2 * sw);
		}
	}
	const nn_fc *fcs[6] = { &n->policy_fc, &n->value_fc1, &n->value_fc2, &n->opp_fc,
				&n->own_fc, &n->score_fc };
	for (int f = 0; f < 6; f++)
		if (fcs[f]->w)
			memset(t->role + (fcs[f]->w - n->data), TK_ROLE_DECAY,
			       (size_t)fcs[f]->n_in * fcs[f]->n_out);
}

/* Algorithms of each shape for the descriptors of micro-batch size. */
static int gt_algos(gpu_trainer *t, char *err, size_t errlen)
{
	int rc = 0;
	int fp32 = t->dt == NN_DTYPE_FP32;
	t->ws_bytes = 0;
	for (int s = 0; s < N_SHAPES; s++) {
		gt_layer *y = NULL;
		for (int l = 0; l < t->L && !y; l++)
			if (t->layer[l].shape == s)
				y = &t->layer[l];
		if (!y)
			continue; /* no tower without blocks */
		cudnnTensorDescriptor_t x = t->td[y->slot_in], o = t->td[y->slot_out];
		int got = 0, pick = -1;
		size_t need = 0;
		cudnnConvolutionFwdAlgoPerf_t pf[16];
		CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(t->dnn, x, y->wd, y->cd, o, 16, &got,
								   pf));
		for (int i = 0; i < got && pick < 0; i++)
			if (pf[i].status == CUDNN_STATUS_SUCCESS && pf[i].memory <= GT_WS_LIMIT &&
			    (!fp32 || pf[i].mathType != CUDNN_TENSOR_OP_MATH))
				pick = i;
		if (pick < 0) {
			snprintf(err, errlen, "cuDNN offers no forward algorithm for a %dx%d conv "
				 "%d -> %d channels", y->k, y->k, y->cin, y->cout);
			return -1;
		}
		t->fwd[s] = pf[pick].algo;
		CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(t->dnn, x, y->wd, y->cd, o,
								    t->fwd[s], &need));
		if (need > t->ws_bytes)
			t->ws_bytes = need;
		/* Backward: deterministic algorithms first, so a resumed run
		 * repeats its steps. */
		cudnnConvolutionBwdFilterAlgoPerf_t pw[16];
		CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(t->dnn, x, o, y->cd, y->wd, 16,
									  &got, pw));
		pick = -1;
		for (int pass = 0; pass < 2 && pick < 0; pass++)
			for (int i = 0; i < got && pick < 0; i++)
				if (pw[i].status == CUDNN_STATUS_SUCCESS && pw[i].memory <= GT_WS_LIMIT &&
				    (!fp32 || pw[i].mathType != CUDNN_TENSOR_OP_MATH) &&
				    (pass || pw[i].determinism == CUDNN_DETERMINISTIC))
					pick = i;
		if (pick < 0) {
			snprintf(err, errlen, "cuDNN offers no backward-filter algorithm for a %dx%d "
				 "conv %d -> %d channels", y->k, y->k, y->cin, y->cout);
			return -1;
		}
		t->bwd_filter[s] = pw[pick].algo;
		CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(t->dnn, x, o, y->cd, y->wd,
									   t->bwd_filter[s], &need));
		if (need > t->ws_bytes)
			t->ws_bytes = need;
		if (s == SHAPE_IN)
			continue; /* no gradient is wanted for the input planes */
		cudnnConvolutionBwdDataAlgoPerf_t pd[16];
		CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(t->dnn, y->wd, o, y->cd, x, 16,
									&got, pd));
		pick = -1;
		for (int pass = 0; pass < 2 && pick < 0; pass++)
			for (int i = 0; i < got && pick < 0; i++)
				if (pd[i].status == CUDNN_STATUS_SUCCESS && pd[i].memory <= GT_WS_LIMIT &&
				    (!fp32 || pd[i].mathType != CUDNN_TENSOR_OP_MATH) &&
				    (pass || pd[i].determinism == CUDNN_DETERMINISTIC))
					pick = i;
		if (pick < 0) {
			snprintf(err, errlen, "cuDNN offers no backward-data algorithm for a %dx%d "
				 "conv %d -> %d channels", y->k, y->k, y->cin, y->cout);
			return -1;
		}
		t->bwd_data[s] = pd[pick].algo;
		CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(t->dnn, y->wd, o, y->cd, x,
									 t->bwd_data[s], &need));
		if (need > t->ws_bytes)
			t->ws_bytes = need;
	}
out:
	return rc;
}

static int gt_set_descs(gpu_trainer *t, int m, char *err, size_t errlen)
{
	int rc = 0;
	int ch[N_SLOTS] = { t->cin, t->c, t->pp, t->vp };
	for (int s = 0; s < N_SLOTS; s++)
		CUDNN_CHECK(cudnnSetTensor4dDescriptor(t->td[s], CUDNN_TENSOR_NHWC, t->cdt, m, ch[s],
						       t->arch.board_h, t->arch.board_w));
out:
	return rc;
}

/* Uploads master weights from host net data (and recasts). */
static int gt_upload_weights(gpu_trainer *t, const float *data, char *err, size_t errlen)
{
	int rc = 0;
	CUDA_CHECK(cudaMemcpyAsync(t->w, data, t->nf * sizeof(float), cudaMemcpyHostToDevice,
				   t->stream));
	CUDA_CHECK(tk_gather(t->w, t->map_conv, t->nwc, t->dt, t->wc, t->stream));
	CUDA_CHECK(tk_gather(t->w, t->map_fc, t->nfc, NN_DTYPE_FP32, t->wfc, t->stream));
	CUDA_CHECK(cudaStreamSynchronize(t->stream));
out:
	return rc;
}

gpu_trainer *gpu_trainer_new(const nn_net *net, const train_options *o,
			     const gpu_train_options *g, char *err, size_t errlen)
{
	int rc = 0;
	gpu_trainer *t = NULL;
	const nn_arch *a = &net->arch;
	int32_t *hmap = NULL;
	if (train_options_check(o, err, errlen) < 0 || gpu_train_options_check(g, o->batch, err,
										 errlen) < 0)
		return NULL;
	if (net->bn_folded) {
		snprintf(err, errlen, "the net has its batch norms folded (an inference export); "
			 "training needs the unfolded form");
		return NULL;
	}
	for (int i = 0; i < a->blocks; i++)
		if (a->block_kind[i] != NN_BLOCK_PLAIN && a->block_kind[i] != NN_BLOCK_SE) {
			snprintf(err, errlen, "block %d is of kind %d: the GPU trainer trains plain "
				 "and squeeze-excitation blocks", i, (int)a->block_kind[i]);
			return NULL;
		}
	if (a->value_outputs != 1 && a->value_outputs != 3) {
		snprintf(err, errlen, "value head of %d outputs: 1 or 3 train", a->value_outputs);
		return NULL;
	}
	if (net->n_floats >= (size_t)INT32_MAX) {
		snprintf(err, errlen, "net of %zu floats: too large for the index maps",
			 net->n_floats);
		return NULL;
	}
	if (g->device >= nn_cuda_device_count()) {
		snprintf(err, errlen, "no CUDA device %d (%d found)", g->device,
			 nn_cuda_device_count());
		return NULL;
	}
	if (nn_cuda_dl_ready(err, errlen) < 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->host = nn_net_clone(net))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	t->opt = *o;
	t->g = *g;
	t->arch = *a;
	t->nf = net->n_floats;
	t->batch = o->batch;
	t->hw = a->board_w * a->board_h;
	t->cin = nn_pad8(a->in_planes), t->c = nn_pad8(a->channels);
	t->pp = nn_pad8(a->policy_channels), t->vp = nn_pad8(a->value_channels);
	nn_board_planes(a->encoding, &t->pool_on, &t->pool_also);
	t->dt = g->precision; /* fp32, fp16 or bf16: checked above */
	t->esz = nn_dtype_size(t->dt);
	t->cdt = t->dt == NN_DTYPE_FP16 ? CUDNN_DATA_HALF
	       : t->dt == NN_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16
					: CUDNN_DATA_FLOAT;
	t->rng = o->seed;
	t->scale = g->precision == NN_DTYPE_FP16 ? g->loss_scale : 1.0;
	t->last_scale = t->scale;
	t->L = 2 * a->blocks + 3;
	t->own = a->ownership != 0, t->score = a->score != 0;
	if (t->own) {
		t->o_ow = (size_t)(net->own_fc.w - net->data);
		t->o_ob = (size_t)(net->own_fc.b - net->data);
	}
	if (t->score) {
		t->o_sw = (size_t)(net->score_fc.w - net->data);
		t->o_sb = (size_t)(net->score_fc.b - net->data);
	}
	t->opp = a->opp_policy != 0;
	if (t->opp)
		t->o_qb = (size_t)(net->opp_fc.b - net->data);
	t->layer = calloc((size_t)t->L, sizeof(*t->layer));
	t->role = malloc(t->nf);
	if (!t->layer || !t->role) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	nn_net *h = t->host;
	gt_layer_init(t, &t->layer[0], &h->input, t->cin, SLOT_IN, SLOT_TOWER, SHAPE_IN, t->dt);
	for (int i = 0; i < a->blocks; i++) {
		gt_layer_init(t, &t->layer[1 + 2 * i], &h->block[i].conv1, t->c, SLOT_TOWER, SLOT_TOWER,
			      SHAPE_TOWER, t->dt);
		gt_layer_init(t, &t->layer[2 + 2 * i], &h->block[i].conv2, t->c, SLOT_TOWER, SLOT_TOWER,
			      SHAPE_TOWER, t->dt);
		if (a->block_kind[i] == NN_BLOCK_SE) {
			gt_layer *y = &t->layer[2 + 2 * i];
			const nn_block *k = &h->block[i];
			y->se = 1;
			y->o_s1w = (size_t)(k->se1.w - h->data);
			y->o_s2w = (size_t)(k->se2.w - h->data);
			/* tk_se takes each FC's bias right after its weights. */
			assert(k->se1.b == k->se1.w + (size_t)a->se_channels * a->channels &&
			       k->se2.b == k->se2.w + (size_t)2 * a->channels * a->se_channels);
			t->se_s = a->se_channels;
		}
	}
	gt_layer_init(t, &t->layer[t->L - 2], &h->policy_conv, t->c, SLOT_TOWER, SLOT_POL, SHAPE_POL,
		      NN_DTYPE_FP32);
	gt_layer_init(t, &t->layer[t->L - 1], &h->value_conv, t->c, SLOT_TOWER, SLOT_VAL, SHAPE_VAL,
		      NN_DTYPE_FP32);
	long kp = (long)t->hw * t->pp, kv = (long)t->hw * t->vp;
	t->fc1_off = ((long)a->policy_outputs * kp + 63) / 64 * 64;
	t->nfc = t->fc1_off + (long)a->value_hidden * kv;
	if (t->opp) {
		t->opp_off = (t->nfc + 63) / 64 * 64;
		t->nfc = t->opp_off + (long)a->policy_outputs * kp;
	}
	t->dwfc_n = (long)a->policy_outputs * kp > (long)a->value_hidden * kv
			    ? (long)a->policy_outputs * kp
			    : (long)a->value_hidden * kv;
	gt_roles(t);

	CUDA_CHECK(cudaSetDevice(g->device));
	CUDA_CHECK(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
	CUDNN_CHECK(cudnnCreate(&t->dnn));
	CUDNN_CHECK(cudnnSetStream(t->dnn, t->stream));
	CUBLAS_CHECK(cublasCreate(&t->blas));
	CUBLAS_CHECK(cublasSetStream(t->blas, t->stream));
	/* The head FCs are fp32 in every mode; pedantic math keeps TF32 out so
	 * fp32 steps match the CPU's. */
	CUBLAS_CHECK(cublasSetMathMode(t->blas, CUBLAS_PEDANTIC_MATH));
	for (int s = 0; s < N_SLOTS; s++)
		CUDNN_CHECK(cudnnCreateTensorDescriptor(&t->td[s]));
	for (int l = 0; l < t->L; l++) {
		gt_layer *y = &t->layer[l];
		CUDNN_CHECK(cudnnCreateFilterDescriptor(&y->wd));
		CUDNN_CHECK(cudnnSetFilter4dDescriptor(y->wd, t->cdt, CUDNN_TENSOR_NHWC, y->cout, y->cin,
						       y->k, y->k));
		CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&y->cd));
		CUDNN_CHECK(cudnnSetConvolution2dDescriptor(y->cd, y->k / 2, y->k / 2, 1, 1, 1, 1,
							    CUDNN_CROSS_CORRELATION,
							    CUDNN_DATA_FLOAT));
		CUDNN_CHECK(cudnnSetConvolutionMathType(
			y->cd, t->dt == NN_DTYPE_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
	}

	/* Weights: one allocation. */
	int nmom = o->optimizer == TRAIN_OPTIMIZER_ADAMW ? 2 : 1;
	size_t off = 0, nf = t->nf;
	for (int pass = 0; pass < 2; pass++) {
		char *b = pass ? t->wmem : NULL;
		off = 0;
		t->w = gt_carve(b, &off, nf * 4);
		t->grad = gt_carve(b, &off, (nf + GPU_TRAIN_TAIL) * 4);
		for (int k = 0; k < nmom; k++)
			t->mom[k] = gt_carve(b, &off, nf * 4);
		t->drole = gt_carve(b, &off, nf);
		t->wc = gt_carve(b, &off, (size_t)t->nwc * t->esz);
		t->dwc = gt_carve(b, &off, (size_t)t->nwc * t->esz);
		t->wfc = gt_carve(b, &off, (size_t)t->nfc * 4);
		t->dwfc = gt_carve(b, &off, (size_t)t->dwfc_n * 4);
		t->map_conv = gt_carve(b, &off, (size_t)t->nwc * 4);
		t->map_fc = gt_carve(b, &off, (size_t)t->nfc * 4);
		t->rm = gt_carve(b, &off, (size_t)t->J * 4);
		t->rv = gt_carve(b, &off, (size_t)t->J * 4);
		t->acc = gt_carve(b, &off, (size_t)t->J * 3 * 4);
		t->norm_part = gt_carve(b, &off, sizeof(double) * 3 * TK_NORM_PARTS);
		t->res = gt_carve(b, &off, sizeof(tk_step_result));
		if (!pass)
			CUDA_CHECK(cudaMalloc(&t->wmem, off));
	}
	CUDA_CHECK(cudaMemset(t->wmem, 0, off));
	size_t nmap = (size_t)t->nwc + (size_t)t->nfc + 2 * (size_t)t->J;
	hmap = malloc(nmap * sizeof(int32_t));
	if (!hmap) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	gt_host_maps(t, hmap, hmap + t->nwc, hmap + t->nwc + t->nfc,
		     hmap + t->nwc + t->nfc + t->J);
	CUDA_CHECK(cudaMemcpy(t->map_conv, hmap, (size_t)t->nwc * 4, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(t->map_fc, hmap + t->nwc, (size_t)t->nfc * 4, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(t->rm, hmap + t->nwc + t->nfc, (size_t)t->J * 4,
			      cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(t->rv, hmap + t->nwc + t->nfc + t->J, (size_t)t->J * 4,
			      cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(t->drole, t->role, nf, cudaMemcpyHostToDevice));
	/* The memset and the map copies went to the default stream; the
	 * weights' upload and gathers below run on the trainer's non-blocking
	 * stream, which does not wait for it. */
	CUDA_CHECK(cudaStreamSynchronize(0));
	if (gt_upload_weights(t, net->data, err, errlen) < 0)
		goto fail;

	/* Micro-batch: forced, or the largest divisor whose activations fit. */
	size_t fr = 0, tot = 0;
	CUDA_CHECK(cudaMemGetInfo(&fr, &tot));
	size_t budget = fr > GT_MARGIN + GT_WS_LIMIT ? fr - GT_MARGIN - GT_WS_LIMIT : 0;
	int m = g->micro_batch;
	if (!m) {
		t->ws_bytes = 0;
		for (m = t->batch; m >= 2; m--)
			if (t->batch % m == 0 && gt_carve_acts(t, NULL, m) <= budget)
				break;
		if (m < 2) {
			snprintf(err, errlen, "not enough device memory for a micro-batch of 2 "
				 "(%zu MB free)", fr >> 20);
			goto fail;
		}
	}
	t->micro = m;
	if (gt_set_descs(t, m, err, errlen) < 0 || gt_algos(t, err, errlen) < 0)
		goto fail;
	CUDA_CHECK(cudaMalloc(&t->amem, gt_carve_acts(t, NULL, m)));
	gt_carve_acts(t, t->amem, m);
	CUDA_CHECK(cudaMemset(t->amem, 0, gt_carve_acts(t, NULL, m)));
	/* The copies and memsets above went to the default stream, which the
	 * trainer's non-blocking stream does not wait for. */
	CUDA_CHECK(cudaStreamSynchronize(0));
	free(hmap);
	return t;
out:
fail:
	(void)rc;
	free(hmap);
	gpu_trainer_free(t);
	return NULL;
}

void gpu_trainer_free(gpu_trainer *t)
{
	if (!t)
		return;
	if (t->stream) {
		cudaSetDevice(t->g.device);
		cudaStreamSynchronize(t->stream);
	}
	if (t->layer)
		for (int l = 0; l < t->L; l++) {
			if (t->layer[l].wd)
				cudnnDestroyFilterDescriptor(t->layer[l].wd);
			if (t->layer[l].cd)
				cudnnDestroyConvolutionDescriptor(t->layer[l].cd);
		}
	for (int s = 0; s < N_SLOTS; s++)
		if (t->td[s])
			cudnnDestroyTensorDescriptor(t->td[s]);
	if (t->blas)
		cublasDestroy(t->blas);
	if (t->dnn)
		cudnnDestroy(t->dnn);
	cudaFree(t->wmem);
	cudaFree(t->amem);
	if (t->stream)
		cudaStreamDestroy(t->stream);
	free(t->layer);
	free(t->role);
	nn_net_free(t->host);
	free(t);
}

/* ---- one pass ------------------------------------------------------------ */

static const float gt_one = 1.0f, gt_zero = 0.0f;

/* Y[m][N] = X[m][K] W[N][K]^T (row-major, fp32), through column-major
 * cuBLAS. */
static int gt_gemm(gpu_trainer *t, cublasOperation_t ta, cublasOperation_t tb, int M, int N, int K,
		   const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
		   char *err, size_t errlen)
{
	int rc = 0;
	CUBLAS_CHECK(cublasGemmEx(t->blas, ta, tb, M, N, K, &gt_one, A, CUDA_R_32F, lda, B,
				  CUDA_R_32F, ldb, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
				  CUBLAS_GEMM_DEFAULT));
out:
	return rc;
}

/* Forward of layer y from x (type of the previous output), BN in training
 * with stats reset when first, optional skip; an SE layer's BN writes u
 * and its gate the output. */
static int gt_layer_fwd(gpu_trainer *t, gt_layer *y, const void *x, const void *skip, long rows,
			int first, char *err, size_t errlen)
{
	int rc = 0;
	const float *w = t->w;
	char *wc = (char *)t->wc + (size_t)y->w_off * t->esz;
	CUDNN_CHECK(cudnnConvolutionForward(t->dnn, &gt_one, t->td[y->slot_in], x, y->wd, wc, y->cd,
					    t->fwd[y->shape], t->ws, t->ws_bytes, &gt_zero,
					    t->td[y->slot_out], y->z));
	float *acc = t->acc + y->stat;
	CUDA_CHECK(tk_bn_stats(y->z, t->dt, rows, y->cout, y->creal, w + y->o_b, t->bn_part, y->mean,
			       y->var, y->rstd, acc, acc + t->J, acc + 2 * t->J, first, t->stream));
	if (y->se) {
		CUDA_CHECK(tk_bn_apply(y->z, t->dt, rows, y->cout, y->creal, w + y->o_b, y->mean,
				       y->rstd, w + y->o_gamma, w + y->o_beta, NULL, t->dt, 0, y->u,
				       t->dt, t->stream));
		CUDA_CHECK(tk_se_forward(&y->sop, y->u, t->dt, skip, t->dt, y->a, y->adt, t->stream));
	} else {
		CUDA_CHECK(tk_bn_apply(y->z, t->dt, rows, y->cout, y->creal, w + y->o_b, y->mean,
				       y->rstd, w + y->o_gamma, w + y->o_beta, skip, t->dt, 1, y->a,
				       y->adt, t->stream));
	}
out:
	return rc;
}

/* Backward of layer y: g = dL/d(output) of type gdt (an SE layer's: dL/du,
 * from tk_se_backward, which took the ReLU); the conv-output gradient into dz
 * (compute type); dskip (or NULL); weight gradients scattered into grad;
 * the input gradient into dx (NULL: none) with accumulate (beta 1) when
 * dx_acc. */
static int gt_layer_bwd(gpu_trainer *t, gt_layer *y, const void *x, const void *g, nn_dtype gdt,
			void *dz, void *dskip, void *dx, int dx_acc, long rows, char *err,
			size_t errlen)
{
	int rc = 0;
	float *gr = t->grad;
	CUDA_CHECK(tk_bn_backward(g, gdt, y->a, y->adt, !y->se, y->z, t->dt, rows, y->cout, y->creal,
				  t->w + y->o_b, y->mean, y->rstd, t->w + y->o_gamma, t->bn_part,
				  y->loc, gr + y->o_gamma, gr + y->o_beta, gr + y->o_b, 1, dz, dskip,
				  t->dt, t->stream));
	char *dwc = (char *)t->dwc + (size_t)y->w_off * t->esz;
	CUDNN_CHECK(cudnnConvolutionBackwardFilter(t->dnn, &gt_one, t->td[y->slot_in], x,
						   t->td[y->slot_out], dz, y->cd,
						   t->bwd_filter[y->shape], t->ws, t->ws_bytes,
						   &gt_zero, y->wd, dwc));
	CUDA_CHECK(tk_scatter(dwc, t->dt, t->map_conv + y->w_off, y->nw, gr, 1, t->stream));
	if (dx) {
		char *wc = (char *)t->wc + (size_t)y->w_off * t->esz;
		CUDNN_CHECK(cudnnConvolutionBackwardData(t->dnn, &gt_one, y->wd, wc,
							 t->td[y->slot_out], dz, y->cd,
							 t->bwd_data[y->shape], t->ws, t->ws_bytes,
							 dx_acc ? &gt_one : &gt_zero,
							 t->td[y->slot_in], dx));
	}
out:
	return rc;
}

/* Hands grad[lo, *frontier) to the hooks (when on) and moves the frontier. */
static int gt_ready(gpu_trainer *t, int on, size_t lo, size_t *frontier)
{
	if (!on || lo >= *frontier)
		return 0;
	int r = t->hooks.ready(t->hooks.ctx, lo, *frontier - lo, t->stream);
	*frontier = lo;
	if (r != 0) {
		snprintf(t->err, sizeof(t->err), "gradient hook ready() failed");
		return -1;
	}
	return 0;
}

/* Forward, loss and backward of micro-batch mi of the device batch b,
 * accumulating into the zeroed gradient. */
static int gt_micro(gpu_trainer *t, const gpu_batch *b, int mi, int hooks)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	const nn_arch *a = &t->arch;
	const nn_net *n = t->host;
	int m = t->micro, B = a->blocks, L = t->L, np = a->policy_outputs, vo = a->value_outputs;
	int vhid = a->value_hidden;
	long rows = (long)m * t->hw;
	const char *x = (const char *)b->planes + (size_t)mi * rows * t->cin * t->esz;
	const float *pol = b->policy + (size_t)mi * m * np, *val = b->value + (size_t)mi * m;
	const float *wdl = b->wdl ? b->wdl + (size_t)mi * m * 3 : NULL;
	float *gr = t->grad;
	const float *w = t->w;
	int first = mi == 0;

	/* Forward; masked pooling's weights first, from the input planes. */
	if (t->pool_w)
		CUDA_CHECK(tk_board_pool_weights(x, t->dt, m, t->hw, t->cin, t->pool_on,
						 t->pool_also, t->pool_w, t->stream));
	if (gt_layer_fwd(t, &t->layer[0], x, NULL, rows, first, err, errlen) < 0)
		return -1;
	for (int i = 0; i < B; i++) {
		gt_layer *l1 = &t->layer[1 + 2 * i], *l2 = &t->layer[2 + 2 * i];
		const void *in = t->layer[2 * i].a;
		if (gt_layer_fwd(t, l1, in, NULL, rows, first, err, errlen) < 0 ||
		    gt_layer_fwd(t, l2, l1->a, in, rows, first, err, errlen) < 0)
			return -1;
	}
	const void *top = t->layer[2 * B].a;
	gt_layer *lp = &t->layer[L - 2], *lv = &t->layer[L - 1];
	if (gt_layer_fwd(t, lp, top, NULL, rows, first, err, errlen) < 0 ||
	    gt_layer_fwd(t, lv, top, NULL, rows, first, err, errlen) < 0)
		return -1;
	int kp = t->hw * t->pp, kv = t->hw * t->vp;
	size_t o_pw = (size_t)(n->policy_fc.w - n->data), o_pb = (size_t)(n->policy_fc.b - n->data);
	size_t o_v1w = (size_t)(n->value_fc1.w - n->data), o_v1b = (size_t)(n->value_fc1.b - n->data);
	size_t o_v2w = (size_t)(n->value_fc2.w - n->data), o_v2b = (size_t)(n->value_fc2.b - n->data);
	if (gt_gemm(t, CUBLAS_OP_T, CUBLAS_OP_N, np, m, kp, t->wfc, kp, lp->a, kp, 0.0f, t->logits,
		    np, err, errlen) < 0 ||
	    gt_gemm(t, CUBLAS_OP_T, CUBLAS_OP_N, vhid, m, kv, t->wfc + t->fc1_off, kv, lv->a, kv,
		    0.0f, t->vh, vhid, err, errlen) < 0)
		return -1;
	CUDA_CHECK(tk_bias_act(t->logits, w + o_pb, m, np, 0, t->stream));
	/* The opponent-reply head: the policy FC's twin on the same input. */
	if (t->opp) {
		if (gt_gemm(t, CUBLAS_OP_T, CUBLAS_OP_N, np, m, kp, t->wfc + t->opp_off, kp, lp->a,
			    kp, 0.0f, t->opp_logits, np, err, errlen) < 0)
			return -1;
		CUDA_CHECK(tk_bias_act(t->opp_logits, w + t->o_qb, m, np, 0, t->stream));
	}
	CUDA_CHECK(tk_bias_act(t->vh, w + o_v1b, m, vhid, 1, t->stream));
	CUDA_CHECK(tk_fc_small(t->vh, m, vhid, w + o_v2w, w + o_v2b, vo, TK_ACT_NONE, t->vout,
			       t->stream));

	/* Loss: gradients scaled, normalised by the whole batch. */
	float inv_n = 1.0f / (float)t->batch, vw = (float)t->opt.value_weight;
	float own_wt = t->own ? (float)t->opt.own_weight : 0.0f;
	float score_wt = t->score ? (float)t->opt.score_weight : 0.0f;
	float opp_wt = t->opp ? (float)t->opt.opp_weight : 0.0f;
	CUDA_CHECK(tk_loss(t->logits, pol, np, t->vout, val, wdl, vo, m, inv_n, (float)t->scale, vw,
			   t->dlogits, t->dvout, t->rowloss, t->stream));
	/* The training heads: their losses into the tail before its total,
	 * their weights' gradients now (they end net->data, after value_fc2:
	 * the hooks get them with value_fc2's range, the first after the
	 * tail's). The opponent-reply FC sits there too, so its gradients
	 * are made now; its input gradient joins the policy FC's below. */
	if (t->opp) {
		const float *q = b->opp + (size_t)mi * m * np;
		CUDA_CHECK(tk_policy_loss(t->opp_logits, q, np, m, inv_n, opp_wt, (float)t->scale,
					  t->dopp, t->opp_rl, t->stream));
		CUDA_CHECK(tk_sum_into(t->opp_rl, m, inv_n, gr + t->nf + 6, t->stream));
		CUDA_CHECK(tk_colsum(t->dopp, m, np, gr + t->o_qb, 1, t->stream));
		if (gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_T, kp, np, m, lp->a, kp, t->dopp, np, 0.0f,
			    t->dwfc, kp, err, errlen) < 0)
			return -1;
		CUDA_CHECK(tk_scatter(t->dwfc, NN_DTYPE_FP32, t->map_fc + t->opp_off, (long)np * kp,
				      gr, 1, t->stream));
	}
	if (t->own) {
		const float *own = b->own + (size_t)mi * rows, *own_w = b->own_w + (size_t)mi * m;
		CUDA_CHECK(tk_own_loss(lv->a, rows, t->vp, a->value_channels, t->hw, w + t->o_ow,
				       w + t->o_ob, own, own_w,
				       (float)(t->scale * own_wt * inv_n / t->hw), t->own_dz, t->own_rl,
				       t->stream));
		CUDA_CHECK(tk_sum_into(t->own_rl, rows, inv_n / (float)t->hw, gr + t->nf + 4,
				       t->stream));
		CUDA_CHECK(tk_dot_rows(lv->a, rows, t->vp, a->value_channels, t->own_dz, gr + t->o_ow,
				       gr + t->o_ob, t->stream));
	}
	if (t->score) {
		const float *sc = b->score + (size_t)mi * m, *sc_w = b->score_w + (size_t)mi * m;
		CUDA_CHECK(tk_fc_small(t->vh, m, vhid, w + t->o_sw, w + t->o_sb, 1, TK_ACT_NONE,
				       t->sout, t->stream));
		CUDA_CHECK(tk_score_loss(t->sout, m, sc, sc_w, (float)(t->scale * score_wt * inv_n),
					 t->score_dy, t->score_rl, t->stream));
		CUDA_CHECK(tk_sum_into(t->score_rl, m, inv_n, gr + t->nf + 5, t->stream));
		CUDA_CHECK(tk_dot_rows(t->vh, m, vhid, vhid, t->score_dy, gr + t->o_sw, gr + t->o_sb,
				       t->stream));
	}
	CUDA_CHECK(tk_loss_sum(t->rowloss, m, inv_n, vw, opp_wt, own_wt, score_wt, gr + t->nf, 1,
			       t->stream));
	size_t frontier = t->nf + GPU_TRAIN_TAIL;
	if (gt_ready(t, hooks, t->nf, &frontier) < 0)
		return -1;

	/* Value head (the end of net->data), then the policy head. */
	CUDA_CHECK(tk_fc_small_backward(t->vh, m, vhid, w + o_v2w, vo, t->dvout, t->dvh, gr + o_v2w,
					gr + o_v2b, 1, t->stream));
	if (gt_ready(t, hooks, o_v2w, &frontier) < 0)
		return -1;
	if (t->score)
		CUDA_CHECK(tk_add_outer(t->dvh, m, vhid, vhid, t->score_dy, w + t->o_sw, t->stream));
	CUDA_CHECK(tk_relu_backward(t->dvh, t->vh, (long)m * vhid, t->stream));
	CUDA_CHECK(tk_colsum(t->dvh, m, vhid, gr + o_v1b, 1, t->stream));
	if (gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_T, kv, vhid, m, lv->a, kv, t->dvh, vhid, 0.0f, t->dwfc,
		    kv, err, errlen) < 0 ||
	    gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_N, kv, m, vhid, t->wfc + t->fc1_off, kv, t->dvh, vhid,
		    0.0f, t->dav, kv, err, errlen) < 0)
		return -1;
	CUDA_CHECK(tk_scatter(t->dwfc, NN_DTYPE_FP32, t->map_fc + t->fc1_off, (long)vhid * kv, gr,
			      1, t->stream));
	if (t->own)
		CUDA_CHECK(tk_add_outer(t->dav, rows, t->vp, a->value_channels, t->own_dz,
					w + t->o_ow, t->stream));
	if (gt_ready(t, hooks, o_v1w, &frontier) < 0)
		return -1;
	void *gA = t->gbuf[0], *gZ = t->gbuf[1], *gX = t->gbuf[2], *sw;
	if (gt_layer_bwd(t, lv, top, t->dav, NN_DTYPE_FP32, t->dzv, NULL, gA, 0, rows, err,
			 errlen) < 0 ||
	    gt_ready(t, hooks, lv->o_w, &frontier) < 0)
		return -1;
	CUDA_CHECK(tk_colsum(t->dlogits, m, np, gr + o_pb, 1, t->stream));
	if (gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_T, kp, np, m, lp->a, kp, t->dlogits, np, 0.0f,
		    t->dwfc, kp, err, errlen) < 0 ||
	    gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_N, kp, m, np, t->wfc, kp, t->dlogits, np, 0.0f, t->dap,
		    kp, err, errlen) < 0 ||
	    (t->opp && gt_gemm(t, CUBLAS_OP_N, CUBLAS_OP_N, kp, m, np, t->wfc + t->opp_off, kp,
			       t->dopp, np, 1.0f, t->dap, kp, err, errlen) < 0))
		return -1;
	CUDA_CHECK(tk_scatter(t->dwfc, NN_DTYPE_FP32, t->map_fc, (long)np * kp, gr, 1, t->stream));
	if (gt_ready(t, hooks, o_pw, &frontier) < 0)
		return -1;
	if (gt_layer_bwd(t, lp, top, t->dap, NN_DTYPE_FP32, t->dzp, NULL, gA, 1, rows, err,
			 errlen) < 0 ||
	    gt_ready(t, hooks, lp->o_w, &frontier) < 0)
		return -1;

	/* Tower: gA holds dL/d(block output). The second conv's BN backward
	 * (an SE block's gate backward, before it) writes the skip's gradient
	 * into gX; the first conv's backward data adds the path through the
	 * block onto it. */
	for (int i = B - 1; i >= 0; i--) {
		gt_layer *l1 = &t->layer[1 + 2 * i], *l2 = &t->layer[2 + 2 * i];
		const void *in = t->layer[2 * i].a;
		/* An SE block: the gate's backward first, dL/du into gA in place. */
		if (l2->se)
			CUDA_CHECK(tk_se_backward(&l2->sop, gA, t->dt, l2->a, l2->adt, l2->u, t->dt,
						  gX, t->dt, gA, t->dt, t->stream));
		if (gt_layer_bwd(t, l2, l1->a, gA, t->dt, gZ, l2->se ? NULL : gX, gA, 0, rows, err,
				 errlen) < 0 ||
		    gt_ready(t, hooks, l2->o_w, &frontier) < 0 ||
		    gt_layer_bwd(t, l1, in, gA, t->dt, gZ, NULL, gX, 1, rows, err, errlen) < 0 ||
		    gt_ready(t, hooks, l1->o_w, &frontier) < 0)
			return -1;
		sw = gA, gA = gX, gX = sw;
	}
	if (gt_layer_bwd(t, &t->layer[0], x, gA, t->dt, gZ, NULL, NULL, 0, rows, err, errlen) < 0 ||
	    gt_ready(t, hooks, 0, &frontier) < 0)
		return -1;
out:
	return rc;
}

/* The whole pass over b; with update, the optimizer step too. */
static int gt_run(gpu_trainer *t, const gpu_batch *b, int update, train_stats *st)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	double t0 = clock_now();
	const train_options *o = &t->opt;
	if (b->n != t->batch || b->hw != t->hw || b->c_pad != t->cin ||
	    b->n_actions != t->arch.policy_outputs || b->dtype != t->dt) {
		snprintf(err, errlen, "batch of %d x %d points x %d planes (%d actions, %s) "
			 "does not fit the trainer (%d x %d x %d, %d, %s)", b->n, b->hw,
			 b->c_pad, b->n_actions, nn_dtype_name(b->dtype), t->batch, t->hw, t->cin,
			 t->arch.policy_outputs, nn_dtype_name(t->dt));
		return -1;
	}
	if ((t->own && (!b->own || !b->own_w)) || (t->score && (!b->score || !b->score_w)) ||
	    (t->opp && !b->opp)) {
		const char *head = t->own && (!b->own || !b->own_w) ? "an ownership"
				   : t->score && (!b->score || !b->score_w) ? "a score"
				   : "an opponent-reply";
		snprintf(err, errlen, "the net has %s head and the batch no targets for it", head);
		return -1;
	}
	int hooks = update && t->has_hooks, k = t->batch / t->micro;
	CUDA_CHECK(cudaSetDevice(t->g.device));
	CUDA_CHECK(cudaMemsetAsync(t->grad, 0, (t->nf + GPU_TRAIN_TAIL) * sizeof(float), t->stream));
	t->last_scale = t->scale;
	for (int mi = 0; mi < k; mi++)
		if (gt_micro(t, b, mi, hooks && mi == k - 1) < 0)
			return -1;
	if (hooks && t->hooks.finish(t->hooks.ctx, t->stream) != 0) {
		snprintf(err, errlen, "gradient hook finish() failed");
		return -1;
	}
	int sgd = o->optimizer == TRAIN_OPTIMIZER_SGD;
	float inv_scale = (float)(1.0 / t->scale), l2c = sgd ? (float)(2.0 * o->weight_decay) : 0;
	CUDA_CHECK(tk_grad_norm(t->grad, t->w, t->drole, (long)t->nf, inv_scale, l2c,
				update ? o->clip_norm : 0.0, t->norm_part, t->res, t->stream));
	double lr = train_lr_at(o, t->step);
	if (update) {
		tk_opt_params p;
		memset(&p, 0, sizeof(p));
		p.adamw = !sgd;
		p.lr = (float)lr;
		p.momentum = (float)o->momentum;
		p.inv_scale = inv_scale;
		p.l2c = l2c;
		double t1 = (double)(t->step + 1);
		p.b1 = (float)o->adam_beta1, p.b2 = (float)o->adam_beta2, p.eps = (float)o->adam_eps;
		p.bc1 = (float)(1.0 - pow(o->adam_beta1, t1));
		p.sbc2 = (float)sqrt(1.0 - pow(o->adam_beta2, t1));
		p.decay = (float)(1.0 - lr * o->weight_decay);
		CUDA_CHECK(tk_optimizer(t->w, t->grad, t->drole, t->mom[0], t->mom[1], (long)t->nf, p,
					t->res, t->stream));
		double M = (double)t->batch * t->hw;
		CUDA_CHECK(tk_running(t->w, t->rm, t->rv, t->acc, t->acc + t->J, t->acc + 2 * t->J,
				      t->J, 1.0f / (float)k, (float)o->bn_momentum,
				      (float)(M / (M - 1.0)), t->res, t->stream));
		CUDA_CHECK(tk_gather(t->w, t->map_conv, t->nwc, t->dt, t->wc, t->stream));
		CUDA_CHECK(tk_gather(t->w, t->map_fc, t->nfc, NN_DTYPE_FP32, t->wfc, t->stream));
	}
	tk_step_result r;
	float tail[GPU_TRAIN_TAIL];
	CUDA_CHECK(cudaMemcpyAsync(&r, t->res, sizeof(r), cudaMemcpyDeviceToHost, t->stream));
	CUDA_CHECK(cudaMemcpyAsync(tail, t->grad + t->nf, sizeof(tail), cudaMemcpyDeviceToHost,
				   t->stream));
	CUDA_CHECK(cudaStreamSynchronize(t->stream));
	double used = t->scale;
	int skipped = 0;
	if (update) {
		if (r.bad) {
			skipped = 1;
			t->skipped_steps++;
			t->good = 0;
			if (t->g.precision == NN_DTYPE_FP16)
				t->scale = fmax(1.0, t->scale * t->g.backoff);
		} else {
			t->step++;
			if (t->g.precision == NN_DTYPE_FP16 && ++t->good >= t->g.growth_interval) {
				t->good = 0;
				t->scale = fmin(16777216.0, t->scale * 2.0);
			}
		}
	}
	if (st) {
		double l2 = o->weight_decay * r.wsq;
		memset(st, 0, sizeof(*st));
		st->policy_loss = tail[1];
		st->value_loss = tail[2];
		st->own_loss = tail[4];
		st->score_loss = tail[5];
		st->opp_loss = tail[6];
		st->l2 = l2;
		st->loss = tail[0] + (sgd ? l2 : 0.0);
		st->grad_norm = update ? sqrt(r.norm2) : 0.0;
		st->lr = update ? lr : 0.0;
		st->step = t->step;
		st->loss_scale = used;
		st->skipped = skipped;
		st->skipped_steps = t->skipped_steps;
		st->compute_seconds = clock_now() - t0;
	}
out:
	return rc;
}

int gpu_trainer_step(gpu_trainer *t, const gpu_batch *b, train_stats *st)
{
	return gt_run(t, b, 1, st);
}

/* Uploads a host batch and expands its planes into the staging gpu_batch. */
static int gt_upload(gpu_trainer *t, const train_batch *hb, gpu_batch *b)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	const nn_arch *a = &t->arch;
	size_t in_n = (size_t)a->in_planes * t->hw;
	if (hb->n != t->batch || hb->in_size != (int)in_n || hb->n_actions != a->policy_outputs) {
		snprintf(err, errlen, "host batch of %d positions (%d floats, %d actions) does not "
			 "fit the trainer (%d, %zu, %d)", hb->n, hb->in_size, hb->n_actions, t->batch,
			 in_n, a->policy_outputs);
		return -1;
	}
	int n = hb->n, np = a->policy_outputs;
	CUDA_CHECK(cudaSetDevice(t->g.device));
	CUDA_CHECK(cudaMemcpyAsync(t->hb_planes, hb->planes, sizeof(float) * in_n * n,
				   cudaMemcpyHostToDevice, t->stream));
	CUDA_CHECK(cudaMemcpyAsync(t->hb_policy, hb->policy, sizeof(float) * np * n,
				   cudaMemcpyHostToDevice, t->stream));
	CUDA_CHECK(cudaMemcpyAsync(t->hb_value, hb->value, sizeof(float) * n,
				   cudaMemcpyHostToDevice, t->stream));
	if (hb->wdl)
		CUDA_CHECK(cudaMemcpyAsync(t->hb_wdl, hb->wdl, sizeof(float) * 3 * n,
					   cudaMemcpyHostToDevice, t->stream));
	/* The heads' targets, where the net has the head and the batch them
	 * (gt_run refuses a batch without them). */
	int own = t->own && hb->own && hb->own_w && hb->n_points == t->hw;
	int score = t->score && hb->score && hb->score_w;
	int opp = t->opp && hb->opp;
	if (own) {
		CUDA_CHECK(cudaMemcpyAsync(t->hb_own, hb->own, sizeof(float) * t->hw * n,
					   cudaMemcpyHostToDevice, t->stream));
		CUDA_CHECK(cudaMemcpyAsync(t->hb_own_w, hb->own_w, sizeof(float) * n,
					   cudaMemcpyHostToDevice, t->stream));
	}
	if (score) {
		CUDA_CHECK(cudaMemcpyAsync(t->hb_score, hb->score, sizeof(float) * n,
					   cudaMemcpyHostToDevice, t->stream));
		CUDA_CHECK(cudaMemcpyAsync(t->hb_score_w, hb->score_w, sizeof(float) * n,
					   cudaMemcpyHostToDevice, t->stream));
	}
	if (opp)
		CUDA_CHECK(cudaMemcpyAsync(t->hb_opp, hb->opp, sizeof(float) * np * n,
					   cudaMemcpyHostToDevice, t->stream));
	/* The inference backend's expansion. */
	CUDA_CHECK(nnk_expand_float(t->dt, t->hb_planes, n, a->in_planes, t->hw, t->cin,
				    t->hb_x, t->stream));
	memset(b, 0, sizeof(*b));
	b->n = b->cap = n;
	b->hw = t->hw;
	b->c_pad = t->cin;
	b->n_actions = np;
	b->dtype = t->dt;
	b->planes = t->hb_x;
	b->policy = t->hb_policy;
	b->value = t->hb_value;
	b->wdl = hb->wdl ? t->hb_wdl : NULL;
	b->own = own ? t->hb_own : NULL;
	b->own_w = own ? t->hb_own_w : NULL;
	b->score = score ? t->hb_score : NULL;
	b->score_w = score ? t->hb_score_w : NULL;
	b->opp = opp ? t->hb_opp : NULL;
out:
	return rc;
}

int gpu_trainer_step_host(gpu_trainer *t, const train_batch *hb, train_stats *st)
{
	gpu_batch b;
	double t0 = clock_now();
	if (gt_upload(t, hb, &b) < 0)
		return -1;
	double t1 = clock_now();
	if (gt_run(t, &b, 1, st) < 0)
		return -1;
	if (st)
		st->data_seconds = t1 - t0;
	return 0;
}

int gpu_trainer_gradient_host(gpu_trainer *t, const train_batch *hb, train_stats *st)
{
	gpu_batch b;
	if (gt_upload(t, hb, &b) < 0)
		return -1;
	return gt_run(t, &b, 0, st);
}

int gpu_trainer_grad_host(gpu_trainer *t, float *out)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	CUDA_CHECK(cudaSetDevice(t->g.device));
	CUDA_CHECK(cudaMemcpyAsync(out, t->grad, (t->nf + GPU_TRAIN_TAIL) * sizeof(float), cudaMemcpyDeviceToHost,
				   t->stream));
	CUDA_CHECK(cudaMemcpyAsync(t->host->data, t->w, t->nf * sizeof(float),
				   cudaMemcpyDeviceToHost, t->stream));
	CUDA_CHECK(cudaStreamSynchronize(t->stream));
	float inv = (float)(1.0 / t->last_scale);
	float c2 = t->opt.optimizer == TRAIN_OPTIMIZER_SGD ? (float)(2.0 * t->opt.weight_decay) : 0;
	for (size_t i = 0; i < t->nf; i++) {
		out[i] *= inv;
		if (t->role[i] == TK_ROLE_DECAY)
			out[i] += c2 * t->host->data[i];
	}
out:
	return rc;
}

void gpu_trainer_set_hooks(gpu_trainer *t, const gpu_grad_hooks *h)
{
	t->has_hooks = h && h->ready && h->finish;
	if (t->has_hooks)
		t->hooks = *h;
}

void *gpu_trainer_stream(gpu_trainer *t) { return t->stream; }
float *gpu_trainer_grad_device(gpu_trainer *t) { return t->grad; }

nn_net *gpu_trainer_net(gpu_trainer *t)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	CUDA_CHECK(cudaSetDevice(t->g.device));
	CUDA_CHECK(cudaMemcpyAsync(t->host->data, t->w, t->nf * sizeof(float),
				   cudaMemcpyDeviceToHost, t->stream));
	CUDA_CHECK(cudaStreamSynchronize(t->stream));
	t->host->meta.train_step = (uint64_t)t->step;
out:
	return rc < 0 ? NULL : t->host;
}

int gpu_trainer_set_weights(gpu_trainer *t, const nn_net *net)
{
	const nn_arch *a = &net->arch, *b = &t->arch;
	if (net->n_floats != t->nf || net->bn_folded || a->game != b->game ||
	    a->board_w != b->board_w || a->board_h != b->board_h || a->in_planes != b->in_planes ||
	    a->blocks != b->blocks || a->channels != b->channels ||
	    a->policy_channels != b->policy_channels || a->policy_outputs != b->policy_outputs ||
	    a->value_channels != b->value_channels || a->value_hidden != b->value_hidden ||
	    a->value_outputs != b->value_outputs || a->ownership != b->ownership ||
	    a->score != b->score || a->opp_policy != b->opp_policy ||
	    a->se_channels != b->se_channels ||
	    memcmp(a->block_kind, b->block_kind, sizeof(a->block_kind[0]) * (size_t)a->blocks)) {
		snprintf(t->err, sizeof(t->err), "set_weights: a different architecture, or folded");
		return -1;
	}
	if (cudaSetDevice(t->g.device) != cudaSuccess)
		return -1;
	t->host->meta = net->meta;
	return gt_upload_weights(t, net->data, t->err, sizeof(t->err));
}

int64_t gpu_trainer_steps(const gpu_trainer *t) { return t->step; }
double gpu_trainer_loss_scale(const gpu_trainer *t) { return t->scale; }
int gpu_trainer_micro_batch(const gpu_trainer *t) { return t->micro; }
void gpu_trainer_set_loss_scale(gpu_trainer *t, double s) { t->scale = s; }
const train_options *gpu_trainer_options(const gpu_trainer *t) { return &t->opt; }
const gpu_train_options *gpu_trainer_gpu_options(const gpu_trainer *t) { return &t->g; }
const char *gpu_trainer_error(const gpu_trainer *t) { return t->err; }

int gpu_trainer_broadcast(gpu_trainer *t, comm *c, int root)
{
	char *err = t->err;
	size_t errlen = sizeof(t->err);
	int rc = 0;
	int nmom = t->opt.optimizer == TRAIN_OPTIMIZER_ADAMW ? 2 : 1;
	/* step, rng, loss scale, clean steps, skipped steps: as doubles, so
	 * one device buffer carries them (the integers are < 2^53). */
	double st[5] = { (double)t->step, 0, t->scale, t->good, (double)t->skipped_steps };
	uint64_t rng = t->rng;
	void *dst = NULL;
	if (comm_size(c) == 1)
		return 0;
	CUDA_CHECK(cudaSetDevice(t->g.device));
	comm_set_stream(c, t->stream);
	if (comm_broadcast(c, t->w, t->nf * sizeof(float), root) != 0)
		goto comm_fail;
	for (int k = 0; k < nmom; k++)
		if (comm_broadcast(c, t->mom[k], t->nf * sizeof(float), root) != 0)
			goto comm_fail;
	CUDA_CHECK(cudaMalloc(&dst, sizeof(st) + sizeof(rng)));
	CUDA_CHECK(cudaMemcpyAsync(dst, st, sizeof(st), cudaMemcpyHostToDevice, t->stream));
	CUDA_CHECK(cudaMemcpyAsync((char *)dst + sizeof(st), &rng, sizeof(rng),
				   cudaMemcpyHostToDevice, t->stream));
	if (comm_broadcast(c, dst, sizeof(st) + sizeof(rng), root) != 0)
		goto comm_fail;
	CUDA_CHECK(cudaMemcpyAsync(st, dst, sizeof(st), cudaMemcpyDeviceToHost, t->stream));
	CUDA_CHECK(cudaMemcpyAsync(&rng, (char *)dst + sizeof(st), sizeof(rng),
				   cudaMemcpyDeviceToHost, t->stream));
	/* The compute copies follow the broadcast masters. */
	CUDA_CHECK(cudaMemcpyAsync(t->host->data, t->w, t->nf * sizeof(float),
				   cudaMemcpyDeviceToHost, t->stream));
	CUDA_CHECK(cudaStreamSynchronize(t->stream));
	t->step = (int64_t)st[0];
	t->scale = st[2];
	t->good = (int)st[3];
	t->skipped_steps = (int64_t)st[4];
	t->rng = rng;
	if (gt_upload_weights(t, t->host->data, err, errlen) < 0)
		rc = -1;
	goto out;
comm_fail:
	snprintf(err, errlen, "broadcast: %s", comm_error(c));
	rc = -1;
out:
	if (dst)
		cudaFree(dst);
	return rc;
}

uint64_t gpu_trainer_random(gpu_trainer *t)
{
	return rng_next(&t->rng);
}

int gpu_trainer_checkpoint_save(gpu_trainer *t, const char *path, int world, const void *blob,
				size_t blob_len, char *err, size_t errlen)
{
	int rc = 0;
	int nmom = t->opt.optimizer == TRAIN_OPTIMIZER_ADAMW ? 2 : 1;
	float *mom[2] = { NULL, NULL };
	for (int k = 0; k < nmom; k++)
		if (!(mom[k] = malloc(t->nf * sizeof(float)))) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			goto out;
		}
	if (!gpu_trainer_net(t)) {
		snprintf(err, errlen, "%s", t->err);
		rc = -1;
		goto out;
	}
	for (int k = 0; k < nmom; k++)
		CUDA_CHECK(cudaMemcpy(mom[k], t->mom[k], t->nf * sizeof(float),
				      cudaMemcpyDeviceToHost));
	train_ckpt_state s = {
		.optimizer = (uint32_t)t->opt.optimizer,
		.n_mom = nmom,
		.step = t->step,
		.rng = t->rng,
		.world = (uint32_t)(world < 1 ? 1 : world),
		.loss_scale = (float)t->scale,
	};
	rc = train_ckpt_write(path, t->host, mom, &s, blob, blob_len, err, errlen);
out:
	free(mom[0]);
	free(mom[1]);
	return rc;
}

int gpu_trainer_checkpoint_load(gpu_trainer *t, const char *path, void **blob, size_t *blob_len,
				int *world, char *err, size_t errlen)
{
	int rc = 0;
	int nmom = t->opt.optimizer == TRAIN_OPTIMIZER_ADAMW ? 2 : 1;
	float *mom[2] = { NULL, NULL };
	nn_net *tmp = nn_net_clone(t->host);
	void *bl = NULL;
	size_t bll = 0;
	for (int k = 0; k < nmom; k++)
		if (!(mom[k] = malloc(t->nf * sizeof(float))))
			tmp = (nn_net_free(tmp), NULL);
	if (!tmp) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	train_ckpt_state s = { .optimizer = (uint32_t)t->opt.optimizer, .n_mom = nmom };
	if (train_ckpt_read(path, tmp, mom, &s, blob ? &bl : NULL, &bll, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	CUDA_CHECK(cudaSetDevice(t->g.device));
	for (int k = 0; k < nmom; k++)
		CUDA_CHECK(cudaMemcpyAsync(t->mom[k], mom[k], t->nf * sizeof(float),
					   cudaMemcpyHostToDevice, t->stream));
	if (gt_upload_weights(t, tmp->data, err, errlen) < 0) {
		rc = -1;
		goto out;
	}
	memcpy(t->host->data, tmp->data, t->nf * sizeof(float));
	t->host->meta = tmp->meta;
	t->step = s.step;
	t->rng = s.rng;
	/* Files before version 3 have no scale: keep the initial one. */
	/* A scale of 1 is what the CPU learner and the fp32/bf16 modes record
	 * (they do not scale); fp16 then keeps its initial scale rather than
	 * start at 1 and underflow until 2,000 clean steps double it. An fp16
	 * run that really fell to 1 loses a few skipped steps on the way back. */
	if (s.loss_scale > 1 && t->g.precision == NN_DTYPE_FP16)
		t->scale = s.loss_scale;
	t->good = 0;
	if (world)
		*world = (int)s.world;
	if (blob) {
		*blob = bl;
		bl = NULL;
		if (blob_len)
			*blob_len = bll;
	}
out:
	free(bl);
	free(mom[0]);
	free(mom[1]);
	nn_net_free(tmp);
	return rc;
}

#else /* no CUDA or no cuDNN: the trainer refuses, with the reason. */

int gpu_train_built(void) { return 0; }

#define GT_NOT_BUILT "the GPU trainer is not built in this binary (needs nvcc and cuDNN at build " \
		     "time: rebuild with CUDA, or train with --backend cpu)"

gpu_trainer *gpu_trainer_new(const nn_net *net, const train_options *o,
			     const gpu_train_options *g, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", GT_NOT_BUILT);
	return NULL;
}

void gpu_trainer_free(gpu_trainer *t) { (void)t; }
int gpu_trainer_step(gpu_trainer *t, const gpu_batch *b, train_stats *st) { return -1; }
int gpu_trainer_step_host(gpu_trainer *t, const train_batch *b, train_stats *st) { return -1; }
int gpu_trainer_gradient_host(gpu_trainer *t, const train_batch *b, train_stats *st) { return -1; }
int gpu_trainer_grad_host(gpu_trainer *t, float *out) { return -1; }
void gpu_trainer_set_hooks(gpu_trainer *t, const gpu_grad_hooks *h) {}
void *gpu_trainer_stream(gpu_trainer *t) { return NULL; }
float *gpu_trainer_grad_device(gpu_trainer *t) { return NULL; }
nn_net *gpu_trainer_net(gpu_trainer *t) { return NULL; }
int gpu_trainer_set_weights(gpu_trainer *t, const nn_net *net) { return -1; }
int64_t gpu_trainer_steps(const gpu_trainer *t) { return 0; }
double gpu_trainer_loss_scale(const gpu_trainer *t) { return 1.0; }
int gpu_trainer_micro_batch(const gpu_trainer *t) { return 0; }
void gpu_trainer_set_loss_scale(gpu_trainer *t, double s) {}
uint64_t gpu_trainer_random(gpu_trainer *t) { return 0; }
const train_options *gpu_trainer_options(const gpu_trainer *t) { return NULL; }
const gpu_train_options *gpu_trainer_gpu_options(const gpu_trainer *t) { return NULL; }
const char *gpu_trainer_error(const gpu_trainer *t) { return GT_NOT_BUILT; }
int gpu_trainer_broadcast(gpu_trainer *t, comm *c, int root) { return -1; }

int gpu_trainer_checkpoint_save(gpu_trainer *t, const char *path, int world, const void *blob,
				size_t blob_len, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", GT_NOT_BUILT);
	return -1;
}

int gpu_trainer_checkpoint_load(gpu_trainer *t, const char *path, void **blob, size_t *blob_len,
				int *world, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", GT_NOT_BUILT);
	return -1;
}

#endif
