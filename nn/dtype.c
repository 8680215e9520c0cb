/* dtype.c: names of the element types (dtype.h). */
#include "nn/dtype.h"

#include <string.h>

static const char *const dtype_names[NN_DTYPE_COUNT] = { "fp32", "fp16", "bf16", "int8" };

const char *nn_dtype_name(nn_dtype t)
{
	return (unsigned)t < NN_DTYPE_COUNT ? dtype_names[t] : "?";
}

bool nn_dtype_from_name(const char *name, nn_dtype *out)
{
	for (int i = 0; name && i < NN_DTYPE_COUNT; i++)
		if (strcmp(name, dtype_names[i]) == 0) {
			*out = (nn_dtype)i;
			return true;
		}
	return false;
}
