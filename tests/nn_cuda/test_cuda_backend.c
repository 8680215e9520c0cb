/* The CUDA backend against the CPU backend (oneDNN, fp32), on random
 * networks and positions of random play: every operation is covered by a
 * network shape that isolates it (no blocks: input expansion, input conv
 * and heads; plain blocks: fused conv + bias + ReLU and the residual; SE
 * blocks: pooling, gates and the identity-activation conv; win/draw/loss
 * and tanh heads), with the fused and the plain convolution paths, with and
 * without CUDA graphs, and with planes that cannot be bit-packed (float
 * upload). Batches 1, 2, 7, 16, 64, 128 and 256 (512 and 1024 in the
 * large cases), boards 9x9, 19x19 and Connect Four. Each case also reads
 * the backend's description: fusion on every conv it should be on (all of
 * them for plain blocks, all but the SE blocks' second conv otherwise),
 * none when turned off, and graphs on unless asked off.
 *
 * fp32: |cuda - cpu| <= 1e-4 * max(1, |cpu|). fp16: the tower runs in
 * half precision, so the bound is scaled to fp16's epsilon (2^-10):
 * 32 * 2^-10 * max(1, |cpu|), about 3%.
 *
 * Every test here skips itself when there is no CUDA device. These bounds
 * held on H100s and H200s (bench/results/), the heads' from 2026-11-28. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/backend.h"
#include "nn/cuda/cuda.h"
#include "nn/cuda/pack.h"
#include "tests/gpu_skip.h"

#define CU_FP16_EPS 0x1p-10

static void cu_need_device(void)
{
	SKIP_WITHOUT_GPU_BUILT(nn_cuda_backend_built(), "the CUDA backend (needs cuDNN)");
}

static uint64_t cu_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void cu_positions(const nn_arch *a, int n, uint64_t seed, float *planes)
{
	static game g;
	int moves[GAME_MAX_ACTIONS];
	game_params gp = game_params_default(a->game);
	if (a->game == GAME_KIND_GO)
		gp.size = a->board_w;
	uint64_t s = seed | 1;
	size_t in_n = (size_t)a->in_planes * a->board_w * a->board_h;
	for (int i = 0; i < n; i++) {
		cr_assert_eq(game_init(&g, &gp), GAME_OK);
		int len = (int)(cu_rng(&s) % (uint64_t)(a->board_w * a->board_h / 2 + 1));
		for (int m = 0; m < len && !game_is_over(&g); m++) {
			int k = game_legal_moves(&g, moves);
			if (k == 0)
				break;
			int mv = moves[cu_rng(&s) % (uint64_t)k];
			if (mv == game_pass_move(&g) && k > 1)
				mv = moves[0];
			cr_assert_eq(game_play(&g, mv), GAME_OK);
		}
		cr_assert_gt(nn_encode(&g, a->encoding, planes + (size_t)i * in_n), 0);
	}
}

static void cu_close(const float *got, const float *want, size_t n, double tol, const char *what,
		     int batch)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(fabs((double)got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])),
			  "batch %d %s[%zu]: cuda %.8g, cpu %.8g", batch, what, i, (double)got[i],
			  (double)want[i]);
}

typedef struct cu_case {
	game_kind game;
	int size;            /* Go board */
	nn_encoding enc;
	int blocks, channels, se; /* se > 0: even blocks are SE */
	int value_outputs;
	nn_dtype prec;
	int no_fusion, no_graphs;
	int float_planes;    /* 1: planes that cannot be packed */
	int large;           /* 1: max batch 1024, batches up to 1024 */
	int masked;          /* 1 (Go 9x9): a net of 7x7 and 9x9 with masked pooling,
			      * every other position cut to the frame's 7x7 corner */
} cu_case;

/* What the description says: fused convs of all, graphs on or why off. */
static void cu_check_describe(const nn_backend *gpu, const cu_case *k)
{
	char d[1024];
	gpu->ops->describe(gpu->ctx, d, sizeof(d));
	int fused = -1, convs = -1;
	const char *f = strstr(d, "fused conv+bias+act on ");
	cr_assert(f && sscanf(f, "fused conv+bias+act on %d of %d", &fused, &convs) == 2, "%s", d);
	cr_assert_eq(convs, 3 + 2 * k->blocks, "%s", d);
	int se_blocks = k->se > 0 ? (k->blocks + 1) / 2 : 0;
	if (k->no_fusion)
		cr_assert_eq(fused, 0, "fusion was turned off: %s", d);
	else
		cr_assert_geq(fused, convs - se_blocks, "cuDNN declined fusion: %s", d);
	if (k->no_graphs)
		cr_assert(strstr(d, "graphs off (asked)"), "%s", d);
	else
		cr_assert(strstr(d, "graphs on"), "graphs should be on: %s", d);
}

