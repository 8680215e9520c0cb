/* monitor.c: how busy the CUDA devices are, sampled through NVML (see
 * nn/cuda/cuda.h). NVML comes with the driver, not the toolkit, so it is
 * opened at run time, and the few declarations it needs are written here
 * from its documented C interface (nvml.h is not installed everywhere the
 * toolkit is). A binary without CUDA has no devices and starts no monitor. */
#include "nn/cuda/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/clock.h"

#define MONITOR_MAX_DEVICES 64

typedef struct nvml_device_st *nvml_device;
typedef struct {
	unsigned int gpu, memory; /* percent of the last sample period busy */
} nvml_utilization;
typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvml_memory;

struct nn_cuda_monitor {
	void *lib;
	int (*shutdown)(void);
	int (*utilization)(nvml_device, nvml_utilization *);
	int (*memory)(nvml_device, nvml_memory *);
	nvml_device dev[MONITOR_MAX_DEVICES];
	int n;
	double period;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;
	double util_sum; /* since the last take: sum over samples and devices */
	long samples;    /* device samples in util_sum */
	double mem_max;  /* most bytes in use on one device */
};

static void *monitor_main(void *p)
{
	nn_cuda_monitor *m = p;
	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		pthread_mutex_unlock(&m->mu);
		double util = 0, mem = 0;
		int got = 0;
		for (int i = 0; i < m->n; i++) {
			nvml_utilization u;
			nvml_memory mm;
			if (m->utilization(m->dev[i], &u) == 0) {
				util += u.gpu;
				got++;
			}
			if (m->memory(m->dev[i], &mm) == 0 && (double)mm.used > mem)
				mem = (double)mm.used;
		}
		pthread_mutex_lock(&m->mu);
		m->util_sum += util;
		m->samples += got;
		if (mem > m->mem_max)
			m->mem_max = mem;
		struct timespec until = clock_deadline(m->period);
		while (!m->stop && pthread_cond_timedwait(&m->cv, &m->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

nn_cuda_monitor *nn_cuda_monitor_start(const int *devices, int n, double period, char *err,
				       size_t errlen)
{
	if (n < 1 || n > MONITOR_MAX_DEVICES) {
		snprintf(err, errlen, "%d devices to monitor: 1 to %d", n, MONITOR_MAX_DEVICES);
		return NULL;
	}
	char bus[MONITOR_MAX_DEVICES][32];
	for (int i = 0; i < n; i++)
		if (nn_cuda_pci_bus_id(devices[i], bus[i], sizeof(bus[i])) != 0) {
			snprintf(err, errlen, "no CUDA device %d to monitor", devices[i]);
			return NULL;
		}
	nn_cuda_monitor *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!m->lib) {
		snprintf(err, errlen, "no NVML (libnvidia-ml.so.1, part of the NVIDIA driver): %s",
			 dlerror());
		free(m);
		return NULL;
	}
	int (*init)(void) = (int (*)(void))dlsym(m->lib, "nvmlInit_v2");
	int (*by_bus)(const char *, nvml_device *) =
		(int (*)(const char *, nvml_device *))dlsym(m->lib, "nvmlDeviceGetHandleByPciBusId_v2");
	m->shutdown = (int (*)(void))dlsym(m->lib, "nvmlShutdown");
	m->utilization = (int (*)(nvml_device, nvml_utilization *))dlsym(
		m->lib, "nvmlDeviceGetUtilizationRates");
	m->memory = (int (*)(nvml_device, nvml_memory *))dlsym(m->lib, "nvmlDeviceGetMemoryInfo");
	int rc;
	if (!init || !by_bus || !m->shutdown || !m->utilization || !m->memory) {
		snprintf(err, errlen, "NVML lacks a function the monitor needs");
		goto fail_lib;
	}
	if ((rc = init()) != 0) {
		snprintf(err, errlen, "nvmlInit failed (NVML error %d)", rc);
		goto fail_lib;
	}
	for (int i = 0; i < n; i++)
		if ((rc = by_bus(bus[i], &m->dev[i])) != 0) {
			snprintf(err, errlen, "NVML does not know the device at %s (NVML error %d)",
				 bus[i], rc);
			goto fail_init;
		}
	m->n = n;
	m->period = period > 0.01 ? period : 0.01;
	pthread_mutex_init(&m->mu, NULL);
	clock_cond_init(&m->cv); /* waits use clock_deadline */
	if (pthread_create(&m->thread, NULL, monitor_main, m) != 0) {
		snprintf(err, errlen, "cannot start the monitor thread");
		pthread_mutex_destroy(&m->mu);
		pthread_cond_destroy(&m->cv);
		goto fail_init;
	}
	return m;
fail_init:
	m->shutdown();
fail_lib:
	dlclose(m->lib);
	free(m);
	return NULL;
}

int nn_cuda_monitor_take(nn_cuda_monitor *m, double *util_percent, double *mem_used_mib)
{
	pthread_mutex_lock(&m->mu);
	int rc = m->samples > 0 ? 0 : -1;
	if (rc == 0) {
		*util_percent = m->util_sum / (double)m->samples;
		*mem_used_mib = m->mem_max / (1024.0 * 1024.0);
	}
	m->util_sum = 0;
	m->samples = 0;
	m->mem_max = 0;
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void nn_cuda_monitor_stop(nn_cuda_monitor *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	pthread_cond_signal(&m->cv);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	m->shutdown();
	dlclose(m->lib);
	free(m);
}
