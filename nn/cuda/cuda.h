/* cuda.h: what the rest of sente may ask of the CUDA side, callable from C
 * whether or not the CUDA backend was built (without it, there are no
 * devices). The inference backend itself is nn_backend_cuda (nn/backend.h,
 * nn/cuda/cuda_backend.cu). */
#ifndef SENTE_NN_CUDA_H
#define SENTE_NN_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True when this binary was built with the CUDA backend. */
int nn_cuda_built(void);
/* Number of usable CUDA devices; 0 when none, when the driver is missing, or
 * when the binary was built without CUDA. Never fails loudly: the reason
 * for 0 is kept, see nn_cuda_probe_status. */
int nn_cuda_device_count(void);

/* What the device probe saw, taken once per process (the first call of any
 * nn_cuda_* function that needs it). */
typedef struct nn_cuda_probe {
	int devices;         /* what nn_cuda_device_count returns */
	int error;           /* cudaError_t of cudaGetDeviceCount; 0: success */
	int driver_version;  /* cudaDriverGetVersion (12040 = CUDA 12.4); 0: no driver */
	int runtime_version; /* cudaRuntimeGetVersion of the libcudart loaded */
	char reason[400];    /* why there is no device, "" when there is one */
} nn_cuda_probe;
/* The probe's result; never NULL. */
const nn_cuda_probe *nn_cuda_probe_status(void);
/* Why nn_cuda_device_count() is 0 (the cudaError's name and string, the
 * driver and runtime versions, missing /dev/nvidia* nodes, a build without
 * CUDA), or "" when there is a device. Never NULL. */
const char *nn_cuda_probe_error(void);
/* "CUDA driver 12.4, runtime 13.0" or "no CUDA driver, runtime 13.0" into
 * buf (for reports). */
void nn_cuda_versions(char *buf, size_t len);
/* Runs a small kernel on `device` and checks its result: 0 on success, 1 when
 * there is no such device, -1 on a CUDA error (described in err). */
int nn_cuda_selftest(int device, char *err, size_t errlen);
/* The device's name ("NVIDIA H100 80GB HBM3"), or "none". */
void nn_cuda_device_name(int device, char *buf, size_t len);
/* The device's PCI bus id ("0000:1B:00.0") into buf: 0, or -1 when there
 * is no such device. (NVML numbers devices in PCI order, CUDA fastest
 * first: the bus id joins the two.) */
int nn_cuda_pci_bus_id(int device, char *buf, size_t len);

/* How busy CUDA devices are, sampled by a thread through NVML (the driver's
 * libnvidia-ml.so.1, opened at start; nothing is linked): the share of
 * time a kernel ran (NVML's utilisation over its last sample period) and
 * the memory in use on the device (every process's, as nvidia-smi shows). */
typedef struct nn_cuda_monitor nn_cuda_monitor;
/* Starts sampling `devices` (CUDA numbers, n of them) every `period`
 * seconds; NULL with the reason when there is no such device or no NVML. */
nn_cuda_monitor *nn_cuda_monitor_start(const int *devices, int n, double period, char *err,
				       size_t errlen);
/* Since the last take (or the start): the mean utilisation in percent over
 * the samples and the devices, and the most memory in use on one device in
 * MiB. 0, or -1 when no sample was taken since. */
int nn_cuda_monitor_take(nn_cuda_monitor *m, double *util_percent, double *mem_used_mib);
/* Stops the thread and frees m (NULL is fine). */
void nn_cuda_monitor_stop(nn_cuda_monitor *m);

/* Dense tensor-core peak of the device in TFLOP/s for fp16 (fp32 accumulate)
 * or, for fp32 = 1, plain fp32 FMA (no TF32: the fp32 path does not use
 * it), from its name and properties; 0 when unknown. */
double nn_cuda_peak_tflops(int device, int fp32);
/* True when the CUDA backend was built with cuDNN and cuBLAS (without them
 * nn_backend_cuda refuses every network). */
int nn_cuda_backend_built(void);
/* Loads cuDNN and cuBLAS (dlopen, once) and resolves every function the
 * backend calls; needs no device. 0, or -1 with the reason (also when the
 * backend was not built). */
int nn_cuda_load_libraries(char *err, size_t errlen);
/* Expands packed planes (nn/cuda/pack.h) on `device` with the kernel the
 * backend uses, into NHWC floats [batch][hw][c_pad]: the device half of
 * nn_unpack_planes_nhwc, for tests. 0, 1 when there is no device, -1 on a
 * CUDA error. */
int nn_cuda_expand_check(int device, int batch, int planes, int hw, int c_pad,
			 const unsigned *packed, float *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
