/* fallback.c: the device entry points of a binary built without CUDA: no
 * devices, so callers take the CPU path. (The backend table for such a
 * build, which refuses with the reason, is in cuda_backend.c.) */
#ifndef SENTE_HAVE_CUDA
#include "nn/cuda/cuda.h"

#include <stdio.h>

int nn_cuda_built(void) { return 0; }
int nn_cuda_device_count(void) { return 0; }

static const nn_cuda_probe no_cuda = {
	.reason = "this binary was built without CUDA (make CUDA=1 needs nvcc)",
};

const nn_cuda_probe *nn_cuda_probe_status(void) { return &no_cuda; }

const char *nn_cuda_probe_error(void) { return no_cuda.reason; }

void nn_cuda_versions(char *buf, size_t len) { snprintf(buf, len, "built without CUDA"); }

int nn_cuda_selftest(int device, char *err, size_t errlen)
{
	snprintf(err, errlen, "built without CUDA (make CUDA=1 needs nvcc)");
	return 1;
}

void nn_cuda_device_name(int device, char *buf, size_t len) { snprintf(buf, len, "none"); }

double nn_cuda_peak_tflops(int device, int fp32) { return 0.0; }

int nn_cuda_pci_bus_id(int device, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	return -1;
}

#else
/* Built with CUDA: the entry points live in probe.cu. */
typedef int nn_cuda_fallback_unused;
#endif
