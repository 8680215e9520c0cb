/* test_gpu_train.c: the GPU trainer against the CPU trainer. Host tests
 * (options, FLOP counting, the shared checkpoint format, `sente bench
 * train`) run everywhere; the device tests skip themselves without a CUDA
 * device and compare real numbers when there is one. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/fileio.h"
#include "nn/cuda/cuda.h"
#include "nn/encode.h"
#include "tests/gpu_skip.h"
#include "tests/train/train_util.h"
#include "train/checkpoint.h"
#include "train/cuda/gpu_train.h"
#include "train/train_internal.h"

static char gt_dir[] = "/tmp/sente_gpu_train_XXXXXX";

static void gt_setup(void)
{
	cr_assert(mkdtemp(gt_dir), "mkdtemp");
}

static void gt_teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", gt_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", gt_dir);
}

TestSuite(gpu_train, .init = gt_setup, .fini = gt_teardown);

#define NEED_DEVICE()                                                                        \
	do {                                                                                 \
		SKIP_WITHOUT_GPU_BUILT(gpu_train_built(), "the GPU trainer (needs cuDNN)");  \
	} while (0)

/* ---- host tests ----------------------------------------------------------- */

Test(gpu_train, options_defaults_parse_and_check)
{
	char err[256];
	gpu_train_options g = gpu_train_options_default();
	cr_assert_eq(g.precision, NN_DTYPE_FP32);
	cr_assert_eq(g.micro_batch, 0);
	cr_assert_float_eq(g.loss_scale, 32768.0, 0);
	cr_assert_eq(g.growth_interval, 2000);
	cr_assert_float_eq(g.backoff, 0.5, 0);
	cr_assert_eq(gpu_train_options_check(&g, 64, err, sizeof(err)), 0, "%s", err);
	nn_dtype p;
	const char *names[] = { "fp32", "fp16", "bf16" };
	for (int i = 0; i < 3; i++) {
		cr_assert(nn_dtype_from_name(names[i], &p));
		cr_assert_eq((int)p, i);
		cr_assert_str_eq(nn_dtype_name(p), names[i]);
	}
	cr_assert(!nn_dtype_from_name("fp8", &p));
	cr_assert(!nn_dtype_from_name(NULL, &p));

	gpu_train_options b = g;
	b.micro_batch = 24; /* does not divide 64 */
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	cr_assert(strstr(err, "micro-batch 24"), "%s", err);
	b = g, b.micro_batch = 1;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.micro_batch = 32;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), 0, "%s", err);
	b = g, b.backoff = 1.0;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.growth_interval = 0;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.loss_scale = 0.5;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.precision = (nn_dtype)7;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.precision = NN_DTYPE_INT8; /* inference only */
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
	b = g, b.device = -1;
	cr_assert_eq(gpu_train_options_check(&b, 64, err, sizeof(err)), -1);
}

Test(gpu_train, refuses_only_without_a_device)
{
	char err[256] = "";
	nn_net *net = tu_net(GAME_KIND_GO, 9, 1, 16, 1);
	train_options o = train_options_default();
	gpu_train_options g = gpu_train_options_default();
	if (nn_cuda_device_count() == 0) {
		cr_assert_null(gpu_trainer_new(net, &o, &g, err, sizeof(err)));
		cr_assert(strlen(err) > 0);
		cr_assert(strstr(err, "device") || strstr(err, "not built"), "%s", err);
	}
	/* Squeeze-excitation blocks train on the GPU too (check_step below): a
	 * net with one SE block among plain ones is taken on a device, and
	 * without one refused for the device alone. */
	nn_arch a = net->arch;
	a.blocks = 2;
	a.block_kind[0] = NN_BLOCK_PLAIN;
	a.block_kind[1] = NN_BLOCK_SE;
	a.se_channels = 4;
	nn_net *se = nn_net_new(&a, err, sizeof(err));
	cr_assert(se, "%s", err);
	err[0] = 0;
	gpu_trainer *st = gpu_trainer_new(se, &o, &g, err, sizeof(err));
	if (nn_cuda_device_count() > 0 && gpu_train_built()) {
		cr_assert(st, "%s", err);
	} else {
		cr_assert_null(st);
		cr_assert(strstr(err, "device") || strstr(err, "not built"), "%s", err);
	}
	gpu_trainer_free(st);
	nn_net_free(se);
	/* The training heads, the opponent-reply head of either game among
	 * them, and nets of several sizes, SE ones with their means masked,
	 * train on the GPU too (check_step below): on a device they are
	 * taken, without one refused for the device alone, never for the
	 * head or the sizes. */
	nn_net *heads[5] = { tu_net_heads(GAME_KIND_GO, 9, 1, 16, TU_OWN | TU_SCORE, 1),
			     tu_net_heads(GAME_KIND_GO, 9, 1, 16, TU_OPP | TU_OWN | TU_SCORE, 1),
			     tu_net_heads(GAME_KIND_CONNECT4, 0, 1, 16, TU_OPP, 1),
			     tu_net_heads(GAME_KIND_GO, 9, 1, 16, TU_MASK, 1),
			     tu_net_heads(GAME_KIND_GO, 9, 1, 16, TU_SE | TU_MASK | TU_OWN, 1) };
	cr_assert(heads[3]->arch.sizes && heads[4]->arch.masked_pool);
	for (int k = 0; k < 5; k++) {
		err[0] = 0;
		gpu_trainer *t = gpu_trainer_new(heads[k], &o, &g, err, sizeof(err));
		if (nn_cuda_device_count() > 0 && gpu_train_built()) {
			cr_assert(t, "net %d: %s", k, err);
		} else {
			cr_assert_null(t);
			cr_assert(strstr(err, "device") || strstr(err, "not built"), "net %d: %s", k,
				  err);
			cr_assert_null(strstr(err, "opponent-reply"), "%s", err);
			cr_assert_null(strstr(err, "sizes"), "%s", err);
		}
		gpu_trainer_free(t);
		nn_net_free(heads[k]);
	}
	nn_net_free(net);
}

