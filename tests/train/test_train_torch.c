/* Whole SGD (Nesterov) and AdamW (decoupled decay, gradient clipping)
 * steps against PyTorch (tests/train/torch_ref.py, float64): losses of each
 * step and the updated weights and running statistics, for plain nets and
 * for nets with the opponent-reply, ownership and score heads. Skipped
 * when /usr/bin/python3 has no torch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/train/train_util.h"

#define PY "/usr/bin/python3"

static int have_torch(void)
{
	return system(PY " -c 'import torch' >/dev/null 2>&1") == 0;
}

static void write_batch(const char *path, const train_batch *b)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f);
	int32_t h[4] = { b->n, b->in_size, b->n_actions, b->wdl != NULL };
	cr_assert_eq(fwrite(h, 4, 4, f), 4);
	cr_assert_eq(fwrite(b->planes, sizeof(float), (size_t)b->n * b->in_size, f),
		     (size_t)b->n * b->in_size);
	cr_assert_eq(fwrite(b->policy, sizeof(float), (size_t)b->n * b->n_actions, f),
		     (size_t)b->n * b->n_actions);
	cr_assert_eq(fwrite(b->value, sizeof(float), (size_t)b->n, f), (size_t)b->n);
	if (b->wdl)
		cr_assert_eq(fwrite(b->wdl, sizeof(float), 3 * (size_t)b->n, f), 3 * (size_t)b->n);
	size_t n = (size_t)b->n, np = (size_t)b->n_points;
	if (b->opp)
		cr_assert_eq(fwrite(b->opp, sizeof(float), n * b->n_actions, f), n * b->n_actions);
	if (b->own) {
		cr_assert_eq(fwrite(b->own, sizeof(float), n * np, f), n * np);
		cr_assert_eq(fwrite(b->own_w, sizeof(float), n, f), n);
	}
	if (b->score) {
		cr_assert_eq(fwrite(b->score, sizeof(float), n, f), n);
		cr_assert_eq(fwrite(b->score_w, sizeof(float), n, f), n);
	}
	fclose(f);
}

/* adamw = 0: two SGD steps; 1: three AdamW steps with a clip that cuts
 * the gradient (asserted), so that decay, clipping and the bias
 * corrections all show in the weights. heads: the net's optional heads
 * (TU_*), trained at weights other than the defaults. */
