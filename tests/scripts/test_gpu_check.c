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
