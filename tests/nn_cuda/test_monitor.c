/* The CUDA devices' use through NVML (nn_cuda_monitor): refused with a
 * reason for a device that is not there; on a device, samples within their
 * ranges that reach the taker once and then start again. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "nn/cuda/cuda.h"
#include "tests/gpu_skip.h"

Test(cuda_monitor, missing_device_is_refused_with_a_reason)
{
	int dev = 1000;
	char err[512] = "";
	cr_assert_null(nn_cuda_monitor_start(&dev, 1, 0.05, err, sizeof(err)));
	cr_assert(strstr(err, "no CUDA device 1000"), "%s", err);
	cr_assert_null(nn_cuda_monitor_start(&dev, 0, 0.05, err, sizeof(err)));
	cr_assert(strstr(err, "devices to monitor"), "%s", err);
	nn_cuda_monitor_stop(NULL);
}

Test(cuda_monitor, samples_a_device)
{
	SKIP_WITHOUT_GPU();
	int dev = 0;
	char err[512] = "";
	nn_cuda_monitor *m = nn_cuda_monitor_start(&dev, 1, 0.02, err, sizeof(err));
	cr_assert(m, "%s", err);
	/* Something on the device: its self-test kernel. */
	cr_assert_eq(nn_cuda_selftest(0, err, sizeof(err)), 0, "%s", err);
	usleep(200 * 1000);
	double util = -1, mem = -1;
	cr_assert_eq(nn_cuda_monitor_take(m, &util, &mem), 0);
	cr_assert(util >= 0 && util <= 100, "utilisation %g%%", util);
	cr_assert(mem > 0, "memory in use %g MiB (this process holds a context)", mem);
	nn_cuda_monitor_stop(m);
}