Test(gpu_train, forward_flops_count_convs_and_fcs)
{
	nn_net *go = tu_net(GAME_KIND_GO, 9, 2, 16, 1);
	nn_net *c4 = tu_net(GAME_KIND_CONNECT4, 0, 3, 32, 1);
	cr_assert_float_eq(gpu_train_forward_flops(&go->arch), nn_net_flops(go), 1e-6);
	cr_assert_float_eq(gpu_train_forward_flops(&c4->arch), nn_net_flops(c4), 1e-6);
	/* SE blocks add their two FCs (3 C S multiply-adds), as inference counts. */
	nn_net *se = tu_net_heads(GAME_KIND_GO, 9, 2, 16, TU_SE, 1);
	cr_assert_float_eq(gpu_train_forward_flops(&se->arch), nn_net_flops(se), 1e-6);
	cr_assert_float_eq(gpu_train_forward_flops(&se->arch) - gpu_train_forward_flops(&go->arch),
			   2.0 * 2 * 3 * 16 * 8, 1e-6);
	nn_net_free(se);
	/* The opponent-reply head: a second policy FC, which inference never
	 * computes but the learner does. */
	nn_net *opp = tu_net_heads(GAME_KIND_GO, 9, 2, 16, TU_OPP, 1);
	nn_net *c4o = tu_net_heads(GAME_KIND_CONNECT4, 0, 3, 32, TU_OPP, 1);
	cr_assert_float_eq(gpu_train_forward_flops(&opp->arch) - gpu_train_forward_flops(&go->arch),
			   2.0 * 81 * go->arch.policy_channels * go->arch.policy_outputs, 1e-6);
	cr_assert_float_eq(gpu_train_forward_flops(&c4o->arch) - gpu_train_forward_flops(&c4->arch),
			   2.0 * 42 * c4->arch.policy_channels * c4->arch.policy_outputs, 1e-6);
	nn_net_free(opp);
	nn_net_free(c4o);
	/* By hand for the Go net: 81 points, in_planes x 16 x 9 input conv,
	 * 2 x 2 tower convs of 16 x 16 x 9, heads. */
	const nn_arch *a = &go->arch;
	double hw = 81, macs = hw * 9 * a->in_planes * 16 + 4 * hw * 9 * 16 * 16 +
			       hw * 16 * (a->policy_channels + a->value_channels) +
			       hw * a->policy_channels * a->policy_outputs +
			       hw * a->value_channels * a->value_hidden +
			       (double)a->value_hidden * a->value_outputs;
	cr_assert_float_eq(gpu_train_forward_flops(a), 2 * macs, 1e-6);
	nn_net_free(go);
	nn_net_free(c4);
}

static trainer *cpu_trainer(const nn_net *net, train_optimizer opt, int batch)
{
	char err[256];
	train_options o = train_options_default();
	o.batch = batch;
	o.threads = 1;
	o.optimizer = opt;
	o.lr = opt == TRAIN_OPTIMIZER_SGD ? 0.05 : 2e-3;
	o.clip_norm = 0.5;
	o.seed = 5;
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	return t;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "open %s", path);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc(*len);
	cr_assert(p && fread(p, 1, *len, f) == *len);
	fclose(f);
	return p;
}

static void spit(const char *path, const unsigned char *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f && fwrite(p, 1, len, f) == len);
	fclose(f);
}

