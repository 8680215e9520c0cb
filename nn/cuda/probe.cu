// probe.cu: device discovery and a self-test kernel. It wires the CUDA build
// from the start: the Makefile compiles every nn/cuda/*.cu with nvcc when it
// finds one, and the test suite runs the self-test where a GPU is present.
#include "nn/cuda/cuda.h"
#include "nn/cuda/cuda_common.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

// y = a * x + y, one element per thread.
__global__ void probe_axpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

extern "C" int nn_cuda_built(void) { return 1; }

static nn_cuda_probe probe_result;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

// "12.4" from 12040.
static void probe_version(int v, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
}

static void probe_run(void)
{
	nn_cuda_probe *p = &probe_result;
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		cudaGetLastError(); // clear the sticky "no driver" error
		n = 0;
	}
	p->devices = n;
	p->error = (int)e;
	if (cudaDriverGetVersion(&p->driver_version) != cudaSuccess)
		p->driver_version = 0;
	if (cudaRuntimeGetVersion(&p->runtime_version) != cudaSuccess)
		p->runtime_version = 0;
	cudaGetLastError();
	if (n > 0)
		return;
	char drv[32], rt[32];
	probe_version(p->driver_version, drv, sizeof(drv));
	probe_version(p->runtime_version, rt, sizeof(rt));
	size_t at = 0;
	if (e != cudaSuccess)
		at = (size_t)snprintf(p->reason, sizeof(p->reason), "%s (%s)", cudaGetErrorName(e),
				      cudaGetErrorString(e));
	else
		at = (size_t)snprintf(p->reason, sizeof(p->reason),
				      "the driver reports no device (CUDA_VISIBLE_DEVICES=%s)",
				      getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
								     : "unset");
	if (at < sizeof(p->reason)) {
		if (p->driver_version == 0)
			at += (size_t)snprintf(p->reason + at, sizeof(p->reason) - at,
					       "; no driver (libcuda.so.1), runtime %s", rt);
		else
			at += (size_t)snprintf(p->reason + at, sizeof(p->reason) - at,
					       "; driver CUDA %s, runtime %s%s", drv, rt,
					       p->driver_version < p->runtime_version
						       ? " (driver too old for this runtime)"
						       : "");
	}
	if (at < sizeof(p->reason) && access("/dev/nvidiactl", F_OK) != 0)
		snprintf(p->reason + at, sizeof(p->reason) - at, "; no /dev/nvidiactl");
}

extern "C" const nn_cuda_probe *nn_cuda_probe_status(void)
{
	pthread_once(&probe_once, probe_run);
	return &probe_result;
}

extern "C" const char *nn_cuda_probe_error(void) { return nn_cuda_probe_status()->reason; }

extern "C" int nn_cuda_device_count(void) { return nn_cuda_probe_status()->devices; }

extern "C" void nn_cuda_versions(char *buf, size_t len)
{
	const nn_cuda_probe *p = nn_cuda_probe_status();
	char drv[32], rt[32];
	probe_version(p->driver_version, drv, sizeof(drv));
	probe_version(p->runtime_version, rt, sizeof(rt));
	if (p->driver_version)
		snprintf(buf, len, "CUDA driver %s, runtime %s", drv, rt);
	else
		snprintf(buf, len, "no CUDA driver, runtime %s", rt);
}

extern "C" int nn_cuda_selftest(int device, char *err, size_t errlen)
{
	enum { N = 1 << 20 };
	int rc = 0;
	float *x = NULL, *y = NULL, *host = NULL;
	if (device < 0 || device >= nn_cuda_device_count()) {
		snprintf(err, errlen, "no CUDA device %d", device);
		return 1;
	}
	host = new float[N];
	for (int i = 0; i < N; i++)
		host[i] = (float)(i % 1000) * 0.25f;
	CUDA_CHECK(cudaSetDevice(device));
	CUDA_CHECK(cudaMalloc(&x, N * sizeof(float)));
	CUDA_CHECK(cudaMalloc(&y, N * sizeof(float)));
	CUDA_CHECK(cudaMemcpy(x, host, N * sizeof(float), cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(y, host, N * sizeof(float), cudaMemcpyHostToDevice));
	probe_axpy<<<(N + 255) / 256, 256>>>(N, 2.0f, x, y);
	CUDA_CHECK(cudaGetLastError());
	CUDA_CHECK(cudaMemcpy(host, y, N * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++) {
		float want = 3.0f * (float)(i % 1000) * 0.25f;
		if (host[i] != want) {
			snprintf(err, errlen, "self-test kernel: y[%d] = %g, want %g", i, host[i], want);
			rc = -1;
			goto out;
		}
	}
out:
	cudaFree(x);
	cudaFree(y);
	delete[] host;
	return rc;
}

extern "C" void nn_cuda_device_name(int device, char *buf, size_t len)
{
	cudaDeviceProp p;
	if (device < 0 || device >= nn_cuda_device_count() ||
	    cudaGetDeviceProperties(&p, device) != cudaSuccess) {
		cudaGetLastError();
		snprintf(buf, len, "none");
		return;
	}
	snprintf(buf, len, "%s", p.name);
}

extern "C" int nn_cuda_pci_bus_id(int device, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (device < 0 || device >= nn_cuda_device_count() || len > 4096 ||
	    cudaDeviceGetPCIBusId(buf, (int)len, device) != cudaSuccess) {
		cudaGetLastError();
		return -1;
	}
	return 0;
}

// Dense peaks from the vendors' data sheets where the name says which
// part it is; otherwise SMs x clock x per-SM rate of the architecture.
extern "C" double nn_cuda_peak_tflops(int device, int fp32)
{
	static const struct {
		const char *name; // substring of the device name
		double fp16;      // dense fp16 tensor TFLOP/s (fp32 accumulate)
		double fp32;      // fp32 FMA TFLOP/s
	} known[] = {
		{ "H100 PCIe", 756.0, 51.2 }, { "H100 NVL", 835.0, 60.0 },
		{ "H100", 989.4, 66.9 },      { "H200", 989.4, 66.9 },
		{ "H800", 989.4, 66.9 },      { "GH200", 989.4, 66.9 },
		{ "A100", 312.0, 19.5 },      { "A800", 312.0, 19.5 },
		{ "L40S", 362.1, 91.6 },      { "A10G", 70.0, 31.2 },
		{ "L4", 121.0, 30.3 },        { "RTX 4090", 165.2, 82.6 },
	};
	char name[256];
	nn_cuda_device_name(device, name, sizeof(name));
	if (!strcmp(name, "none"))
		return 0.0;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(name, known[i].name))
			return fp32 ? known[i].fp32 : known[i].fp16;
	int sms = 0, khz = 0, major = 0;
	if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
	    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
		cudaGetLastError();
		return 0.0;
	}
	// FLOPs per SM per clock: fp16 tensor (dense) and fp32 FMA.
	double per_sm = fp32 ? (major >= 8 ? 256.0 : 128.0)
			     : (major >= 9 ? 4096.0 : major >= 8 ? 2048.0 : major >= 7 ? 1024.0 : 0.0);
	return sms * (khz * 1e3) * per_sm * 1e-12;
}
