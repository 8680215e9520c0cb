// probe.cu: device discovery and a self-test kernel. It wires the CUDA build
// from the start: the Makefile compiles every nn/cuda/*.cu with nvcc when it
// finds one, and the test suite runs the self-test where a GPU is present.
#include "nn/cuda/cuda.h"
#include "nn/cuda/cuda_common.h"

// y = a * x + y, one element per thread.
__global__ void probe_axpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

extern "C" int nn_cuda_built(void) { return 1; }

extern "C" int nn_cuda_device_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError(); // clear the sticky "no driver" error
		return 0;
	}
	return n;
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
