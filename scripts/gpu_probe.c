/* gpu_probe.c: what sente sees of the CUDA devices, for scripts/gpu_check.sh
 * (built by `make gpu-probe` against the library, so it sees exactly what
 * sente does): one line per fact, "key value", then exit status 0 when at
 * least one device is usable, 1 when none (the reason printed), 2 when
 * the CUDA backend cannot load its libraries. */
#include <stdio.h>

#include "nn/cuda/cuda.h"

int main(void)
{
	const nn_cuda_probe *p = nn_cuda_probe_status();
	char buf[512];
	nn_cuda_versions(buf, sizeof(buf));
	printf("built_with_cuda %d\nbackend_built %d\nversions %s\ndevices %d\n", nn_cuda_built(),
	       nn_cuda_backend_built(), buf, p->devices);
	for (int d = 0; d < p->devices; d++) {
		nn_cuda_device_name(d, buf, sizeof(buf));
		printf("device %d %s (peak %.0f fp16 / %.1f fp32 TFLOP/s)\n", d, buf,
		       nn_cuda_peak_tflops(d, 0), nn_cuda_peak_tflops(d, 1));
	}
	if (p->devices == 0) {
		printf("no_device %s\n", nn_cuda_probe_error());
		return 1;
	}
	char err[512] = "";
	if (nn_cuda_load_libraries(err, sizeof(err)) < 0) {
		printf("libraries %s\n", err);
		return 2;
	}
	printf("libraries cuDNN and cuBLAS loaded\n");
	for (int d = 0; d < p->devices; d++) {
		int rc = nn_cuda_selftest(d, err, sizeof(err));
		printf("selftest %d %s\n", d, rc == 0 ? "ok" : err);
		if (rc != 0)
			return 1;
	}
	return 0;
}
