/* The CUDA self-test kernel, on a device when there is one. */
#include <criterion/criterion.h>
#include <string.h>

#include "nn/cuda/cuda.h"
#include "tests/gpu_skip.h"

Test(cuda, selftest_kernel)
{
	SKIP_WITHOUT_GPU();
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

/* No device is never silent: the probe keeps the reason and the versions. */
Test(cuda, probe_says_why_there_is_no_device)
{
	const nn_cuda_probe *p = nn_cuda_probe_status();
	cr_assert_eq(p->devices, nn_cuda_device_count());
	if (p->devices > 0) {
		cr_assert_str_empty(nn_cuda_probe_error());
		return;
	}
	cr_assert(strlen(nn_cuda_probe_error()) > 10, "'%s'", nn_cuda_probe_error());
	if (nn_cuda_built())
		cr_assert(strstr(nn_cuda_probe_error(), "runtime"), "%s", nn_cuda_probe_error());
	char v[128];
	nn_cuda_versions(v, sizeof(v));
	cr_assert(v[0]);
}
