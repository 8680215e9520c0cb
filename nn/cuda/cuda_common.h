/* cuda_common.h: error checks for CUDA code, carrying file and line. A CUDA
 * failure is reported to the caller (who falls back to the CPU), never
 * turned into exit(). Use inside functions that have an `out:` label and
 * `err`/`errlen` in scope and an int `rc`. */
#ifndef SENTE_NN_CUDA_COMMON_H
#define SENTE_NN_CUDA_COMMON_H

#include <cuda_runtime.h>
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

#endif
