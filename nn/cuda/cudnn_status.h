/* cudnn_status.h: decisions about cuDNN status codes that are pure logic,
 * kept apart from the backend so that they are tested on any machine (no
 * device, no cuDNN). The codes are cuDNN 9's (cudnn_graph.h); the backend
 * checks at compile time that the ones named here match the header it is
 * built against. */
#ifndef SENTE_NN_CUDA_CUDNN_STATUS_H
#define SENTE_NN_CUDA_CUDNN_STATUS_H

#include <stddef.h>

/* cuDNN 9 groups its codes by thousands: 2xxx bad parameter, 3xxx not
 * supported, 4xxx internal error, 5xxx execution failed. */
enum {
	NN_CUDNN_STATUS_SUCCESS = 0,
	NN_CUDNN_STATUS_BAD_PARAM = 2000,
	NN_CUDNN_STATUS_NOT_SUPPORTED = 3000,
	NN_CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER = 3005,
	NN_CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART = 3006,
	NN_CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH = 3007,
	NN_CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING = 3008,
	NN_CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE = 3009,
	NN_CUDNN_STATUS_INTERNAL_ERROR = 4000,
	NN_CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4003, /* ALLOC_FAILED */
	NN_CUDNN_STATUS_EXECUTION_FAILED = 5000,
};

/* True when a failed cudnnConvolutionBiasActivationForward only declines
 * this combination of shapes, types and algorithm, so that the layer may
 * take the plain path (convolution, then our bias/residual/activation
 * kernel): the NOT_SUPPORTED family, and the plain BAD_PARAM that the
 * legacy API returns for an unsupported activation/algorithm pair. False
 * for success and for every real error (execution failed, allocation
 * failed, internal error, a driver or runtime cuDNN cannot work with, a
 * missing sub-library, a bad pointer), which the backend reports instead
 * of hiding behind the plain path. */
int nn_cudnn_fused_declines(int status);

/* cuDNN's math types (cudnnMathType_t). */
enum {
	NN_CUDNN_DEFAULT_MATH = 0,
	NN_CUDNN_TENSOR_OP_MATH = 1,
	NN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
	NN_CUDNN_FMA_MATH = 3,
};

/* One of cuDNN's timed (or ranked) convolution algorithms, as the fields
 * of cudnnConvolutionFwdAlgoPerf_t that the choice needs. */
typedef struct {
	int status;    /* cuDNN status of its trial */
	int math;      /* NN_CUDNN_*_MATH */
	size_t memory; /* workspace bytes */
} nn_cudnn_algo_perf;

/* Which of n algorithms, fastest first as cuDNN lists them, a layer runs:
 * the index, or -1 when none will do. Only those that succeeded within
 * ws_limit bytes of workspace. fp32 (half 0) takes the first with FMA or
 * default math, never TF32 (tensor-op math): results must match the CPU's
 * fp32. Half precision takes the first with tensor-op math, and another
 * only when there is none (a device without tensor cores): cuDNN's single
 * timing of a small layer can rank a CUDA-core variant first by noise, and
 * on an H200 (2026-11-27) one such choice for the 128->128 tower conv at
 * bucket 32 ran a 10x128 network at 10,078 evaluations/s, against 61,154
 * in an earlier call on the same machine. */
int nn_cudnn_pick_algo(const nn_cudnn_algo_perf *perf, int n, int half, size_t ws_limit);

#endif
