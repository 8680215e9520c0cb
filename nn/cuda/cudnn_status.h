/* cudnn_status.h: decisions about cuDNN status codes that are pure logic,
 * kept apart from the backend so that they are tested on any machine (no
 * device, no cuDNN). The codes are cuDNN 9's (cudnn_graph.h); the backend
 * checks at compile time that the ones named here match the header it is
 * built against. */
#ifndef SENTE_NN_CUDA_CUDNN_STATUS_H
#define SENTE_NN_CUDA_CUDNN_STATUS_H

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

#endif