static void check_against_torch(game_kind kind, int size, int blocks, int channels, int wdl,
				uint64_t seed, int adamw, int heads)
{
	enum { STEPS_MAX = 3, LOSSES = 7 };
	const int STEPS = adamw ? 3 : 2;
	char err[256], dir[] = "/tmp/sente_torch_XXXXXX", model[128], batch[128], out[128],
		     cmd[1024];
	if (!have_torch())
		cr_skip_test("PyTorch is not installed for " PY " (apt-get install python3-torch)");
	cr_assert(mkdtemp(dir));
	snprintf(model, sizeof(model), "%s/net.sente", dir);
	snprintf(batch, sizeof(batch), "%s/batch.bin", dir);
	snprintf(out, sizeof(out), "%s/out.bin", dir);
	nn_net *net = tu_net_heads(kind, size, blocks, channels, heads, seed);
	train_options o = train_options_default();
	o.opp_weight = 0.4;
	o.own_weight = 1.2;
	o.score_weight = 0.7;
	o.batch = 8;
	o.threads = 1;
	o.lr = 0.1;
	o.momentum = 0.9;
	o.weight_decay = 1e-3;
	o.value_weight = 0.8;
	o.bn_momentum = 0.1;
	if (adamw) {
		o.optimizer = TRAIN_OPTIMIZER_ADAMW;
		o.lr = 0.01;
		o.weight_decay = 0.1; /* decoupled: lr * wd = 1e-3 per step */
		o.adam_beta1 = 0.8;
		o.adam_beta2 = 0.95;
		o.adam_eps = 1e-4; /* see the floor below */
		o.clip_norm = 0.5;
	}
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	train_batch *b = tu_batch(net, 8, seed + 1, 0, wdl);
	if (wdl)
		for (int i = 0; i < 8; i++) { /* soft WDL targets, not derivable from value */
			b->wdl[3 * i] = 0.5f;
			b->wdl[3 * i + 1] = 0.3f;
			b->wdl[3 * i + 2] = 0.2f;
		}
	cr_assert_eq(nn_net_save(net, model, err, sizeof(err)), 0, "%s", err);
	write_batch(batch, b);
	snprintf(cmd, sizeof(cmd), PY " tests/train/torch_ref.py %s %s %s %d %.17g %.17g %.17g %.17g %.17g",
		 model, batch, out, STEPS, o.lr, o.momentum, o.weight_decay, o.value_weight,
		 o.bn_momentum);
	if (adamw)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " adamw %.17g %.17g %.17g %.17g",
			 o.adam_beta1, o.adam_beta2, o.adam_eps, o.clip_norm);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " heads %.17g %.17g %.17g",
		 o.opp_weight, o.own_weight, o.score_weight);
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
	FILE *f = fopen(out, "rb");
	cr_assert(f);
	double want_loss[STEPS_MAX][LOSSES];
	float *want = malloc(sizeof(float) * net->n_floats);
	cr_assert_eq(fread(want_loss, sizeof(double), LOSSES * STEPS, f), LOSSES * STEPS);
	cr_assert_eq(fread(want, sizeof(float), net->n_floats, f), net->n_floats);
	fclose(f);
	for (int s = 0; s < STEPS; s++) {
		train_stats st;
		cr_assert_eq(trainer_step(t, b, &st), 0, "%s", trainer_error(t));
		if (adamw && s == 0)
			cr_assert_gt(st.grad_norm, o.clip_norm, "the clip must cut the first gradient");
		double got[LOSSES] = { st.policy_loss, st.value_loss, st.l2, st.loss,
				       st.opp_loss, st.own_loss, st.score_loss };
		static const char *const names[LOSSES] = { "policy", "value", "l2", "total",
							   "opponent reply", "ownership", "score" };
		for (int k = 0; k < LOSSES; k++)
			cr_assert(fabs(got[k] - want_loss[s][k]) <= 1e-4 * fabs(want_loss[s][k]),
				  "step %d %s loss: %.9g, torch %.9g", s, names[k], got[k],
				  want_loss[s][k]);
		for (int k = 4; k < LOSSES; k++) /* a head the net has has a loss */
			cr_assert_eq(want_loss[s][k] > 0, (heads & (TU_OPP << (k - 4))) != 0,
				     "step %d %s loss %g", s, names[k], want_loss[s][k]);
	}
	/* Weights within rel 1e-3, and the change itself within 1% of the
	 * largest change, so that a wrong update cannot hide in the weight.
	 * AdamW's floor is 0.2% of one step (lr) rather than 1e-6: Adam
	 * normalises each gradient, so a conv bias in front of batch norm
	 * (true gradient 0, float32 noise ~1e-8 here, exactly 0 in torch's
	 * float64) moves by about lr * noise / eps (5e-6 seen); a wrong
	 * update moves a weight by the order of lr. */
	double floor_abs = adamw ? 2e-3 * o.lr : 1e-6;
	const float *w = trainer_net(t)->data, *w0 = net->data;
	double maxd = 0;
	for (size_t i = 0; i < net->n_floats; i++)
		maxd = fmax(maxd, fabs((double)want[i] - w0[i]));
	cr_assert_gt(maxd, 1e-3);
	for (size_t i = 0; i < net->n_floats; i++) {
		cr_assert(fabs((double)w[i] - want[i]) <= 1e-3 * fabs(want[i]) + floor_abs,
			  "weight %zu: %.9g, torch %.9g", i, (double)w[i], (double)want[i]);
		double dg = (double)w[i] - w0[i], dw = (double)want[i] - w0[i];
		cr_assert(fabs(dg - dw) <= 1e-2 * maxd, "update of %zu: %.9g, torch %.9g", i, dg, dw);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	free(want);
	train_batch_free(b);
	trainer_free(t);
	nn_net_free(net);
}

Test(train_torch, connect4_wdl_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_CONNECT4, 0, 2, 16, 1, 7, 0, 0);
}

Test(train_torch, connect4_wdl_adamw_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_CONNECT4, 0, 2, 16, 1, 7, 1, 0);
}

Test(train_torch, go_tanh_adamw_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 5, 1, 8, 0, 8, 1, 0);
}

Test(train_torch, go_tanh_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 5, 1, 8, 0, 8, 0, 0);
}

Test(train_torch, go_three_heads_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 5, 1, 8, 0, 9, 0, TU_OPP | TU_OWN | TU_SCORE);
}

Test(train_torch, go_three_heads_adamw_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 5, 1, 8, 0, 9, 1, TU_OPP | TU_OWN | TU_SCORE);
}

Test(train_torch, connect4_opponent_reply_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_CONNECT4, 0, 2, 16, 1, 10, 0, TU_OPP);
}

/* Squeeze-excitation blocks (global pooling), in both layouts. */
Test(train_torch, go_se_blocks_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 5, 2, 8, 0, 11, 0, TU_SE | TU_OWN);
}

Test(train_torch, connect4_se_blocks_adamw_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_CONNECT4, 0, 2, 16, 1, 12, 1, TU_SE);
}

/* Masked pooling: a net of 5x5 and 7x7 boards, half the positions 5x5 in
 * the frame, the SE means over each one's board. */
Test(train_torch, go_masked_se_sgd_steps_match_pytorch)
{
	check_against_torch(GAME_KIND_GO, 7, 2, 8, 0, 13, 0, TU_SE | TU_MASK | TU_OWN);
}