Test(gpu_train, checkpoint_v3_round_trip_and_loss_scale)
{
	char err[256], path[300];
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 16, 2);
	train_batch *b = tu_batch(net, 8, 3, 0, 1);
	trainer *t = cpu_trainer(net, TRAIN_OPTIMIZER_ADAMW, 8);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(trainer_step(t, b, NULL), 0, "%s", trainer_error(t));
	trainer_random(t);
	snprintf(path, sizeof(path), "%s/v3.ckpt", gt_dir);
	cr_assert_eq(trainer_checkpoint_save(t, path, "blob", 4, err, sizeof(err)), 0, "%s", err);
	size_t len;
	unsigned char *buf = slurp(path, &len);
	cr_assert_eq(fileio_u32(buf + 8), 3u, "version %u", fileio_u32(buf + 8));
	free(buf);

	/* Into a fresh CPU trainer: everything back. */
	trainer *u = cpu_trainer(net, TRAIN_OPTIMIZER_ADAMW, 8);
	void *blob = NULL;
	size_t blen = 0;
	cr_assert_eq(trainer_checkpoint_load(u, path, &blob, &blen, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(blen, 4);
	cr_assert_eq(memcmp(blob, "blob", 4), 0);
	free(blob);
	cr_assert_eq(trainer_steps(u), 2);
	cr_assert_eq(memcmp(trainer_net(u)->data, trainer_net(t)->data,
			    net->n_floats * sizeof(float)), 0);
	for (int k = 0; k < 2; k++)
		cr_assert_eq(memcmp(trainer_moment(u, k), trainer_moment(t, k),
				    net->n_floats * sizeof(float)), 0);
	cr_assert_eq(trainer_random(u), trainer_random(t));

	/* The format functions: a loss scale survives; the CPU learner writes 1. */
	nn_net *dst = nn_net_clone(net);
	float *m0 = calloc(net->n_floats, sizeof(float)), *m1 = calloc(net->n_floats, sizeof(float));
	float *mom[2] = { m0, m1 };
	train_ckpt_state s = { .optimizer = TRAIN_OPTIMIZER_ADAMW, .n_mom = 2 };
	cr_assert_eq(train_ckpt_read(path, dst, mom, &s, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_float_eq(s.loss_scale, 1.0f, 0);
	cr_assert_eq(s.world, 1u);
	s.loss_scale = 512.0f;
	s.world = 4;
	snprintf(path, sizeof(path), "%s/scaled.ckpt", gt_dir);
	cr_assert_eq(train_ckpt_write(path, dst, mom, &s, NULL, 0, err, sizeof(err)), 0, "%s", err);
	train_ckpt_state r = { .optimizer = TRAIN_OPTIMIZER_ADAMW, .n_mom = 2 };
	cr_assert_eq(train_ckpt_read(path, dst, mom, &r, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_float_eq(r.loss_scale, 512.0f, 0);
	cr_assert_eq(r.world, 4u);
	cr_assert_eq(r.step, 2);
	/* A different optimizer is refused and changes nothing. */
	train_ckpt_state sg = { .optimizer = TRAIN_OPTIMIZER_SGD, .n_mom = 1 };
	cr_assert_eq(train_ckpt_read(path, dst, mom, &sg, NULL, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "optimizer"), "%s", err);
	free(m0);
	free(m1);
	nn_net_free(dst);
	trainer_free(t);
	trainer_free(u);
	train_batch_free(b);
	nn_net_free(net);
}

Test(gpu_train, checkpoint_v2_still_loads)
{
	char err[256], path[300], old[300];
	nn_net *net = tu_net(GAME_KIND_GO, 9, 1, 16, 4);
	train_batch *b = tu_batch(net, 8, 5, 0, 0);
	trainer *t = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 8);
	cr_assert_eq(trainer_step(t, b, NULL), 0, "%s", trainer_error(t));
	snprintf(path, sizeof(path), "%s/new.ckpt", gt_dir);
	cr_assert_eq(trainer_checkpoint_save(t, path, NULL, 0, err, sizeof(err)), 0, "%s", err);
	/* Rewrite as version 2: no loss scale at the end of the header. */
	size_t len;
	unsigned char *buf = slurp(path, &len);
	uint32_t hlen = fileio_u32(buf + 12), v2 = 2, h2 = hlen - 4;
	size_t cut = 16 + hlen - 4; /* the loss scale's 4 bytes */
	unsigned char *o = malloc(len - 4);
	memcpy(o, buf, cut);
	memcpy(o + cut, buf + cut + 4, len - cut - 4);
	memcpy(o + 8, &v2, 4);
	memcpy(o + 12, &h2, 4);
	uint32_t crc = fileio_crc(o, len - 8);
	memcpy(o + len - 8, &crc, 4);
	snprintf(old, sizeof(old), "%s/v2.ckpt", gt_dir);
	spit(old, o, len - 4);

	trainer *u = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 8);
	cr_assert_eq(trainer_checkpoint_load(u, old, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(trainer_steps(u), 1);
	cr_assert_eq(trainer_checkpoint_world(u), 1);
	cr_assert_eq(memcmp(trainer_net(u)->data, trainer_net(t)->data,
			    net->n_floats * sizeof(float)), 0);
	float *mom[1] = { calloc(net->n_floats, sizeof(float)) };
	nn_net *dst = nn_net_clone(net);
	train_ckpt_state s = { .optimizer = TRAIN_OPTIMIZER_SGD, .n_mom = 1 };
	cr_assert_eq(train_ckpt_read(old, dst, mom, &s, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_float_eq(s.loss_scale, 0.0f, 0, "v2 has no scale: the reader's default applies");
	cr_assert_eq(memcmp(mom[0], trainer_moment(t, 0), net->n_floats * sizeof(float)), 0);
	free(mom[0]);
	nn_net_free(dst);
	free(o);
	free(buf);
	trainer_free(t);
	trainer_free(u);
	train_batch_free(b);
	nn_net_free(net);
}

Test(gpu_train, bench_train_cpu_prints_json)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	char cmd[600], out[4096];
	snprintf(cmd, sizeof(cmd), "%s bench train --backend cpu --blocks 1 --channels 8 --size 5 "
		 "--batch 4 --steps 2 --threads 1 2>&1", bin);
	FILE *f = popen(cmd, "r");
	cr_assert(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	int st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_assert(strstr(out, "{\"bench\":\"train\",\"backend\":\"cpu\""), "%s", out);
	cr_assert(strstr(out, "\"samples_per_s\":"), "%s", out);
	cr_assert(strstr(out, "\"forward_flops\":"), "%s", out);
	/* cuda without a device says why and fails; bad flags are usage errors. */
	if (nn_cuda_device_count() == 0) {
		snprintf(cmd, sizeof(cmd), "%s bench train --backend cuda 2>&1", bin);
		f = popen(cmd, "r");
		n = fread(out, 1, sizeof(out) - 1, f);
		out[n] = 0;
		st = pclose(f);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
		cr_assert(strstr(out, "no CUDA device"), "%s", out);
	}
	snprintf(cmd, sizeof(cmd), "%s bench train --precision fp8 >/dev/null 2>&1", bin);
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	/* Go's training heads: named in the line; Connect Four has none. */
	snprintf(cmd, sizeof(cmd), "%s bench train --backend cpu --blocks 1 --channels 8 --size 5 "
		 "--batch 4 --steps 2 --threads 1 --ownership-head --score-head 2>&1", bin);
	f = popen(cmd, "r");
	cr_assert(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_assert(strstr(out, "\"ownership_head\":true,\"score_head\":true"), "%s", out);
	snprintf(cmd, sizeof(cmd), "%s bench train --game connect4 --ownership-head 2>&1", bin);
	f = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	st = pclose(f);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s", out);
	cr_assert(strstr(out, "Go only"), "%s", out);
}

/* ---- device tests ---------------------------------------------------------- */

static gpu_trainer *gpu_for(const nn_net *net, const trainer *ct, nn_dtype p, int micro)
{
	char err[512];
	gpu_train_options g = gpu_train_options_default();
	g.precision = p;
	g.micro_batch = micro;
	gpu_trainer *t = gpu_trainer_new(net, trainer_options((trainer *)ct), &g, err, sizeof(err));
	cr_assert(t, "%s", err);
	return t;
}

static double max_abs(const float *x, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmax(m, fabs(x[i]));
	return m;
}

/* Checks the gradient of every SE block's FCs (weights and biases) on
 * their own scale, which is small beside the tower's: gg against cg. */
static void check_se_grads(const nn_net *net, const float *gg, const float *cg, double tol)
{
	int n_se = 0;
	for (int i = 0; i < net->arch.blocks; i++) {
		const nn_block *k = &net->block[i];
		if (!k->se1.w)
			continue;
		n_se++;
		/* se1 w, b, se2 w, b: adjacent in net->data (net.h's order). */
		size_t o = (size_t)(k->se1.w - net->data);
		size_t ns = (size_t)(k->se2.b + k->se2.n_out - k->se1.w);
		double ss = max_abs(cg + o, ns);
		cr_assert_gt(ss, 0, "no gradient of block %d's SE to compare", i);
		for (size_t j = o; j < o + ns; j++)
			cr_assert(fabs(gg[j] - cg[j]) <= tol * ss + 1e-7,
				  "block %d SE [%zu of %zu]: gpu %g cpu %g (max |g| %g)", i, j - o, ns,
				  gg[j], cg[j], ss);
	}
	cr_assert(n_se == 0 || n_se == net->arch.blocks);
}

/* Checks the gradient of each training head's FC (weights then bias, as
 * net.h lays them out) on its own scale: gg against cg. */
static void check_head_grads(const nn_net *net, const float *gg, const float *cg, double tol)
{
	const nn_fc *hf[3] = { &net->own_fc, &net->score_fc, &net->opp_fc };
	const char *name[3] = { "ownership", "score", "opponent-reply" };
	for (int k = 0; k < 3; k++) {
		if (!hf[k]->w)
			continue;
		cr_assert_eq(hf[k]->b, hf[k]->w + (size_t)hf[k]->n_in * hf[k]->n_out);
		size_t o = (size_t)(hf[k]->w - net->data);
		size_t nh = (size_t)hf[k]->n_out * (hf[k]->n_in + 1);
		double hs = max_abs(cg + o, nh);
		cr_assert_gt(hs, 0, "no gradient of the %s head to compare", name[k]);
		for (size_t i = o; i < o + nh; i++)
			cr_assert(fabs(gg[i] - cg[i]) <= tol * hs + 1e-7, "%s head [%zu]: gpu %g cpu %g",
				  name[k], i - o, gg[i], cg[i]);
	}
}

/* One fp32 GPU step against the CPU trainer's: losses, gradient, weights;
 * heads: the training heads on the net (TU_OPP; TU_OWN, TU_SCORE: Go
 * only), TU_SE for squeeze-excitation blocks, and TU_MASK for a Go net of
 * two sizes (5x5 in the frame of `size`, every other position of the
 * batch on 5x5) with masked pooling. */
static void check_step(game_kind kind, int size, train_optimizer opt, int wdl, int heads)
{
	nn_net *net = tu_net_heads(kind, size, 2, 16, heads, 11);
	if (heads & TU_SE)
		cr_assert(net->block[0].se1.w && net->block[1].se1.w, "no SE blocks");
	train_batch *b = tu_batch(net, 16, 12, 0, wdl);
	if (heads & TU_MASK) {
		/* Positions of both sizes, so that a mean over the frame (not
		 * the board) or a target off the 5x5 board would show. */
		int hw = b->frame_w * b->frame_h, small = 0;
		float *pw = malloc(sizeof(float) * (size_t)hw);
		cr_assert(pw);
		for (int i = 0; i < b->n; i++) {
			int on = nn_board_pool_weights(net->arch.encoding,
						       b->planes + (size_t)i * b->in_size, hw, pw);
			small += on == 25;
			cr_assert(on == 25 || on == hw, "position %d: %d points on its board", i,
				  on);
		}
		cr_assert(small > 0 && small < b->n, "%d of %d positions on 5x5", small, b->n);
		free(pw);
	}
	trainer *ct = cpu_trainer(net, opt, 16);
	gpu_trainer *gt = gpu_for(net, ct, NN_DTYPE_FP32, 0);
	size_t nf = net->n_floats;
	train_stats cs, gs;
	cr_assert_eq(trainer_gradient(ct, b, &cs), 0, "%s", trainer_error(ct));
	cr_assert_eq(gpu_trainer_gradient_host(gt, b, &gs), 0, "%s", gpu_trainer_error(gt));
	cr_assert_float_eq(gs.policy_loss, cs.policy_loss, 1e-4 * (1 + fabs(cs.policy_loss)));
	cr_assert_float_eq(gs.value_loss, cs.value_loss, 1e-4 * (1 + fabs(cs.value_loss)));
	cr_assert_float_eq(gs.loss, cs.loss, 1e-4 * (1 + fabs(cs.loss)));
	cr_assert_float_eq(gs.own_loss, cs.own_loss, 1e-4 * (1 + fabs(cs.own_loss)));
	cr_assert_float_eq(gs.score_loss, cs.score_loss, 1e-4 * (1 + fabs(cs.score_loss)));
	cr_assert_float_eq(gs.opp_loss, cs.opp_loss, 1e-4 * (1 + fabs(cs.opp_loss)));
	if (heads & TU_OPP)
		cr_assert_gt(cs.opp_loss, 0.1, "no opponent-reply loss to compare");
	else
		cr_assert_eq(gs.opp_loss, 0.0);
	if (heads & TU_OWN)
		cr_assert_gt(cs.own_loss, 0.1, "no ownership loss to compare");
	if (heads & TU_SCORE)
		cr_assert_gt(cs.score_loss, 1e-3, "no score loss to compare");
	float *gg = malloc((nf + GPU_TRAIN_TAIL) * sizeof(float));
	cr_assert_eq(gpu_trainer_grad_host(gt, gg), 0, "%s", gpu_trainer_error(gt));
	const float *cg = trainer_grad(ct);
	double scale = max_abs(cg, nf), worst = 0;
	size_t at = 0;
	for (size_t i = 0; i < nf; i++)
		if (fabs(gg[i] - cg[i]) > worst)
			worst = fabs(gg[i] - cg[i]), at = i;
	cr_assert(worst <= 1e-4 * scale + 1e-6, "gradient [%zu]: gpu %g cpu %g (max |g| %g)", at,
		  gg[at], cg[at], scale);
	cr_assert_float_eq(gg[nf + 3], 1.0f, 0);
	/* The heads' weights and biases on their own scale (they are small
	 * beside the tower's), and their losses in the gradient's tail. */
	check_head_grads(net, gg, cg, 1e-4);
	cr_assert_float_eq(gg[nf + 4], cs.own_loss, 1e-4 * (1 + cs.own_loss));
	cr_assert_float_eq(gg[nf + 5], cs.score_loss, 1e-4 * (1 + cs.score_loss));
	cr_assert_float_eq(gg[nf + 6], cs.opp_loss, 1e-4 * (1 + cs.opp_loss));
	check_se_grads(net, gg, cg, 1e-4);

	cr_assert_eq(trainer_step(ct, b, &cs), 0, "%s", trainer_error(ct));
	cr_assert_eq(gpu_trainer_step_host(gt, b, &gs), 0, "%s", gpu_trainer_error(gt));
	cr_assert_eq(gs.skipped, 0);
	cr_assert_eq(gpu_trainer_steps(gt), 1);
	cr_assert_float_eq(gs.grad_norm, cs.grad_norm, 1e-4 * cs.grad_norm + 1e-6);
	cr_assert_float_eq(gs.lr, cs.lr, 1e-12);
	const nn_net *gn = gpu_trainer_net(gt);
	cr_assert(gn, "%s", gpu_trainer_error(gt));
	const float *cw = trainer_net(ct)->data, *w0 = net->data;
	double lr = trainer_options(ct)->lr, max_du = 0;
	for (size_t i = 0; i < nf; i++)
		max_du = fmax(max_du, fabs((double)cw[i] - w0[i]));
	cr_assert_gt(max_du, 0);
	for (size_t i = 0; i < nf; i++) {
		double tol;
		if (opt == TRAIN_OPTIMIZER_SGD) {
			/* SGD's update is lr (1 + momentum) times the clipped
			 * gradient, often below 1e-4: a tolerance on the weight
			 * (1e-4 (1 + |w|), as before) let a wrong update through.
			 * So the update itself within 5%, with a floor of 0.1% of
			 * the largest update (ten times the gradients' agreement
			 * above, for updates near 0) and a few float32 ulps of w
			 * (each side rounds w - update). */
			double du = (double)cw[i] - w0[i];
			tol = 0.05 * fabs(du) + 1e-3 * max_du + 1e-6 * fabs(cw[i]);
		} else {
			/* AdamW normalises each gradient: where the CPU's is rounding
			 * noise (conv biases under BN) the two steps may differ by lr. */
			tol = 1e-4 * (1 + fabs(cw[i]));
			if (fabs(cg[i]) < 1e-5 * scale)
				tol += 1.5 * lr;
		}
		cr_assert(fabs(gn->data[i] - cw[i]) <= tol, "weight [%zu]: gpu %g cpu %g", i,
			  gn->data[i], cw[i]);
	}
	free(gg);
	gpu_trainer_free(gt);
	trainer_free(ct);
	train_batch_free(b);
	nn_net_free(net);
}

Test(gpu_train, fp32_step_matches_cpu_go_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, 0);
}

Test(gpu_train, fp32_step_matches_cpu_go_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_ADAMW, 0, 0);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_wdl_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_SGD, 1, 0);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_wdl_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_ADAMW, 1, 0);
}

Test(gpu_train, fp32_step_matches_cpu_go_heads_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, TU_OWN | TU_SCORE);
}

Test(gpu_train, fp32_step_matches_cpu_go_heads_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_ADAMW, 0, TU_OWN | TU_SCORE);
}

Test(gpu_train, fp32_step_matches_cpu_go_se_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, TU_SE);
}

Test(gpu_train, fp32_step_matches_cpu_go_se_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_ADAMW, 0, TU_SE);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_se_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_SGD, 1, TU_SE);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_se_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_ADAMW, 1, TU_SE);
}

