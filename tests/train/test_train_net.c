/* The whole trainer: gradients of the total loss against central
 * differences of a double-precision training-mode reference (a residual
 * block, whole nets in both layouts and both value heads), inference-mode
 * evaluation against nn_reference_forward, and the loss falling when
 * fitting a fixed dataset. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/train/train_util.h"
#include "train/layers.h"

/* One tensor of the net: where it is and what to call it. */
typedef struct tensor_ref {
	char name[48]; /* e.g. "block0.conv2.gamma" */
	size_t off;    /* offset in net->data */
	size_t n;      /* floats */
} tensor_ref;

static int add_conv(tensor_ref *t, int k, const nn_net *net, const nn_conv *c, const char *name)
{
	size_t nw = (size_t)c->c_out * c->c_in * c->k * c->k;
	const float *p[4] = { c->w, c->b, c->bn_gamma, c->bn_beta };
	size_t n[4] = { nw, (size_t)c->c_out, (size_t)c->c_out, (size_t)c->c_out };
	const char *what[4] = { "w", "b", "gamma", "beta" };
	for (int i = 0; i < 4; i++) {
		snprintf(t[k].name, sizeof(t[k].name), "%s.%s", name, what[i]);
		t[k].off = (size_t)(p[i] - net->data);
		t[k].n = n[i];
		k++;
	}
	return k;
}

static int add_fc(tensor_ref *t, int k, const nn_net *net, const nn_fc *f, const char *name)
{
	snprintf(t[k].name, sizeof(t[k].name), "%s.w", name);
	t[k].off = (size_t)(f->w - net->data);
	t[k++].n = (size_t)f->n_in * f->n_out;
	snprintf(t[k].name, sizeof(t[k].name), "%s.b", name);
	t[k].off = (size_t)(f->b - net->data);
	t[k++].n = (size_t)f->n_out;
	return k;
}

/* Every trainable tensor; returns the count. */
static int net_tensors(const nn_net *net, tensor_ref *t)
{
	char nm[32];
	int k = add_conv(t, 0, net, &net->input, "input");
	for (int i = 0; i < net->arch.blocks; i++) {
		snprintf(nm, sizeof(nm), "block%d.conv1", i);
		k = add_conv(t, k, net, &net->block[i].conv1, nm);
		snprintf(nm, sizeof(nm), "block%d.conv2", i);
		k = add_conv(t, k, net, &net->block[i].conv2, nm);
		if (net->block[i].se1.w) {
			snprintf(nm, sizeof(nm), "block%d.se1", i);
			k = add_fc(t, k, net, &net->block[i].se1, nm);
			snprintf(nm, sizeof(nm), "block%d.se2", i);
			k = add_fc(t, k, net, &net->block[i].se2, nm);
		}
	}
	k = add_conv(t, k, net, &net->policy_conv, "policy_conv");
	k = add_fc(t, k, net, &net->policy_fc, "policy_fc");
	k = add_conv(t, k, net, &net->value_conv, "value_conv");
	k = add_fc(t, k, net, &net->value_fc1, "value_fc1");
	k = add_fc(t, k, net, &net->value_fc2, "value_fc2");
	if (net->opp_fc.w)
		k = add_fc(t, k, net, &net->opp_fc, "opp_fc");
	return k;
}

/* Gradient of the trainer against FD of the reference, `samples` entries
 * of every tensor (all of a tensor when it is smaller; every entry of the
 * tensors whose name starts with `all`, when given). */
