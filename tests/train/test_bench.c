/* The learner benchmark as a library call: the CPU trainer on a tiny
 * network, and the refusals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	cr_assert(strstr(err, "fp32 or bf16"), "%s", err);
	if (nn_cuda_device_count() == 0) {
		o.cuda = true;
		cr_assert_eq(train_bench_run(&o, &r, err, sizeof(err)), -1);
		cr_assert(strstr(err, "no CUDA device"), "%s", err);
	}
}

/* `sente bench train --precision bf16` as a user runs it: the CPU learner
 * trains in bf16 where the CPU has AVX-512 BF16, and says it cannot (exit
 * 1, nothing on stdout) where oneDNN is kept below it (ONEDNN_MAX_CPU_ISA,
 * read once per process, hence the binary). */
static int run_bench(const char *env, char *out, size_t len)
{
	const char *bin = getenv("SENTE_BIN");
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "%s %s bench train --precision bf16 --size 9 --blocks 1 "
		 "--channels 16 --batch 8 --steps 2 --threads 1 2>&1", env, bin);
	FILE *f = popen(cmd, "r");
	cr_assert(f);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = 0;
	int st = pclose(f);
	cr_assert(WIFEXITED(st), "%s", out);
	return WEXITSTATUS(st);
}

Test(train_bench, bf16_on_the_cpu)
{
	if (!getenv("SENTE_BIN"))
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	char out[2048];
	int rc = run_bench("ONEDNN_MAX_CPU_ISA=AVX512_CORE", out, sizeof(out));
	cr_assert_eq(rc, 1, "%s", out);
	cr_assert(strstr(out, "bf16 training needs a CPU with AVX-512 BF16"), "%s", out);
	cr_assert_null(strstr(out, "{\"bench\""), "%s", out);
	rc = run_bench("", out, sizeof(out));
	if (!__builtin_cpu_supports("avx512bf16")) {
		cr_assert_eq(rc, 1, "%s", out);
		cr_assert(strstr(out, "AVX-512 BF16"), "%s", out);
		return;
	}
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "\"precision\":\"bf16\""), "%s", out);
	cr_assert(strstr(out, "\"conv\":\"direct\""), "%s", out);
}
