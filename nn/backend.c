/* backend.c: the backend-independent glue of backend.h. */
#include "nn/backend.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const precision_names[] = { "fp32", "bf16", "int8" };

const char *nn_precision_name(nn_precision p)
{
	return (unsigned)p < 3 ? precision_names[p] : "?";
}

bool nn_precision_from_name(const char *name, nn_precision *out)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(name, precision_names[i]) == 0) {
			*out = (nn_precision)i;
			return true;
		}
	return false;
}

nn_backend_options nn_backend_options_default(void)
{
	nn_backend_options o;
	memset(&o, 0, sizeof(o));
	o.precision = NN_PRECISION_FP32;
	o.algo = NN_CONV_AUTO;
	return o;
}

nn_backend *nn_backend_new(const nn_backend_ops *ops, const nn_net *net, int max_batch,
			   const nn_backend_options *opt, char *err, size_t errlen)
{
	nn_backend *be = calloc(1, sizeof(*be));
	if (!be) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	nn_backend_options def = nn_backend_options_default();
	if (ops->create(net, max_batch, opt ? opt : &def, &be->ctx, err, errlen) < 0) {
		free(be);
		return NULL;
	}
	be->ops = ops;
	be->max_batch = max_batch;
	be->arch = net->arch;
	return be;
}

void nn_backend_free(nn_backend *be)
{
	if (!be)
		return;
	be->ops->destroy(be->ctx);
	free(be);
}

int nn_backend_forward(nn_backend *be, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl_or_null)
{
	assert(batch >= 1 && batch <= be->max_batch);
	return be->ops->forward(be->ctx, batch, planes, policy_logits, value, wdl_or_null);
}
