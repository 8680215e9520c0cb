/* The one element type: names round-trip, sizes. */
#include <criterion/criterion.h>
#include <math.h>

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

Test(nn_dtype, bf16_rounds_to_nearest_even)
{
	cr_assert_eq(nn_bf16_from_float(1.0f), 0x3f80);
	cr_assert_eq(nn_bf16_from_float(-2.0f), 0xc000);
	/* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1. */
	cr_assert_eq(nn_bf16_from_float(1.0f + 0x1p-8f), 0x3f80);
	/* 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even. */
	cr_assert_eq(nn_bf16_from_float(1.0f + 3 * 0x1p-8f), 0x3f82);
	cr_assert_eq(nn_bf16_from_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
	cr_assert(isnan(nn_float_from_bf16(nn_bf16_from_float(NAN))));
	cr_assert(isinf(nn_float_from_bf16(nn_bf16_from_float(INFINITY))));
	for (uint32_t h = 0; h < 0x7f80; h += 37)
		cr_assert_eq(nn_bf16_from_float(nn_float_from_bf16((uint16_t)h)), h, "0x%04x", h);
}
