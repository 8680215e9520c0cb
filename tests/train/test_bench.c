/* The learner benchmark as a library call: the CPU trainer on a tiny
 * network, and the refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/cuda/cuda.h"
#include "nn/net.h"
#include "train/bench.h"

Test(train_bench, cpu_steps_are_timed)
{
	train_bench_options o = train_bench_options_default();
	o.game.size = 5;
	o.blocks = 1;
	o.channels = 8;
	o.batch = 4;
	o.steps = 2;
	o.threads = 1;
	train_bench_result r;
	char err[512];
	cr_assert_eq(train_bench_run(&o, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.board, 5);
	cr_assert(r.seconds > 0 && r.samples_per_s > 0);
	cr_assert(r.forward_flops > 0);
	cr_assert(r.loss > 0);
	cr_assert_eq(r.micro_batch, 0, "CUDA fields stay 0 on the CPU");
	cr_assert(r.conv && !strcmp(r.conv, "direct"), "8 channels: no Winograd, got %s", r.conv);
}

/* --save writes the network the steps train, a model any sente (or
 * scripts/bench_train_torch.py) loads, of the shape asked for. */
Test(train_bench, the_network_is_saved)
{
	char path[] = "/tmp/sente_bench_net_XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	train_bench_options o = train_bench_options_default();
	o.blocks = 2;
	o.channels = 16;
	o.batch = 4;
	o.steps = 1;
	o.threads = 1;
	o.algo = NN_CONV_DIRECT;
	o.save = path;
	train_bench_result r;
	char err[512];
	cr_assert_eq(train_bench_run(&o, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(r.conv, "direct");
	nn_net *net = nn_net_load(path, NULL, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert_eq(net->arch.blocks, 2);
	cr_assert_eq(net->arch.channels, 16);
	cr_assert_eq(net->arch.board_w, 9);
	nn_net_free(net);
	unlink(path);
}

Test(train_bench, refusals)
{
	train_bench_options o = train_bench_options_default();
	train_bench_result r;
	char err[512];
	o.precision = NN_DTYPE_FP16;
	cr_assert_eq(train_bench_run(&o, &r, err, sizeof(err)), -1);
	cr_assert(strstr(err, "fp32 only"), "%s", err);
	if (nn_cuda_device_count() == 0) {
		o.cuda = true;
		cr_assert_eq(train_bench_run(&o, &r, err, sizeof(err)), -1);
		cr_assert(strstr(err, "no CUDA device"), "%s", err);
	}
}