Test(gpu_train, fp32_step_matches_cpu_go_se_heads_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, TU_SE | TU_OWN | TU_SCORE);
}

/* The opponent-reply head (tu_batch: one position without a reply). */
Test(gpu_train, fp32_step_matches_cpu_go_opp_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, TU_OPP);
}

Test(gpu_train, fp32_step_matches_cpu_go_opp_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_ADAMW, 0, TU_OPP);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_opp_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_SGD, 1, TU_OPP);
}

Test(gpu_train, fp32_step_matches_cpu_connect4_opp_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_ADAMW, 1, TU_OPP);
}

Test(gpu_train, fp32_step_matches_cpu_go_opp_heads_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_SGD, 0, TU_OPP | TU_OWN | TU_SCORE);
}

Test(gpu_train, fp32_step_matches_cpu_go_opp_heads_adamw)
{
	NEED_DEVICE();
	check_step(GAME_KIND_GO, 9, TRAIN_OPTIMIZER_ADAMW, 0, TU_OPP | TU_OWN | TU_SCORE);
}

/* Nets of several board sizes (5x5 in a 9x9 frame, masked pooling): the
 * batch's framed positions, and SE means over each position's own board
 * (tk_board_pool_weights from the on-board plane, as the CPU trainer's
 * nn_board_pool_weights); plain and SE, SGD and AdamW, with the heads.
 * Each case says its name on stderr first, so a failure names it. */
