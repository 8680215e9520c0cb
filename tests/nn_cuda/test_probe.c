/* The CUDA self-test kernel, on a device when there is one. */
#include <criterion/criterion.h>

#include "nn/cuda/cuda.h"

Test(cuda, selftest_kernel)
{
	if (nn_cuda_device_count() == 0)
		cr_skip_test("no CUDA device (built with CUDA: %s)", nn_cuda_built() ? "yes" : "no");
	char err[256] = "";
	int rc = nn_cuda_selftest(0, err, sizeof(err));
	cr_assert_eq(rc, 0, "CUDA self-test failed: %s", err);
}

Test(cuda, missing_device_is_reported)
{
	char err[256] = "";
	int rc = nn_cuda_selftest(1000, err, sizeof(err));
	cr_assert_eq(rc, 1);
	cr_assert(err[0] != '\0', "the refusal says why");
}
