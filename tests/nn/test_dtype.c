/* The one element type: names round-trip, sizes. */
#include <criterion/criterion.h>

#include "nn/dtype.h"

Test(nn_dtype, names_round_trip)
{
	const char *names[NN_DTYPE_COUNT] = { "fp32", "fp16", "bf16", "int8" };
	for (int i = 0; i < NN_DTYPE_COUNT; i++) {
		nn_dtype t;
		cr_assert(nn_dtype_from_name(names[i], &t), "%s", names[i]);
		cr_assert_eq((int)t, i);
		cr_assert_str_eq(nn_dtype_name(t), names[i]);
	}
	nn_dtype t = NN_DTYPE_BF16;
	cr_assert_not(nn_dtype_from_name("fp8", &t));
	cr_assert_not(nn_dtype_from_name("", &t));
	cr_assert_not(nn_dtype_from_name(NULL, &t));
	cr_assert_eq(t, NN_DTYPE_BF16, "a refused name leaves *out alone");
	cr_assert_str_eq(nn_dtype_name((nn_dtype)NN_DTYPE_COUNT), "?");
}

Test(nn_dtype, sizes)
{
	cr_assert_eq(nn_dtype_size(NN_DTYPE_FP32), 4);
	cr_assert_eq(nn_dtype_size(NN_DTYPE_FP16), 2);
	cr_assert_eq(nn_dtype_size(NN_DTYPE_BF16), 2);
	cr_assert_eq(nn_dtype_size(NN_DTYPE_INT8), 1);
}