static void check_net_gradient_opp(game_kind kind, int size, int blocks, int channels,
				   double wd, int samples, const char *all, uint64_t seed, int opp)
{
	char err[256];
	nn_net *net = tu_net_heads(kind, size, blocks, channels, opp, seed);
	train_options o = train_options_default();
	o.batch = 4;
	o.threads = 1;
	o.weight_decay = wd;
	o.value_weight = 0.7;
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	train_batch *b = tu_batch(net, 4, seed + 5, 0, 0);
	train_stats st;
	cr_assert_eq(trainer_gradient(t, b, &st), 0, "%s", trainer_error(t));
	const float *g = trainer_grad(t);
	double *dat = malloc(sizeof(double) * net->n_floats);
	cr_assert(dat);
	for (size_t i = 0; i < net->n_floats; i++)
		dat[i] = net->data[i];
	double pl, vl, l2;
	double ref = tu_ref_loss(net, dat, b, wd, o.value_weight, 1, &pl, &vl, &l2);
	cr_assert(fabs(st.loss - ref) <= 1e-5 * fabs(ref), "loss %.9g, reference %.9g", st.loss, ref);
	cr_assert(fabs(st.policy_loss - pl) <= 1e-5 * pl && fabs(st.value_loss - vl) <= 1e-5 * vl &&
		  fabs(st.l2 - l2) <= 1e-5 * l2 + 1e-12);
	cr_assert((opp & TU_OPP) ? st.opp_loss > 0 : st.opp_loss == 0, "opponent-reply loss %g",
		  st.opp_loss);
	cr_assert((opp & TU_OWN) ? st.own_loss > 0 : st.own_loss == 0, "ownership loss %g",
		  st.own_loss);
	cr_assert((opp & TU_SCORE) ? st.score_loss > 0 : st.score_loss == 0, "score loss %g",
		  st.score_loss);
	tensor_ref ts[4 * (2 * NN_MAX_BLOCKS + 3) + 4 * NN_MAX_BLOCKS + 8];
	int nt = net_tensors(net, ts);
	uint64_t r = seed * 77 + 3;
	int checked = 0;
	for (int k = 0; k < nt; k++) {
		int every = all && strncmp(ts[k].name, all, strlen(all)) == 0;
		size_t m = every || ts[k].n <= (size_t)samples ? ts[k].n : (size_t)samples;
		for (size_t s = 0; s < m; s++) {
			size_t i = ts[k].off +
				   (m == ts[k].n ? s : (size_t)(tu_rng(&r) % ts[k].n));
			/* A ReLU kink within h of the point bends the quotient:
			 * a second, smaller step tells a kink from a wrong
			 * gradient. */
			double fd = 0;
			int ok = 0;
			for (double h = 1e-6; h > 1e-8 && !ok; h /= 10) {
				double keep = dat[i];
				dat[i] = keep + h;
				double lp = tu_ref_loss(net, dat, b, wd, o.value_weight, 1, NULL, NULL, NULL);
				dat[i] = keep - h;
				double lm = tu_ref_loss(net, dat, b, wd, o.value_weight, 1, NULL, NULL, NULL);
				dat[i] = keep;
				fd = (lp - lm) / (2 * h);
				ok = fabs(g[i] - fd) <= 5e-3 * fabs(fd) + 3e-5;
			}
			cr_assert(ok, "%s[%zu]: backward %.8g, finite differences %.8g", ts[k].name,
				  i - ts[k].off, (double)g[i], fd);
			checked++;
		}
	}
	cr_assert_gt(checked, nt);
	/* Running statistics are not parameters. */
	cr_assert_eq(g[net->input.bn_mean - net->data], 0.0f);
	cr_assert_eq(g[net->input.bn_var - net->data], 0.0f);
	free(dat);
	train_batch_free(b);
	trainer_free(t);
	nn_net_free(net);
}

static void check_net_gradient(game_kind kind, int size, int blocks, int channels, double wd,
			       int samples, const char *all, uint64_t seed)
{
	check_net_gradient_opp(kind, size, blocks, channels, wd, samples, all, seed, 0);
}

/* The opponent-reply head: its FC, and the policy conv and tower below it
 * that it adds to, against the reference with the head's cross-entropy
 * (a position without a reply counts 0); both games. */
Test(train_net, opponent_reply_head_gradient_matches_finite_differences, .timeout = 120)
{
	check_net_gradient_opp(GAME_KIND_CONNECT4, 0, 1, 16, 1e-4, 6, "opp_fc", 31, TU_OPP);
	check_net_gradient_opp(GAME_KIND_GO, 5, 1, 8, 1e-4, 6, "policy_conv", 32, TU_OPP);
}