static void cu_check(const cu_case *k)
{
	cu_need_device();
	const int MAXB = k->large ? 1024 : 256;
	char err[512];
	game_params gp = game_params_default(k->game);
	if (k->game == GAME_KIND_GO)
		gp.size = k->size;
	nn_arch a = nn_arch_default(&gp, k->blocks, k->channels);
	if (k->enc == NN_ENC_LZ18)
		a = nn_arch_lz(k->size, k->blocks, k->channels);
	a.value_outputs = k->value_outputs;
	bool heads = k->game == GAME_KIND_GO; /* ownership and score, asked at some batches */
	if (heads)
		nn_arch_set_heads(&a, NN_HEAD_OWN | NN_HEAD_SCORE);
	if (k->se > 0) {
		a.se_channels = k->se;
		for (int i = 0; i < k->blocks; i += 2)
			a.block_kind[i] = NN_BLOCK_SE;
	}
	if (k->masked) {
		a.sizes = 1u << 7 | 1u << 9;
		a.masked_pool = 1;
	}
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, 11 + k->blocks + k->channels);
	size_t hw = (size_t)a.board_w * a.board_h;
	float *og = malloc(sizeof(float) * hw * MAXB), *oc = malloc(sizeof(float) * hw * MAXB);
	float *sg = malloc(sizeof(float) * MAXB), *sc = malloc(sizeof(float) * MAXB);
	cr_assert(og && oc && sg && sc);
	size_t in_n = (size_t)a.in_planes * a.board_w * a.board_h, np = (size_t)a.policy_outputs;
	float *planes = malloc(sizeof(float) * in_n * MAXB);
	float *pg = malloc(sizeof(float) * np * MAXB), *pc = malloc(sizeof(float) * np * MAXB);
	float *vg = malloc(sizeof(float) * MAXB), *vc = malloc(sizeof(float) * MAXB);
	float *wg = malloc(sizeof(float) * 3 * MAXB), *wc = malloc(sizeof(float) * 3 * MAXB);
	cr_assert(planes && pg && pc && vg && vc && wg && wc);
	cu_positions(&a, MAXB, 5, planes);
	if (k->float_planes) {
		uint64_t s = 9;
		for (size_t i = 0; i < in_n * MAXB; i++)
			planes[i] = (float)(cu_rng(&s) % 1000) / 500.0f - 1.0f;
	}
	/* A 7x7 board in the 9x9 frame: every plane 0 outside the corner
	 * (the on-board plane too, which the masked means read). */
	for (int n = 0; k->masked && n < MAXB; n += 2)
		for (int pl = 0; pl < a.in_planes; pl++)
			for (int p = 0; p < (int)hw; p++)
				if (p % a.board_w >= 7 || p / a.board_w >= 7)
					planes[(size_t)n * in_n + (size_t)pl * hw + (size_t)p] = 0.0f;
	nn_backend_options o = nn_backend_options_default();
	o.threads = 0;
	nn_backend *cpu = nn_backend_new(&nn_backend_cpu, net, MAXB, &o, err, sizeof(err));
	cr_assert(cpu, "%s", err);
	o.precision = k->prec;
	o.cuda_no_fusion = k->no_fusion;
	o.cuda_no_graphs = k->no_graphs;
	nn_backend *gpu = nn_backend_new(&nn_backend_cuda, net, MAXB, &o, err, sizeof(err));
	cr_assert(gpu, "cuda create: %s", err);
	cu_check_describe(gpu, k);
	double tol = k->prec == NN_DTYPE_FP32 ? 1e-4 : 32 * CU_FP16_EPS;
	static const int batches[] = { 1, 7, 64, 256, 2, 16, 128, 512, 1024 };
	for (int bi = 0; bi < (int)(sizeof(batches) / sizeof(batches[0])); bi++) {
		int b = batches[bi];
		if (b > MAXB)
			continue;
		if (heads && (b == 7 || b == 256)) {
			cr_assert_eq(nn_backend_heads(gpu), NN_HEAD_OWN | NN_HEAD_SCORE);
			cr_assert_eq(nn_backend_forward_heads(cpu, b, planes, pc, vc, wc, oc, sc), 0);
			cr_assert_eq(nn_backend_forward_heads(gpu, b, planes, pg, vg, wg, og, sg), 0,
				     "cuda forward with the heads failed");
			cu_close(og, oc, hw * b, tol, "ownership", b);
			cu_close(sg, sc, (size_t)b, tol, "score", b);
		} else {
			cr_assert_eq(nn_backend_forward(cpu, b, planes, pc, vc, wc), 0);
			cr_assert_eq(nn_backend_forward(gpu, b, planes, pg, vg, wg), 0,
				     "cuda forward failed");
		}
		cu_close(pg, pc, np * b, tol, "policy", b);
		cu_close(vg, vc, (size_t)b, tol, "value", b);
		cu_close(wg, wc, 3 * (size_t)b, tol, "wdl", b);
	}
	free(og);
	free(oc);
	free(sg);
	free(sc);
	nn_backend_free(gpu);
	nn_backend_free(cpu);
	nn_net_free(net);
	free(planes);
	free(pg);
	free(pc);
	free(vg);
	free(vc);
	free(wg);
	free(wc);
}

