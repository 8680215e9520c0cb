/* cuda_common.h: error checks for CUDA, cuDNN and cuBLAS calls, carrying
 * file and line. A failure is reported to the caller (who falls back to the
 * CPU), never turned into exit(). Use inside functions that have an `out:`
 * label and `err`/`errlen` in scope and an int `rc`. CUDNN_CHECK and
 * CUBLAS_CHECK need cudnn.h / cublas_api.h included before they are used. */
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

#endif
