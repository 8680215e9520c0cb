/* Which cuDNN status of the fused conv+bias+activation call only declines
 * the layer (plain path) and which is an error: host logic, no device. */
#include <criterion/criterion.h>

#include "nn/cuda/cudnn_status.h"

Test(nn_cuda_status, fused_declines_only_when_unsupported)
{
	static const struct {
		int status;   /* cuDNN 9 code */
		int declines; /* expected */
	} cases[] = {
		{ 0, 0 },    /* success: nothing to decline */
		{ 2000, 1 }, /* BAD_PARAM: the legacy API's "unsupported combination" */
		{ 2002, 0 }, /* BAD_PARAM_NULL_POINTER: a bug */
		{ 2003, 0 }, /* BAD_PARAM_MISALIGNED_POINTER: a bug */
		{ 3000, 1 }, /* NOT_SUPPORTED */
		{ 3002, 1 }, /* NOT_SUPPORTED_SHAPE */
		{ 3003, 1 }, /* NOT_SUPPORTED_DATA_TYPE */
		{ 3004, 1 }, /* NOT_SUPPORTED_LAYOUT */
		{ 3005, 0 }, /* INCOMPATIBLE_CUDA_DRIVER: the machine, not the layer */
		{ 3006, 0 }, /* INCOMPATIBLE_CUDART */
		{ 3007, 0 }, /* ARCH_MISMATCH */
		{ 3009, 0 }, /* SUBLIBRARY_UNAVAILABLE */
		{ 3010, 1 }, /* SHARED_MEMORY_INSUFFICIENT for this shape */
		{ 4000, 0 }, /* INTERNAL_ERROR */
		{ 4003, 0 }, /* HOST_ALLOCATION_FAILED (ALLOC_FAILED) */
		{ 4004, 0 }, /* DEVICE_ALLOCATION_FAILED */
		{ 5000, 0 }, /* EXECUTION_FAILED */
		{ 5003, 0 }, /* EXECUTION_FAILED_CUDART */
		{ 1001, 0 }, /* VERSION_MISMATCH */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(nn_cudnn_fused_declines(cases[i].status), cases[i].declines,
			     "status %d", cases[i].status);
}