Test(gpu_train, fp32_steps_match_cpu_go_sizes)
{
	NEED_DEVICE();
	static const struct {
		const char *name;
		train_optimizer opt;
		int heads;
	} cases[] = {
		{ "plain sgd", TRAIN_OPTIMIZER_SGD, TU_MASK },
		{ "plain heads adamw", TRAIN_OPTIMIZER_ADAMW, TU_MASK | TU_OWN | TU_SCORE },
		{ "se sgd", TRAIN_OPTIMIZER_SGD, TU_MASK | TU_SE },
		{ "se adamw", TRAIN_OPTIMIZER_ADAMW, TU_MASK | TU_SE },
		{ "se heads sgd", TRAIN_OPTIMIZER_SGD, TU_MASK | TU_SE | TU_OWN | TU_SCORE },
		{ "se opp heads sgd", TRAIN_OPTIMIZER_SGD,
		  TU_MASK | TU_SE | TU_OPP | TU_OWN | TU_SCORE },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fprintf(stderr, "fp32_steps_match_cpu_go_sizes: %s\n", cases[i].name);
		check_step(GAME_KIND_GO, 9, cases[i].opt, 0, cases[i].heads);
	}
}

Test(gpu_train, fp32_step_matches_cpu_connect4_opp_se_sgd)
{
	NEED_DEVICE();
	check_step(GAME_KIND_CONNECT4, 0, TRAIN_OPTIMIZER_SGD, 1, TU_OPP | TU_SE);
}

