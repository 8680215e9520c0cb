/* cuda_dl.c: the dlopen table of cuda_dl.h. */
#define NN_CUDA_DL_IMPL
#include "nn/cuda/cuda_dl.h"

#if defined(SENTE_HAVE_CUDA) && defined(SENTE_HAVE_CUDNN)
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

nn_cuda_dl_table nn_cuda_dl;
static pthread_once_t dl_once = PTHREAD_ONCE_INIT;
static char dl_error[512]; /* "" when loaded */

#define DL_STR_(x) #x
#define DL_STR(x) DL_STR_(x)

/* dlopen of a library by soname, then in the CUDA_HOME it was built with. */
static void *dl_open(const char *soname)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
#ifdef SENTE_CUDA_LIB_DIR
	if (!h) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", SENTE_CUDA_LIB_DIR, soname);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
#endif
	return h;
}

static void dl_load(void)
{
	static const char *const dnn_so = "libcudnn.so." DL_STR(CUDNN_MAJOR);
	static const char *const blas_so = "libcublas.so." DL_STR(CUBLAS_VER_MAJOR);
	void *dnn = dl_open(dnn_so), *blas = dnn ? dl_open(blas_so) : NULL;
	if (!dnn || !blas) {
		snprintf(dl_error, sizeof(dl_error), "cannot load %s: %s", dnn ? blas_so : dnn_so,
			 dlerror());
		return;
	}
#define DL_SYM(lib, f)                                                                     \
	if (!(*(void **)&nn_cuda_dl.f = dlsym(lib, #f))) {                                 \
		snprintf(dl_error, sizeof(dl_error), "%s has no %s", #lib, #f);            \
		return;                                                                    \
	}
#define DL_DNN(f) DL_SYM(dnn, f)
#define DL_BLAS(f) DL_SYM(blas, f)
	NN_CUDNN_FUNCS(DL_DNN)
	NN_CUBLAS_FUNCS(DL_BLAS)
	/* Headers and library must agree on the major version. */
	size_t v = 0;
	void *ver = dlsym(dnn, "cudnnGetVersion");
	if (ver)
		v = ((size_t (*)(void))ver)();
	if (v / 10000 != CUDNN_MAJOR && v / 1000 != CUDNN_MAJOR)
		snprintf(dl_error, sizeof(dl_error), "%s reports version %zu, built for %d", dnn_so, v,
			 CUDNN_MAJOR);
}

int nn_cuda_dl_ready(char *err, size_t errlen)
{
	pthread_once(&dl_once, dl_load);
	if (!dl_error[0])
		return 0;
	snprintf(err, errlen, "%s", dl_error);
	return -1;
}
#endif