/* The ownership head: its per-point weights, and the value conv and
 * tower below it, against the reference (a position without a target
 * counts 0); with the opponent-reply head beside it, both layouts. */
Test(train_net, ownership_head_gradient_matches_finite_differences, .timeout = 120)
{
	check_net_gradient_opp(GAME_KIND_GO, 5, 1, 8, 1e-4, 6, "value_conv", 33, TU_OWN);
	check_net_gradient_opp(GAME_KIND_GO, 7, 1, 16, 1e-4, 4, "own_fc", 34, TU_OWN | TU_OPP);
}

/* The score head: its weights on the value hidden layer, and that layer's
 * FC and the value conv below, against the reference; with the other
 * heads beside it. */
Test(train_net, score_head_gradient_matches_finite_differences, .timeout = 120)
{
	check_net_gradient_opp(GAME_KIND_GO, 5, 1, 8, 1e-4, 6, "score_fc", 35, TU_SCORE);
	check_net_gradient_opp(GAME_KIND_GO, 5, 1, 8, 1e-4, 6, "value_fc1",
			       36, TU_SCORE | TU_OWN | TU_OPP);
}

/* Squeeze-excitation blocks (global pooling: a gate and a bias per
 * channel from the board's means): their FCs and the convs below, in NHWC
 * (8 channels) and in the blocked layout (16, Winograd's tower where
 * oneDNN has it), with the heads beside them. */
Test(train_net, se_block_gradient_matches_finite_differences, .timeout = 120)
{
	check_net_gradient_opp(GAME_KIND_GO, 5, 2, 8, 1e-4, 4, "block1.se", 37, TU_SE);
	check_net_gradient_opp(GAME_KIND_CONNECT4, 0, 1, 16, 1e-4, 4, "block0.se2", 38, TU_SE);
	check_net_gradient_opp(GAME_KIND_GO, 7, 1, 16, 1e-4, 4, "block0.conv2", 39,
			       TU_SE | TU_OWN | TU_OPP);
}

/* Masked pooling (a net of 5x5 and 7x7, every other position on 5x5 in
 * the 7x7 frame): the SE means over each position's board alone, their
 * FCs and the convs below against the reference, which masks by the
 * on-board plane. */
Test(train_net, masked_se_gradient_matches_finite_differences, .timeout = 120)
{
	check_net_gradient_opp(GAME_KIND_GO, 7, 2, 8, 1e-4, 4, "block1.se", 40, TU_SE | TU_MASK);
	check_net_gradient_opp(GAME_KIND_GO, 7, 1, 16, 1e-4, 4, "block0.conv2", 41,
			       TU_SE | TU_MASK | TU_OWN);
}

Test(train_net, residual_block_gradient_matches_finite_differences)
{
	/* Every entry of the block's tensors: conv, BN, ReLU and the skip. */
	check_net_gradient(GAME_KIND_CONNECT4, 0, 1, 8, 0.0, 4, "block0", 1);
}

Test(train_net, connect4_wdl_net_gradient_matches_finite_differences)
{
	/* 16 channels: the tower runs in the blocked (nChw16c) layout. */
	check_net_gradient(GAME_KIND_CONNECT4, 0, 2, 16, 1e-3, 6, NULL, 2);
}

Test(train_net, go_tanh_net_gradient_matches_finite_differences)
{
	check_net_gradient(GAME_KIND_GO, 5, 1, 8, 1e-3, 6, NULL, 3);
}

Test(train_net, go_no_blocks_gradient_matches_finite_differences)
{
	check_net_gradient(GAME_KIND_GO, 5, 0, 16, 0.0, 6, NULL, 4);
}

/* Inference-mode loss against nn_reference_forward (running statistics),
 * with a partial batch. */
