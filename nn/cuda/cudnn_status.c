/* cudnn_status.c: see cudnn_status.h. Built in every configuration. */
#include "nn/cuda/cudnn_status.h"

int nn_cudnn_fused_declines(int status)
{
	if (status == NN_CUDNN_STATUS_BAD_PARAM)
		return 1;
	if (status / 1000 != NN_CUDNN_STATUS_NOT_SUPPORTED / 1000)
		return 0;
	/* Not supported by this machine rather than by this layer: the plain
	 * path would fail the same way, and the user must hear about it. */
	switch (status) {
	case NN_CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER:
	case NN_CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART:
	case NN_CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH:
	case NN_CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING:
	case NN_CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE:
		return 0;
	default:
		return 1;
	}
}

int nn_cudnn_pick_algo(const nn_cudnn_algo_perf *perf, int n, int half, size_t ws_limit)
{
	int any = -1;
	for (int i = 0; i < n; i++) {
		if (perf[i].status != NN_CUDNN_STATUS_SUCCESS || perf[i].memory > ws_limit)
			continue;
		int tensor = perf[i].math == NN_CUDNN_TENSOR_OP_MATH ||
			     perf[i].math == NN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
		if (!half) {
			if (perf[i].math == NN_CUDNN_FMA_MATH || perf[i].math == NN_CUDNN_DEFAULT_MATH)
				return i;
			continue;
		}
		if (tensor)
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}