/* fp16 and bf16 against fp32 over 100 steps on the net of heads (see
 * tu_net_heads). */
static void check_mixed(int heads)
{
	enum { NB = 4, STEPS = 100 };
	nn_net *net = tu_net_heads(GAME_KIND_GO, 9, 2, 16, heads, 21);
	train_batch *b[NB];
	for (int i = 0; i < NB; i++)
		b[i] = tu_batch(net, 32, 30 + i, 0, 0);
	trainer *ct = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 32);
	nn_dtype ps[3] = { NN_DTYPE_FP32, NN_DTYPE_FP16, NN_DTYPE_BF16 };
	double loss[3][STEPS];
	for (int p = 0; p < 3; p++) {
		gpu_trainer *gt = gpu_for(net, ct, ps[p], 0);
		/* Steps count when applied, so every precision learns from the
		 * same STEPS updates on the same batches. fp16 starts at a large
		 * loss scale and halves it on each overflowing step: at most
		 * log2(scale) skips before one fits, plus one per growth
		 * interval; fp32 and bf16 skip only on a non-finite gradient. */
		double scale0 = gpu_trainer_loss_scale(gt);
		int growth = gpu_train_options_default().growth_interval;
		int allow = ps[p] == NN_DTYPE_FP16
				    ? (int)ceil(log2(fmax(scale0, 1.0))) + 1 + STEPS / (growth > 0 ? growth : 1)
				    : 2;
		int skipped = 0;
		for (int s = 0; s < STEPS;) {
			train_stats st;
			cr_assert_eq(gpu_trainer_step_host(gt, b[s % NB], &st), 0, "%s",
				     gpu_trainer_error(gt));
			if (st.skipped) {
				skipped++;
				cr_assert_leq(skipped, allow, "%s: %d steps skipped (allowed %d, loss "
					      "scale %g, started at %g)", nn_dtype_name(ps[p]), skipped,
					      allow, gpu_trainer_loss_scale(gt), scale0);
				continue;
			}
			loss[p][s++] = st.loss;
		}
		cr_assert_gt(gpu_trainer_steps(gt), STEPS - 3, "%s skipped too many steps",
			     nn_dtype_name(ps[p]));
		gpu_trainer_free(gt);
	}
	/* Losses averaged over the last 20 steps within a few percent. */
	double mean[3] = { 0, 0, 0 };
	for (int p = 0; p < 3; p++)
		for (int s = STEPS - 20; s < STEPS; s++)
			mean[p] += loss[p][s] / 20;
	cr_assert_lt(mean[0], loss[0][0], "fp32 did not learn: %g -> %g", loss[0][0], mean[0]);
	for (int p = 1; p < 3; p++)
		cr_assert(fabs(mean[p] - mean[0]) <= 0.05 * mean[0], "%s loss %g, fp32 %g",
			  nn_dtype_name(ps[p]), mean[p], mean[0]);
	trainer_free(ct);
	for (int i = 0; i < NB; i++)
		train_batch_free(b[i]);
	nn_net_free(net);
}

