/* scripts/gpu_check.sh on a machine without a device: it must say so
 * plainly and stop before building anything (exit 3), with a summary. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cuda.h"
#include "tests/scripts/script_util.h"

Test(gpu_check, without_a_device_it_says_so_and_stops)
{
	if (nn_cuda_device_count() > 0 || system("command -v nvidia-smi >/dev/null 2>&1") == 0)
		cr_skip_test("a GPU machine: the script would run for real");
	char dir[] = "/tmp/sente-gpucheck-XXXXXX", cmd[512], out[8192];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "sh scripts/gpu_check.sh %s", dir);
	cr_assert_eq(script_run(cmd, out, sizeof(out)), 3, "%s", out);
	cr_assert(strstr(out, "NO CUDA DEVICE"), "%s", out);
	cr_assert(strstr(out, "nothing was built"), "%s", out);
	cr_assert(strstr(out, "---- summary"), "%s", out);
	snprintf(cmd, sizeof(cmd), "test -s %s/summary.txt && rm -rf %s", dir, dir);
	cr_assert_eq(system(cmd), 0, "a summary file is written");
}

/* The curves stage on a machine that passes the device check but cannot
 * train on a GPU (a stand-in nvidia-smi, this build's sente): without a
 * database it names what is missing; with one, each precision's failed
 * run is a FAIL row with its exit status, and the script's exit is 1.
 * A stage that reported PASS here would hide a device that never
 * trained. */
Test(gpu_check, curves_report_what_failed, .timeout = 120)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	if (nn_cuda_device_count() > 0 || system("command -v nvidia-smi >/dev/null 2>&1") == 0)
		cr_skip_test("a GPU machine: the script would run for real");
	if (system("command -v nvcc >/dev/null 2>&1 || test -x /usr/local/cuda/bin/nvcc") != 0)
		cr_skip_test("no nvcc: the script stops before its stages");
	char dir[] = "/tmp/sente-gpucurves-XXXXXX", cmd[2048], out[16384];
	cr_assert(mkdtemp(dir));
	script_put(dir, "fake/nvidia-smi",
		   "#!/bin/sh\ncase \"$*\" in *-L*) echo 'GPU 0: Stand-in (UUID: GPU-0)' ;;"
		   " *) echo 'Stand-in, 0' ;; esac\n");
	script_put(dir, "tree/.gpu/lib/.keep", "");
	script_put(dir, "tree/build-gpu/tests/sente_tests", "#!/bin/sh\nexit 0\n");
	snprintf(cmd, sizeof(cmd),
		 "chmod +x %s/fake/nvidia-smi %s/tree/build-gpu/tests/sente_tests && "
		 "mkdir -p %s/tree/build-gpu/bin && ln -s %s %s/tree/build-gpu/bin/sente && "
		 "cp -r scripts %s/tree/ && cp /dev/null %s/games.db",
		 dir, dir, dir, bin, dir, dir, dir);
	cr_assert_eq(system(cmd), 0);

	snprintf(cmd, sizeof(cmd),
		 "cd %s/tree && PATH=%s/fake:$PATH SENTE_GPU_STAGES=curves sh scripts/gpu_check.sh %s/o1",
		 dir, dir, dir);
	cr_assert_eq(script_run(cmd, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "curves: FAIL no games: SENTE_GPU_DB names no file (unset)"), "%s", out);

	snprintf(cmd, sizeof(cmd),
		 "cd %s/tree && PATH=%s/fake:$PATH SENTE_GPU_STAGES=curves SENTE_GPU_DB=%s/games.db "
		 "sh scripts/gpu_check.sh %s/o2",
		 dir, dir, dir, dir);
	cr_assert_eq(script_run(cmd, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "curves    FAIL  4x48 fp32: exit"), "%s", out);
	cr_assert(strstr(out, "curves    FAIL  10x128 bf16: exit"), "%s", out);
	cr_assert(!strstr(out, "PASS"), "%s", out);
	snprintf(cmd, sizeof(cmd), "test -s %s/o2/env.sh && rm -rf %s", dir, dir);
	cr_assert_eq(system(cmd), 0, "env.sh is written");
}