Test(train_net, eval_matches_reference_forward)
{
	char err[256];
	for (int kind = 0; kind < 3; kind++) {
		nn_net *net = kind == 1	  ? tu_net(GAME_KIND_CONNECT4, 0, 1, 16, 9)
			      : kind == 2 ? tu_net_heads(GAME_KIND_GO, 7, 2, 16, TU_SE, 9)
					  : tu_net(GAME_KIND_GO, 5, 1, 8, 9);
		const nn_arch *a = &net->arch;
		train_options o = train_options_default();
		o.batch = 8;
		o.threads = 1;
		trainer *t = trainer_new(net, &o, err, sizeof(err));
		cr_assert(t, "%s", err);
		train_batch *b = tu_batch(net, 8, 17, 0, 0);
		b->n = 5;
		train_stats st;
		cr_assert_eq(trainer_eval(t, b, &st), 0, "%s", trainer_error(t));
		double pl = 0, vl = 0;
		float *logits = malloc(sizeof(float) * a->policy_outputs), v, wdl[3];
		for (int n = 0; n < b->n; n++) {
			nn_reference_forward(net, 1, b->planes + (size_t)n * b->in_size, logits, &v, wdl);
			pl += train_loss_policy(1, a->policy_outputs, logits,
						b->policy + (size_t)n * a->policy_outputs, NULL);
			if (a->value_outputs == 1) {
				vl += (v - b->value[n]) * (v - b->value[n]);
			} else {
				double z = b->value[n], tg[3] = { fmax(z, 0), 1 - fabs(z), fmax(-z, 0) };
				for (int k = 0; k < 3; k++)
					vl -= tg[k] > 0 ? tg[k] * log(wdl[k]) : 0;
			}
		}
		pl /= b->n;
		vl /= b->n;
		cr_assert(fabs(st.policy_loss - pl) < 1e-4 * pl, "policy %.8g vs %.8g", st.policy_loss, pl);
		cr_assert(fabs(st.value_loss - vl) < 1e-4 * vl + 1e-6, "value %.8g vs %.8g",
			  st.value_loss, vl);
		free(logits);
		train_batch_free(b);
		trainer_free(t);
		nn_net_free(net);
	}
}

/* Fitting 64 fixed Connect Four positions with random one-hot targets. */
static void check_loss_falls(train_optimizer opt, double lr)
{
	char err[256];
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 2, 16, 5);
	train_options o = train_options_default();
	o.batch = 64;
	o.threads = 1;
	o.optimizer = opt;
	o.lr = lr;
	o.clip_norm = 10;
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	train_batch *b = tu_batch(net, 64, 23, 1, 1);
	train_stats st;
	double first = 0;
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(trainer_step(t, b, &st), 0, "%s", trainer_error(t));
		if (i == 0)
			first = st.loss;
		cr_assert(isfinite(st.loss));
	}
	cr_assert_eq(trainer_eval(t, b, &st), 0);
	cr_log_info("%s: loss %.4f -> %.4f (eval)", opt == TRAIN_OPTIMIZER_SGD ? "sgd" : "adamw",
		    first, st.loss);
	cr_assert_lt(st.loss, 0.5 * first, "loss %.4f -> %.4f", first, st.loss);
	cr_assert_eq(trainer_steps(t), 200);
	train_batch_free(b);
	trainer_free(t);
	nn_net_free(net);
}

Test(train_net, sgd_loss_falls_on_fixed_data)
{
	check_loss_falls(TRAIN_OPTIMIZER_SGD, 0.05);
}

Test(train_net, adamw_loss_falls_on_fixed_data)
{
	check_loss_falls(TRAIN_OPTIMIZER_ADAMW, 3e-3);
}