Test(gpu_train, mixed_precision_tracks_fp32, .timeout = 120)
{
	NEED_DEVICE();
	/* With Go's training heads, the default of a Go run. */
	check_mixed(TU_OWN | TU_SCORE);
}

Test(gpu_train, mixed_precision_tracks_fp32_se, .timeout = 120)
{
	NEED_DEVICE();
	check_mixed(TU_SE | TU_OWN | TU_SCORE);
}

Test(gpu_train, mixed_precision_tracks_fp32_sizes_se, .timeout = 120)
{
	NEED_DEVICE();
	check_mixed(TU_MASK | TU_SE | TU_OWN | TU_SCORE);
}

Test(gpu_train, mixed_precision_tracks_fp32_opp, .timeout = 120)
{
	NEED_DEVICE();
	check_mixed(TU_OPP | TU_OWN | TU_SCORE);
}

Test(gpu_train, overflow_skips_step_and_halves_scale)
{
	NEED_DEVICE();
	nn_net *net = tu_net(GAME_KIND_GO, 9, 1, 16, 31);
	train_batch *b = tu_batch(net, 16, 32, 0, 0);
	trainer *ct = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 16);
	gpu_trainer *gt = gpu_for(net, ct, NN_DTYPE_FP16, 0);
	nn_net *before = nn_net_clone(gpu_trainer_net(gt));
	gpu_trainer_set_loss_scale(gt, 1e30); /* every fp16 gradient overflows */
	train_stats st;
	cr_assert_eq(gpu_trainer_step_host(gt, b, &st), 0, "%s", gpu_trainer_error(gt));
	cr_assert_eq(st.skipped, 1);
	cr_assert_eq(st.skipped_steps, 1);
	cr_assert_eq(gpu_trainer_steps(gt), 0);
	cr_assert_float_eq(gpu_trainer_loss_scale(gt), 5e29, 1e24);
	const nn_net *after = gpu_trainer_net(gt);
	cr_assert_eq(memcmp(after->data, before->data, net->n_floats * sizeof(float)), 0,
		     "a skipped step changed the weights");
	/* A sane scale trains again. */
	gpu_trainer_set_loss_scale(gt, 1024);
	cr_assert_eq(gpu_trainer_step_host(gt, b, &st), 0, "%s", gpu_trainer_error(gt));
	cr_assert_eq(st.skipped, 0);
	cr_assert_eq(gpu_trainer_steps(gt), 1);
	nn_net_free(before);
	gpu_trainer_free(gt);
	trainer_free(ct);
	train_batch_free(b);
	nn_net_free(net);
}

/* Copies positions [from, from + n) of b into a new batch. */
static train_batch *half_of(const nn_net *net, const train_batch *b, int from, int n)
{
	train_batch *h = train_batch_new(&net->arch, n, b->wdl != NULL);
	cr_assert(h);
	memcpy(h->planes, b->planes + (size_t)from * b->in_size, sizeof(float) * n * b->in_size);
	memcpy(h->policy, b->policy + (size_t)from * b->n_actions,
	       sizeof(float) * n * b->n_actions);
	memcpy(h->value, b->value + from, sizeof(float) * n);
	if (b->wdl)
		memcpy(h->wdl, b->wdl + 3 * from, sizeof(float) * 3 * n);
	if (b->own) {
		memcpy(h->own, b->own + (size_t)from * b->n_points, sizeof(float) * n * b->n_points);
		memcpy(h->own_w, b->own_w + from, sizeof(float) * n);
	}
	if (b->score) {
		memcpy(h->score, b->score + from, sizeof(float) * n);
		memcpy(h->score_w, b->score_w + from, sizeof(float) * n);
	}
	if (b->opp)
		memcpy(h->opp, b->opp + (size_t)from * b->n_actions, sizeof(float) * n * b->n_actions);
	h->n = n;
	return h;
}

/* Micro-batches of 8 of a batch of 16 against two CPU half batches; heads:
 * with Go's training heads a Go net (their targets are offset per
 * micro-batch too), else Connect Four with WDL; TU_OPP: the
 * opponent-reply head (either game); TU_SE: SE blocks. */
