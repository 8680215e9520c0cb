/* dnnl_check.h: the one error-checking macro for oneDNN calls, shared by
 * inference (nn/cpu/cpu_backend.c) and training (train/cpu_train.c), the
 * two files that call oneDNN. */
#ifndef SENTE_NN_CPU_DNNL_CHECK_H
#define SENTE_NN_CPU_DNNL_CHECK_H

#include <stdio.h>

#include <dnnl.h>
#include <dnnl_debug.h>

/* Needs `rc`, `err`, `errlen` and an `out:` label in scope: on failure the
 * message names the file, line, call and oneDNN status, rc becomes -1 and
 * control goes to out. */
#define DNNL_CHECK(call)                                                              \
	do {                                                                          \
		dnnl_status_t s_ = (call);                                            \
		if (s_ != dnnl_success) {                                             \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				 dnnl_status2str(s_));                                \
			rc = -1;                                                      \
			goto out;                                                     \
		}                                                                     \
	} while (0)

#endif