#define GO19 GAME_KIND_GO, 19, NN_ENC_GO_NATIVE
#define GO9 GAME_KIND_GO, 9, NN_ENC_GO_NATIVE
#define LZ19 GAME_KIND_GO, 19, NN_ENC_LZ18
#define C4 GAME_KIND_CONNECT4, 0, NN_ENC_C4
#define F32 NN_DTYPE_FP32
#define F16 NN_DTYPE_FP16

Test(nn_cuda, expand_kernel_matches_host)
{
	cu_need_device();
	enum { B = 7, P = 27, HW = 361, CP = 32 };
	float *planes = malloc(sizeof(float) * B * P * HW), *want = malloc(sizeof(float) * B * HW * CP);
	float *got = malloc(sizeof(float) * B * HW * CP);
	uint32_t *packed = malloc(sizeof(uint32_t) * nn_pack_stride(P, HW) * B);
	cr_assert(planes && want && got && packed);
	nn_arch a = nn_arch_default(&(game_params){ .kind = GAME_KIND_GO, .size = 19, .komi = 7.5 },
				    1, 8);
	cu_positions(&a, B, 3, planes);
	cr_assert(nn_pack_planes(B, P, HW, planes, packed));
	nn_unpack_planes_nhwc(B, P, HW, CP, packed, want);
	char err[256];
	cr_assert_eq(nn_cuda_expand_check(0, B, P, HW, CP, packed, got, err, sizeof(err)), 0, "%s", err);
	cr_assert(memcmp(want, got, sizeof(float) * B * HW * CP) == 0);
	free(planes);
	free(want);
	free(got);
	free(packed);
}

/* Input expansion, input conv and both heads alone. */
Test(nn_cuda, no_blocks_go9_fp32) { cu_check(&(cu_case){ GO9, 0, 16, 0, 1, F32 }); }
Test(nn_cuda, no_blocks_c4_wdl_fp32) { cu_check(&(cu_case){ C4, 0, 16, 0, 3, F32 }); }
/* Plain residual blocks: fused conv + bias + ReLU (+ residual). */
Test(nn_cuda, plain_go19_fp32) { cu_check(&(cu_case){ GO19, 2, 32, 0, 1, F32 }); }
Test(nn_cuda, plain_go19_fp16) { cu_check(&(cu_case){ GO19, 2, 32, 0, 1, F16 }); }
Test(nn_cuda, plain_go9_fp16) { cu_check(&(cu_case){ GO9, 3, 64, 0, 3, F16 }); }
Test(nn_cuda, plain_lz19_fp32) { cu_check(&(cu_case){ LZ19, 2, 24, 0, 1, F32 }); }
/* The unfused path: plain conv + our bias/residual/ReLU kernel. */
Test(nn_cuda, unfused_go19_fp32) { cu_check(&(cu_case){ GO19, 2, 32, 0, 1, F32, 1 }); }
Test(nn_cuda, unfused_go9_fp16) { cu_check(&(cu_case){ GO9, 2, 32, 0, 1, F16, 1 }); }
/* Squeeze-excitation. */
Test(nn_cuda, se_go9_fp32) { cu_check(&(cu_case){ GO9, 3, 32, 8, 1, F32 }); }
Test(nn_cuda, se_go19_fp16) { cu_check(&(cu_case){ GO19, 2, 32, 8, 3, F16 }); }
Test(nn_cuda, se_c4_fp32_unfused) { cu_check(&(cu_case){ C4, 2, 16, 8, 3, F32, 1 }); }
/* Masked pooling: the means over each position's board (7x7 or 9x9 in the
 * 9x9 frame), graphs on (the weights' upload is in the graph) and off. */
Test(nn_cuda, masked_se_go9_fp32) { cu_check(&(cu_case){ GO9, 3, 32, 8, 1, F32, .masked = 1 }); }
Test(nn_cuda, masked_se_go9_fp16_no_graphs)
{
	cu_check(&(cu_case){ GO9, 2, 32, 8, 1, F16, 0, 1, .masked = 1 });
}
/* Channel counts that need padding to 8. */
Test(nn_cuda, odd_channels_go9_fp32) { cu_check(&(cu_case){ GO9, 2, 20, 4, 1, F32 }); }
/* Eager launches, no graphs. */
Test(nn_cuda, no_graphs_go19_fp16) { cu_check(&(cu_case){ GO19, 1, 32, 0, 1, F16, 0, 1 }); }
/* Planes that cannot be bit-packed go up as floats. */
Test(nn_cuda, float_planes_go9_fp32) { cu_check(&(cu_case){ GO9, 1, 16, 0, 1, F32, 0, 0, 1 }); }
/* Large batches (buckets 512 and 1024), both precisions, against the CPU. */
Test(nn_cuda, large_batches_go9_fp32) { cu_check(&(cu_case){ GO9, 2, 32, 0, 3, F32, 0, 0, 0, 1 }); }
Test(nn_cuda, large_batches_go19_fp16) { cu_check(&(cu_case){ GO19, 1, 32, 0, 1, F16, 0, 0, 0, 1 }); }