static void check_micro(int heads)
{
	int go = (heads & (TU_OWN | TU_SCORE | TU_MASK)) != 0;
	nn_net *net = go ? tu_net_heads(GAME_KIND_GO, 9, 2, 16, heads, 41)
			 : tu_net_heads(GAME_KIND_CONNECT4, 0, 2, 16, heads, 41);
	train_batch *b = tu_batch(net, 16, 42, 0, !go);
	trainer *half = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 8);
	trainer *full = cpu_trainer(net, TRAIN_OPTIMIZER_SGD, 16);
	gpu_trainer *gt = gpu_for(net, full, NN_DTYPE_FP32, 8);
	cr_assert_eq(gpu_trainer_micro_batch(gt), 8);
	size_t nf = net->n_floats;
	double *avg = calloc(nf, sizeof(double));
	double pl = 0, ol = 0; /* the halves' mean policy and opponent-reply losses */
	for (int k = 0; k < 2; k++) {
		train_batch *h = half_of(net, b, 8 * k, 8);
		train_stats hs;
		cr_assert_eq(trainer_gradient(half, h, &hs), 0, "%s", trainer_error(half));
		pl += 0.5 * hs.policy_loss;
		ol += 0.5 * hs.opp_loss;
		const float *g = trainer_grad(half);
		for (size_t i = 0; i < nf; i++)
			avg[i] += 0.5 * g[i];
		train_batch_free(h);
	}
	float *gg = malloc((nf + GPU_TRAIN_TAIL) * sizeof(float));
	train_stats gs;
	cr_assert_eq(gpu_trainer_gradient_host(gt, b, &gs), 0, "%s", gpu_trainer_error(gt));
	cr_assert_float_eq(gs.policy_loss, pl, 1e-4 * (1 + pl));
	cr_assert_float_eq(gs.opp_loss, ol, 1e-4 * (1 + ol));
	if (heads & TU_OPP)
		cr_assert_gt(ol, 0.1, "no opponent-reply loss to compare");
	cr_assert_eq(gpu_trainer_grad_host(gt, gg), 0, "%s", gpu_trainer_error(gt));
	double scale = 0;
	for (size_t i = 0; i < nf; i++)
		scale = fmax(scale, fabs(avg[i]));
	for (size_t i = 0; i < nf; i++)
		cr_assert(fabs(gg[i] - avg[i]) <= 1e-4 * scale + 1e-6, "[%zu] gpu %g cpu %g", i,
			  gg[i], avg[i]);
	float *avgf = malloc(nf * sizeof(float));
	for (size_t i = 0; i < nf; i++)
		avgf[i] = (float)avg[i];
	check_se_grads(net, gg, avgf, 1e-4);
	check_head_grads(net, gg, avgf, 1e-4);
	free(avgf);
	free(gg);
	free(avg);
	gpu_trainer_free(gt);
	trainer_free(half);
	trainer_free(full);
	train_batch_free(b);
	nn_net_free(net);
}

Test(gpu_train, micro_batches_average_half_batch_gradients)
{
	NEED_DEVICE();
	check_micro(0);
}

Test(gpu_train, micro_batches_average_half_batch_gradients_heads)
{
	NEED_DEVICE();
	check_micro(TU_OWN | TU_SCORE);
}

Test(gpu_train, micro_batches_average_half_batch_gradients_se)
{
	NEED_DEVICE();
	check_micro(TU_SE);
}

Test(gpu_train, micro_batches_average_half_batch_gradients_se_heads)
{
	NEED_DEVICE();
	check_micro(TU_SE | TU_OWN | TU_SCORE);
}

/* Several sizes with SE: each micro-batch's pool weights from its own
 * positions. */
Test(gpu_train, micro_batches_average_half_batch_gradients_sizes_se)
{
	NEED_DEVICE();
	check_micro(TU_MASK | TU_SE | TU_OWN | TU_SCORE);
}

Test(gpu_train, micro_batches_average_half_batch_gradients_opp)
{
	NEED_DEVICE();
	check_micro(TU_OPP);
}

Test(gpu_train, micro_batches_average_half_batch_gradients_opp_heads)
{
	NEED_DEVICE();
	check_micro(TU_OPP | TU_OWN | TU_SCORE);
}

Test(gpu_train, gpu_checkpoint_loads_into_cpu_trainer)
{
	NEED_DEVICE();
	char err[512], path[300];
	nn_net *net = tu_net(GAME_KIND_GO, 9, 1, 16, 51);
	train_batch *b = tu_batch(net, 16, 52, 0, 0);
	trainer *ct = cpu_trainer(net, TRAIN_OPTIMIZER_ADAMW, 16);
	gpu_trainer *gt = gpu_for(net, ct, NN_DTYPE_FP16, 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(gpu_trainer_step_host(gt, b, NULL), 0, "%s", gpu_trainer_error(gt));
	gpu_trainer_random(gt);
	snprintf(path, sizeof(path), "%s/gpu.ckpt", gt_dir);
	cr_assert_eq(gpu_trainer_checkpoint_save(gt, path, 1, "xy", 2, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(trainer_checkpoint_load(ct, path, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	const nn_net *gn = gpu_trainer_net(gt);
	cr_assert_eq(memcmp(trainer_net(ct)->data, gn->data, net->n_floats * sizeof(float)), 0);
	cr_assert_eq(trainer_steps(ct), gpu_trainer_steps(gt));
	cr_assert_eq(trainer_random(ct), gpu_trainer_random(gt));
	/* And back: a fresh GPU trainer resumes with the scale. */
	gpu_trainer *g2 = gpu_for(net, ct, NN_DTYPE_FP16, 0);
	int world = 0;
	cr_assert_eq(gpu_trainer_checkpoint_load(g2, path, NULL, NULL, &world, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(world, 1);
	cr_assert_float_eq(gpu_trainer_loss_scale(g2), gpu_trainer_loss_scale(gt), 0);
	cr_assert_eq(gpu_trainer_steps(g2), 3);
	gpu_trainer_free(g2);
	gpu_trainer_free(gt);
	trainer_free(ct);
	train_batch_free(b);
	nn_net_free(net);
}
