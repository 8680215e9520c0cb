/* --backend, --gpus and --precision on the command line, and what the
 * binary does with --backend cuda where no device is present: it says so
 * and runs on the CPU (gtp, selfplay), or skips (bench nn). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/cli/cli_util.h"

#include "nn/cuda/cuda.h"

static char out[1 << 16];

Test(cli_backend, bad_values_are_usage_errors)
{
	cr_assert_eq(cli_test_run("gtp --backend gpu", out, sizeof(out)), 2);
	cr_assert(strstr(out, "auto, cpu or cuda"), "%s", out);
	cr_assert_eq(cli_test_run("gtp --gpus 0,0", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("gtp --gpus x", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("gtp --precision fp8", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("selfplay --backend tpu --db x", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("bench nn --backend tpu", out, sizeof(out)), 2);
	cr_assert_eq(cli_test_run("bench search --gpus -1", out, sizeof(out)), 2);
}

Test(cli_backend, help_mentions_the_flags)
{
	cr_assert_eq(cli_test_run("gtp --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--backend") && strstr(out, "--gpus"), "%s", out);
	cr_assert_eq(cli_test_run("selfplay --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--backend") && strstr(out, "--gpus"), "%s", out);
	cr_assert_eq(cli_test_run("bench nn --help", out, sizeof(out)), 0);
	cr_assert(strstr(out, "--backend"), "%s", out);
}

Test(cli_backend, bench_nn_cuda_without_device_skips)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present");
	cr_assert_eq(cli_test_run("bench nn --backend cuda --batch 1 --seconds 0.01", out, sizeof(out)), 0);
	cr_assert(strstr(out, "skipped"), "%s", out);
	cr_assert_null(strstr(out, "{\"bench\""), "nothing measured: %s", out);
}

Test(cli_backend, bench_search_cuda_without_device_falls_back)
{
	if (nn_cuda_device_count() > 0)
		cr_skip_test("a CUDA device is present");
	cr_assert_eq(cli_test_run("bench search --backend cuda --blocks 1 --channels 8 --size 9 -v 50 "
			    "--repeat 1 --nn-threads 1",
			    out, sizeof(out)),
		     0, "%s", out);
	cr_assert(strstr(out, "falling back"), "%s", out);
	cr_assert(strstr(out, "\"backend\":\"cpu\""), "%s", out);
	cr_assert(strstr(out, "\"search_to_raw\":"), "%s", out);
}