Test(train_net, options_and_nets_are_refused_with_a_message)
{
	char err[256];
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 1);
	train_options o = train_options_default();
	o.batch = 1;
	cr_assert_null(trainer_new(net, &o, err, sizeof(err)));
	cr_assert(strstr(err, "batch"), "%s", err);
	o = train_options_default();
	o.lr_schedule = TRAIN_LR_SCHEDULE_COSINE;
	cr_assert_null(trainer_new(net, &o, err, sizeof(err)));
	cr_assert(strstr(err, "cosine"), "%s", err);
	train_options def = train_options_default();
	nn_net *folded = nn_net_clone(net);
	nn_net_fold_bn(folded);
	cr_assert_null(trainer_new(folded, &def, err, sizeof(err)));
	cr_assert(strstr(err, "folded"), "%s", err);
	nn_net_free(folded);
	nn_arch a = net->arch;
	a.block_kind[0] = NN_BLOCK_SE;
	a.se_channels = 4;
	nn_net *se = nn_net_new(&a, err, sizeof(err));
	cr_assert(se, "%s", err);
	trainer *t = trainer_new(se, &def, err, sizeof(err));
	cr_assert(t, "a squeeze-excitation block trains: %s", err);
	trainer_free(t);
	nn_net_free(se);
	nn_net_free(net);
}

Test(train_net, lr_schedules)
{
	char err[256];
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 0, 8, 1);
	train_options o = train_options_default();
	o.lr = 0.1;
	o.lr_schedule = TRAIN_LR_SCHEDULE_STEP;
	o.lr_steps[0] = 10;
	o.lr_steps[1] = 20;
	o.n_lr_steps = 2;
	o.lr_gamma = 0.5;
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	cr_assert_float_eq(trainer_lr_at(t, 9), 0.1, 1e-12);
	cr_assert_float_eq(trainer_lr_at(t, 10), 0.05, 1e-12);
	cr_assert_float_eq(trainer_lr_at(t, 25), 0.025, 1e-12);
	trainer_free(t);
	o.lr_schedule = TRAIN_LR_SCHEDULE_COSINE;
	o.lr_total_steps = 100;
	o.lr_min = 0.01;
	o.warmup_steps = 10;
	t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	cr_assert_float_eq(trainer_lr_at(t, 0), 0.01, 1e-12); /* warm-up: 1/10 of 0.1 */
	cr_assert_float_eq(trainer_lr_at(t, 50), 0.055, 1e-12);
	cr_assert_float_eq(trainer_lr_at(t, 100), 0.01, 1e-12);
	cr_assert_float_eq(trainer_lr_at(t, 500), 0.01, 1e-12);
	trainer_free(t);
	nn_net_free(net);
}

/* The 2x32 9x9 Go net, a batch of 16 of its positions and the options of
 * one thread at that batch: two trainers made from them take the same
 * steps but for the choice under test. */
static nn_net *go9_pair_setup(train_batch **b, train_options *o)
{
	nn_net *net = tu_net(GAME_KIND_GO, 9, 2, 32, 17);
	*b = tu_batch(net, 16, 29, 0, 0);
	*o = train_options_default();
	o->batch = 16;
	o->threads = 1;
	return net;
}

/* The tower in Winograd's algorithm (the default where oneDNN has it)
 * takes the same steps as direct convolutions, up to rounding: losses and
 * updates of 3 SGD steps on a 2x32 9x9 Go net. With AVX-512 (what oneDNN
 * 2.6 needs for it) the default must pick it. A wrong weight layout for
 * one of Winograd's passes moves the whole update. */
Test(train_net, winograd_steps_match_direct)
{
	char err[256];
	train_batch *b;
	train_options o;
	nn_net *net = go9_pair_setup(&b, &o);
	trainer *w = trainer_new(net, &o, err, sizeof(err));
	cr_assert(w, "%s", err);
	o.algo = NN_CONV_DIRECT;
	trainer *d = trainer_new(net, &o, err, sizeof(err));
	cr_assert(d, "%s", err);
	cr_assert_str_eq(trainer_conv_name(d), "direct");
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
		cr_assert_str_eq(trainer_conv_name(w), "winograd");
	cr_log_info("default: %s", trainer_conv_name(w));
	train_stats sw, sd;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(trainer_step(w, b, &sw), 0, "%s", trainer_error(w));
		cr_assert_eq(trainer_step(d, b, &sd), 0, "%s", trainer_error(d));
		cr_assert(fabs(sw.loss - sd.loss) < 1e-4 * fabs(sd.loss), "step %d: loss %.7f against %.7f",
			  i, sw.loss, sd.loss);
	}
	double diff = tu_update_difference(net->data, trainer_net(d)->data, trainer_net(w)->data,
					   net->n_floats);
	cr_log_info("update difference %.2e", diff);
	cr_assert_lt(diff, 1e-3, "Winograd's update differs from direct's by %.3g of its size", diff);
	trainer_free(w);
	trainer_free(d);
	train_batch_free(b);
	nn_net_free(net);
}

