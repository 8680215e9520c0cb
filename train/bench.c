/* bench.c: learner throughput (see bench.h). */
#include "engine/game_desc.h"
#include "train/bench.h"

#include <stdio.h>
#include <string.h>

#include "engine/clock.h"
#include "engine/rng.h"
#include "nn/cuda/cuda.h"
#include "nn/net.h"
#include "train/trainer.h"

train_bench_options train_bench_options_default(void)
{
	train_bench_options o;
	memset(&o, 0, sizeof(o));
	o.precision = NN_DTYPE_FP32;
	o.game = game_desc_by_name("go")->defaults;
	o.game.size = 9;
	o.blocks = 6;
	o.channels = 64;
	o.batch = 64;
	o.steps = 10;
	return o;
}

/* Random planes (0/1), policy distributions, values and WDL targets; for
 * the heads an owner of -1, 0 or +1 per point and a score in [-1, 1]. */
static void fill_batch(train_batch *b, uint64_t seed)
{
	uint64_t s = seed;
	for (int i = 0; i < b->cap; i++) {
		for (int k = 0; k < b->in_size; k++)
			b->planes[(size_t)i * b->in_size + k] = (float)(rng_next(&s) & 1);
		double sum = 0;
		float *p = b->policy + (size_t)i * b->n_actions;
		for (int a = 0; a < b->n_actions; a++)
			sum += p[a] = (float)(rng_next(&s) % 1000) + 1.0f;
		for (int a = 0; a < b->n_actions; a++)
			p[a] = (float)(p[a] / sum);
		b->value[i] = (float)((int)(rng_next(&s) % 3) - 1);
		if (b->wdl) {
			float z = b->value[i];
			b->wdl[3 * i] = z > 0 ? z : 0;
			b->wdl[3 * i + 1] = 1 - (z < 0 ? -z : z);
			b->wdl[3 * i + 2] = z < 0 ? -z : 0;
		}
		if (b->own) {
			b->own_w[i] = 1;
			for (int q = 0; q < b->n_points; q++)
				b->own[(size_t)i * b->n_points + q] = (float)((int)(rng_next(&s) % 3) - 1);
		}
		if (b->score) {
			b->score_w[i] = 1;
			b->score[i] = (float)((double)(rng_next(&s) % 2001) / 1000.0 - 1.0);
		}
	}
	b->n = b->cap;
}

/* What can be checked before anything is built. 0, or -1 with a message. */
static int check_options(const train_bench_options *o, char *err, size_t errlen)
{
	if (!o->cuda && o->precision != NN_DTYPE_FP32 && o->precision != NN_DTYPE_BF16) {
		snprintf(err, errlen, "the cpu learner trains in fp32 or bf16, not %s",
			 nn_dtype_name(o->precision));
		return -1;
	}
	if (o->cuda && nn_cuda_device_count() == 0) {
		snprintf(err, errlen, "no CUDA device (built with CUDA: %s, GPU trainer: %s): %s; use "
			 "--backend cpu", nn_cuda_built() ? "yes" : "no", gpu_train_built() ? "yes" : "no",
			 nn_cuda_probe_error());
		return -1;
	}
	return 0;
}

/* The trainers the steps run on: one of *ct, *gt. */
typedef struct bench_trainers {
	trainer *ct;      /* the CPU trainer, or NULL */
	gpu_trainer *gt;  /* the GPU trainer, or NULL */
} bench_trainers;

/* One warm-up step and o->steps timed ones on b into *out. 0, or -1 with
 * the trainer's message. */
static int time_steps(const train_bench_options *o, bench_trainers *t, const train_batch *b,
		      train_bench_result *out, char *err, size_t errlen)
{
	double t0 = 0, compute = 0;
	train_stats st;
	for (int s = 0; s <= o->steps; s++) {
		if (s == 1)
			t0 = clock_now(); /* the first step warms up */
		int r = t->gt ? gpu_trainer_step_host(t->gt, b, &st) : trainer_step(t->ct, b, &st);
		if (r < 0) {
			snprintf(err, errlen, "%s", t->gt ? gpu_trainer_error(t->gt) : trainer_error(t->ct));
			return -1;
		}
		if (s >= 1)
			compute += t->gt ? st.compute_seconds : 0;
	}
	double samples = (double)o->batch * o->steps;
	out->seconds = clock_now() - t0;
	out->samples_per_s = out->seconds > 0 ? samples / out->seconds : 0;
	out->loss = st.loss;
	if (t->gt) {
		double peak = nn_cuda_peak_tflops(o->device, o->precision == NN_DTYPE_FP32) * 1e12;
		out->micro_batch = gpu_trainer_micro_batch(t->gt);
		out->compute_samples_per_s = compute > 0 ? samples / compute : 0;
		out->peak_tflops = peak / 1e12;
		out->mfu = peak > 0 ? 3.0 * out->forward_flops * out->samples_per_s / peak : 0.0;
	}
	return 0;
}

int train_bench_run(const train_bench_options *o, train_bench_result *out, char *err,
		    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (check_options(o, err, errlen) != 0)
		return -1;
	nn_arch arch = nn_arch_default(&o->game, o->blocks, o->channels);
	nn_arch_set_se(&arch, o->se_channels);
	nn_arch_set_heads(&arch, (o->own ? NN_HEAD_OWN : 0) | (o->score ? NN_HEAD_SCORE : 0));
	nn_net *net = nn_net_new(&arch, err, errlen);
	train_batch *b = NULL;
	bench_trainers t = { 0 };
	int rc = -1;
	if (!net)
		return -1;
	nn_net_init_random(net, 1);
	if (o->save && nn_net_save(net, o->save, err, errlen) != 0)
		goto out;
	out->board = arch.board_w;
	out->forward_flops = gpu_train_forward_flops(&arch);
	train_options to = train_options_default();
	to.batch = o->batch;
	to.threads = o->threads;
	to.algo = o->algo;
	if (!o->cuda)
		to.precision = o->precision;
	b = train_batch_new(&arch, o->batch, arch.value_outputs == 3);
	if (!b) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	fill_batch(b, 7);
	if (o->cuda) {
		gpu_train_options g = gpu_train_options_default();
		g.device = o->device;
		g.precision = o->precision;
		g.micro_batch = o->micro_batch;
		t.gt = gpu_trainer_new(net, &to, &g, err, errlen);
	} else {
		t.ct = trainer_new(net, &to, err, errlen);
	}
	if (t.ct)
		out->conv = trainer_conv_name(t.ct);
	if (t.gt || t.ct)
		rc = time_steps(o, &t, b, out, err, errlen);
out:
	gpu_trainer_free(t.gt);
	trainer_free(t.ct);
	train_batch_free(b);
	nn_net_free(net);
	return rc;
}
