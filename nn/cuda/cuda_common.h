/* cuda_common.h: what the CUDA code of inference (nn/cuda) and training
 * (train/cuda) shares, so that no helper is copied between them.
 *
 * Host side: error checks for CUDA, cuDNN and cuBLAS calls, carrying file
 * and line. A failure is reported to the caller (who falls back to the
 * CPU), never turned into exit(). Use inside functions that have an `out:`
 * label and `err`/`errlen` in scope and an int `rc`. CUDNN_CHECK and
 * CUBLAS_CHECK need cudnn.h / cublas_api.h included before they are used.
 *
 * Device side (nvcc only): element loads and stores in fp32 whatever the
 * storage type, and the grid size of a grid-stride loop. */
#ifndef SENTE_NN_CUDA_COMMON_H
#define SENTE_NN_CUDA_COMMON_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#define CUDA_CHECK(call)                                                        \
	do {                                                                    \
		cudaError_t e_ = (call);                                        \
		if (e_ != cudaSuccess) {                                        \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, \
				 #call, cudaGetErrorString(e_));                \
			rc = -1;                                                \
			goto out;                                               \
		}                                                               \
	} while (0)

#define CUDNN_CHECK(call)                                                       \
	do {                                                                    \
		cudnnStatus_t s_ = (call);                                      \
		if (s_ != CUDNN_STATUS_SUCCESS) {                               \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, \
				 #call, cudnnGetErrorString(s_));               \
			rc = -1;                                                \
			goto out;                                               \
		}                                                               \
	} while (0)

#define CUBLAS_CHECK(call)                                                      \
	do {                                                                    \
		cublasStatus_t s_ = (call);                                     \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                              \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, \
				 #call, cublasGetStatusString(s_));             \
			rc = -1;                                                \
			goto out;                                               \
		}                                                               \
	} while (0)

/* ---- device side -------------------------------------------------------- */
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "nn/dtype.h"

/* Blocks for a grid-stride loop over n elements of `threads` per block: at
 * least 1, at most 65535 * 32 (the loop covers the rest). */
static inline int cuda_grid(long n, int threads)
{
	long g = (n + threads - 1) / threads;
	return (int)(g < 1 ? 1 : g > 65535L * 32 ? 65535L * 32 : g);
}

/* Element i of p as fp32; stores round to nearest even. */
static __device__ __forceinline__ float cuda_ld(const float *p, long i) { return p[i]; }
static __device__ __forceinline__ float cuda_ld(const __half *p, long i)
{
	return __half2float(p[i]);
}
static __device__ __forceinline__ float cuda_ld(const __nv_bfloat16 *p, long i)
{
	return __bfloat162float(p[i]);
}
static __device__ __forceinline__ void cuda_st(float *p, long i, float v) { p[i] = v; }
static __device__ __forceinline__ void cuda_st(__half *p, long i, float v)
{
	p[i] = __float2half_rn(v);
}
static __device__ __forceinline__ void cuda_st(__nv_bfloat16 *p, long i, float v)
{
	p[i] = __float2bfloat16_rn(v);
}

/* The same with the storage type dt (an nn_dtype: fp32, fp16 or bf16)
 * chosen at run time, a uniform branch per access. */
static __device__ __forceinline__ float cuda_ld(const void *p, long i, int dt)
{
	if (dt == NN_DTYPE_FP32)
		return cuda_ld((const float *)p, i);
	if (dt == NN_DTYPE_FP16)
		return cuda_ld((const __half *)p, i);
	return cuda_ld((const __nv_bfloat16 *)p, i);
}
static __device__ __forceinline__ void cuda_st(void *p, long i, int dt, float v)
{
	if (dt == NN_DTYPE_FP32)
		cuda_st((float *)p, i, v);
	else if (dt == NN_DTYPE_FP16)
		cuda_st((__half *)p, i, v);
	else
		cuda_st((__nv_bfloat16 *)p, i, v);
}
#endif /* __CUDACC__ */

#endif
