/* cuda.h: what the rest of sente may ask of the CUDA side, callable from C
 * whether or not the CUDA backend was built (without it, there are no
 * devices). The inference backend proper arrives in nn/cuda/ later and fills
 * the same backend table as the CPU one. */
#ifndef SENTE_NN_CUDA_H
#define SENTE_NN_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when this binary was built with the CUDA backend. */
int nn_cuda_built(void);
/* Number of usable CUDA devices; 0 when none, when the driver is missing, or
 * when the binary was built without CUDA. Never fails loudly. */
int nn_cuda_device_count(void);
/* Runs a small kernel on `device` and checks its result: 0 on success, 1 when
 * there is no such device, -1 on a CUDA error (described in err). */
int nn_cuda_selftest(int device, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
