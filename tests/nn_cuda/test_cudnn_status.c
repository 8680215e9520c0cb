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

/* The convolution algorithm a layer runs, from cuDNN's list (fastest
 * first): half precision keeps to tensor cores unless none succeeded,
 * fp32 never takes tensor-op (TF32) math, and nothing that failed or
 * needs more workspace than allowed is taken. */
Test(nn_cuda_status, algorithm_choice_keeps_half_precision_on_tensor_cores)
{
	enum { OK = NN_CUDNN_STATUS_SUCCESS, NS = NN_CUDNN_STATUS_NOT_SUPPORTED };
	enum { D = NN_CUDNN_DEFAULT_MATH, T = NN_CUDNN_TENSOR_OP_MATH,
	       TC = NN_CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, F = NN_CUDNN_FMA_MATH };
	const size_t lim = 1000;
	/* What an H200 timed for the 128->128 tower conv at batch 32: a
	 * CUDA-core variant listed first. */
	nn_cudnn_algo_perf noisy[] = { { OK, D, 0 }, { OK, T, 100 }, { OK, F, 0 } };
	cr_expect_eq(nn_cudnn_pick_algo(noisy, 3, 1, lim), 1);
	cr_expect_eq(nn_cudnn_pick_algo(noisy, 3, 0, lim), 0);
	/* Tensor-op math with conversion counts as tensor cores for half. */
	nn_cudnn_algo_perf conv[] = { { OK, F, 0 }, { OK, TC, 0 } };
	cr_expect_eq(nn_cudnn_pick_algo(conv, 2, 1, lim), 1);
	/* fp32 passes over tensor-op results. */
	nn_cudnn_algo_perf tf32[] = { { OK, T, 0 }, { OK, TC, 0 }, { OK, F, 0 } };
	cr_expect_eq(nn_cudnn_pick_algo(tf32, 3, 0, lim), 2);
	cr_expect_eq(nn_cudnn_pick_algo(tf32, 2, 0, lim), -1);
	/* Failed trials and workspace over the limit are passed over, the
	 * tensor-op ones too. */
	nn_cudnn_algo_perf bad[] = { { NS, T, 0 }, { OK, T, lim + 1 }, { OK, D, lim }, { OK, T, lim } };
	cr_expect_eq(nn_cudnn_pick_algo(bad, 4, 1, lim), 3);
	cr_expect_eq(nn_cudnn_pick_algo(bad, 4, 0, lim), 2);
	/* No tensor cores (an older device): half takes the fastest that ran. */
	nn_cudnn_algo_perf old[] = { { NS, T, 0 }, { OK, D, 0 }, { OK, F, 0 } };
	cr_expect_eq(nn_cudnn_pick_algo(old, 3, 1, lim), 1);
	cr_expect_eq(nn_cudnn_pick_algo(old, 0, 1, lim), -1);
}