/* bf16 training (train_options.precision) rounds the tower's convolution
 * operands to bfloat16 and keeps everything else fp32. On a 2x32 9x9 Go
 * net the first 3 SGD steps' update stays within bf16's rounding of
 * fp32's and is not equal to it (bf16 really ran): a conv followed by
 * batch norm has a weight gradient that is a small difference of large
 * terms, so rounding its output gradient moves the update by several
 * percent (6.5% for one step at batch 64), while a wrong layout moves all
 * of it. Over 30 steps the loss stays within 2% of fp32's at every step.
 * Where oneDNN has no bf16 convolution the trainer refuses bf16 with a
 * message instead. */
Test(train_net, bf16_steps_track_fp32)
{
	char err[256];
	train_batch *b;
	train_options o;
	nn_net *net = go9_pair_setup(&b, &o);
	o.algo = NN_CONV_DIRECT;
	trainer *f = trainer_new(net, &o, err, sizeof(err));
	cr_assert(f, "%s", err);
	o.precision = NN_DTYPE_BF16;
	trainer *h = trainer_new(net, &o, err, sizeof(err));
	if (!__builtin_cpu_supports("avx512bf16")) {
		cr_assert_null(h, "bf16 training without AVX-512 BF16 must be refused");
		cr_assert(strstr(err, "bf16"), "%s", err);
		cr_log_info("no AVX-512 BF16: refused (%s)", err);
		trainer_free(f);
		train_batch_free(b);
		nn_net_free(net);
		return;
	}
	cr_assert(h, "%s", err);
	o.algo = NN_CONV_WINOGRAD;
	cr_assert_null(trainer_new(net, &o, err, sizeof(err)), "bf16 Winograd must be refused");
	cr_assert(strstr(err, "Winograd"), "%s", err);
	o.algo = NN_CONV_AUTO;
	o.layout = TRAIN_LAYOUT_BLOCKED;
	cr_assert_null(trainer_new(net, &o, err, sizeof(err)), "bf16 blocked must be refused");
	cr_assert(strstr(err, "NHWC"), "%s", err);
	train_stats sf, sh;
	for (int i = 0; i < 30; i++) {
		cr_assert_eq(trainer_step(f, b, &sf), 0, "%s", trainer_error(f));
		cr_assert_eq(trainer_step(h, b, &sh), 0, "%s", trainer_error(h));
		cr_assert(fabs(sh.loss - sf.loss) < 0.02 * fabs(sf.loss),
			  "step %d: loss %.6f against fp32's %.6f", i, sh.loss, sf.loss);
		if (i == 2) {
			double diff = tu_update_difference(net->data, trainer_net(f)->data,
							   trainer_net(h)->data, net->n_floats);
			cr_log_info("update difference after 3 steps %.2e", diff);
			cr_assert_lt(diff, 0.25, "bf16's update differs from fp32's by %.3g of its size",
				     diff);
			cr_assert_gt(diff, 1e-5, "bf16's update equals fp32's (%.3g): bf16 did not run",
				     diff);
		}
	}
	cr_log_info("loss after 30 steps: fp32 %.5f bf16 %.5f", sf.loss, sh.loss);
	trainer_free(f);
	trainer_free(h);
	train_batch_free(b);
	nn_net_free(net);
}
