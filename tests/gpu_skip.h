/* gpu_skip.h: how a test that needs a CUDA device leaves when there is none.
 *
 * Normally it skips (cr_skip_test) with the device probe's reason, so the
 * CPU tests in the same binary still run. With SENTE_REQUIRE_GPU=1 in the
 * environment (a GPU machine, scripts/gpu_check.sh) it fails instead, with
 * the same reason: a device test that would not run is then an error, never
 * a silent skip. A test that needs more devices than the machine has still
 * skips when there is at least one.
 *
 * Every device test starts with one of these:
 *   SKIP_WITHOUT_GPU();                  one device
 *   SKIP_WITHOUT_GPUS(2);                two devices
 *   SKIP_WITHOUT_GPU_BUILT(built, what); one device and a part of the build
 *                                        (e.g. nn_cuda_backend_built(),
 *                                        "the CUDA backend (needs cuDNN)")
 */
#ifndef SENTE_TESTS_GPU_SKIP_H
#define SENTE_TESTS_GPU_SKIP_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "nn/cuda/cuda.h"

/* True when SENTE_REQUIRE_GPU is set to anything but "" or "0". */
static inline int gpu_skip_required(void)
{
	const char *v = getenv("SENTE_REQUIRE_GPU");
	return v && v[0] && strcmp(v, "0") != 0;
}

/* Skips, or fails under SENTE_REQUIRE_GPU, unless `devices` devices are
 * visible and `built` (the part of the build the test needs, described by
 * `what`) is true. */
static inline void gpu_skip_unless(int devices, int built, const char *what)
{
	int have = nn_cuda_device_count();
	if (have == 0) {
		if (gpu_skip_required())
			cr_assert_fail("SENTE_REQUIRE_GPU is set but there is no CUDA device: %s",
				       nn_cuda_probe_error());
		cr_skip_test("no CUDA device: %s (set SENTE_REQUIRE_GPU=1 to make this a failure)",
			     nn_cuda_probe_error());
	}
	if (have < devices)
		cr_skip_test("needs %d CUDA devices, %d visible", devices, have);
	if (!built) {
		if (gpu_skip_required())
			cr_assert_fail("SENTE_REQUIRE_GPU is set but %s was not built", what);
		cr_skip_test("a CUDA device, but %s was not built", what);
	}
}

#define SKIP_WITHOUT_GPU() gpu_skip_unless(1, 1, "")
#define SKIP_WITHOUT_GPUS(n) gpu_skip_unless((n), 1, "")
#define SKIP_WITHOUT_GPU_BUILT(built, what) gpu_skip_unless(1, (built), (what))

#endif
