/* Batch-norm statistics recomputed from data (trainer_bn_*): afterwards
 * the network in inference mode computes on those batches what training
 * mode computes with the batches' own statistics. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/train/train_util.h"
#include "train/trainer.h"

/* The trainer's first layer's running mean and variance of channel 0. */
static void first_stats(trainer *t, float *mean, float *var)
{
	const nn_net *n = trainer_net(t);
	*mean = n->input.bn_mean[0];
	*var = n->input.bn_var[0];
}

Test(bn_recompute, inference_matches_the_batches_statistics)
{
	nn_net *net = tu_net(GAME_KIND_CONNECT4, 0, 2, 8, 11);
	cr_assert(net);
	train_options o = train_options_default();
	o.batch = 32;
	o.threads = 1;
	char err[256];
	trainer *t = trainer_new(net, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	train_batch *b = tu_batch(net, 32, 5, 0, 1);
	train_stats tr, before, after;
	cr_assert_eq(trainer_gradient(t, b, &tr), 0, "%s", trainer_error(t));
	cr_assert_eq(trainer_eval(t, b, &before), 0);
	/* The fresh running statistics (0 and 1) are not the batch's. */
	cr_assert(fabs(before.loss - tr.loss) > 1e-3, "before: %g vs %g", before.loss, tr.loss);
	int64_t step = trainer_steps(t);
	float *w0 = malloc(sizeof(float) * net->n_floats);
	memcpy(w0, trainer_net(t)->data, sizeof(float) * net->n_floats);

	/* The same batch twice: the statistics of that batch. */
	cr_assert_eq(trainer_bn_begin(t), 0);
	cr_assert_eq(trainer_bn_add(t, b), 0, "%s", trainer_error(t));
	cr_assert_eq(trainer_bn_add(t, b), 0);
	cr_assert_eq(trainer_bn_commit(t), 0);
	cr_assert_eq(trainer_eval(t, b, &after), 0);
	/* Only the unbiased variance (m / (m - 1), m = 2 * 32 * 42) differs. */
	cr_assert(fabs(after.loss - tr.loss) < 2e-3 * fabs(tr.loss), "after: %g vs %g", after.loss,
		  tr.loss);
	cr_assert(fabs(after.policy_loss - tr.policy_loss) < 2e-3 * fabs(tr.policy_loss));
	cr_assert(fabs(after.value_loss - tr.value_loss) < 2e-3 * fabs(tr.value_loss) + 1e-4);
	cr_assert_eq(trainer_steps(t), step, "no step taken");
	/* The running statistics changed, nothing else. */
	const nn_net *n = trainer_net(t);
	const nn_conv *convs[] = { &n->input, &n->block[0].conv1, &n->block[0].conv2,
				   &n->block[1].conv1, &n->block[1].conv2, &n->policy_conv,
				   &n->value_conv };
	size_t changed = 0, stats = 0;
	for (size_t i = 0; i < n->n_floats; i++) {
		bool stat = false;
		for (size_t c = 0; c < sizeof(convs) / sizeof(convs[0]); c++) {
			const float *x = n->data + i;
			stat |= (x >= convs[c]->bn_mean && x < convs[c]->bn_mean + convs[c]->c_out) ||
				(x >= convs[c]->bn_var && x < convs[c]->bn_var + convs[c]->c_out);
		}
		stats += stat;
		if (n->data[i] != w0[i])
			cr_assert(stat, "float %zu changed and is no running statistic", i);
		changed += n->data[i] != w0[i];
	}
	cr_assert_gt(changed, stats / 2, "the running statistics changed");

	/* Two different batches: the pooled statistics (the mean of the two
	 * means), not the last batch's alone. */
	train_batch *b2 = tu_batch(net, 32, 99, 0, 1);
	float m1, v1, m2, v2, m12, v12;
	cr_assert_eq(trainer_bn_begin(t), 0);
	cr_assert_eq(trainer_bn_add(t, b), 0);
	cr_assert_eq(trainer_bn_commit(t), 0);
	first_stats(t, &m1, &v1);
	cr_assert_eq(trainer_bn_begin(t), 0);
	cr_assert_eq(trainer_bn_add(t, b2), 0);
	cr_assert_eq(trainer_bn_commit(t), 0);
	first_stats(t, &m2, &v2);
	cr_assert_eq(trainer_bn_begin(t), 0);
	cr_assert_eq(trainer_bn_add(t, b), 0);
	cr_assert_eq(trainer_bn_add(t, b2), 0);
	cr_assert_eq(trainer_bn_commit(t), 0);
	first_stats(t, &m12, &v12);
	cr_assert(fabsf(m1 - m2) > 1e-4, "the two batches differ");
	cr_assert_float_eq(m12, 0.5f * (m1 + m2), 1e-5);
	/* Pooled variance: the mean variance plus the spread of the means. */
	double m = 32.0 * 42, u1 = (m - 1) / m, u12 = (2 * m - 1) / (2 * m);
	double pooled = 0.5 * (v1 * u1 + v2 * u1) + 0.25 * (m1 - m2) * (m1 - m2);
	cr_assert(fabs(v12 * u12 - pooled) < 1e-4 * (1 + pooled), "%g vs %g", v12 * u12, pooled);

	/* Misuse is refused. */
	cr_assert_eq(trainer_bn_commit(t), -1);
	cr_assert_eq(trainer_bn_add(t, b), -1);
	free(w0);
	train_batch_free(b);
	train_batch_free(b2);
	trainer_free(t);
	nn_net_free(net);
}
