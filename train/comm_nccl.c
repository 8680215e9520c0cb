/* comm_nccl.c: the NCCL transport (device buffers, one rank per GPU), built
 * when the Makefile finds nvcc and nccl.h (SENTE_HAVE_NCCL); without them
 * only the "not built" answers below are compiled.
 *
 * The unique id is made by rank 0 and shared through the bootstrap comm's
 * broadcast (MPI across machines, or in-process ranks), or made by the
 * single-machine launcher and handed to its children as hex. Collectives are
 * enqueued on the comm's stream and return at once (NCCL's semantics);
 * comm_seconds counts the enqueue time only, so the learner times its
 * communication on its own stream with events. */
#include "train/comm_internal.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef SENTE_HAVE_NCCL
#define SENTE_HAVE_NCCL 0
#endif

#if SENTE_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

/* Inside functions with `rc`, `err`, `errlen` and an `out:` label. */
#define NCCL_CHECK(call)                                                            \
	do {                                                                        \
		ncclResult_t r_ = (call);                                           \
		if (r_ != ncclSuccess) {                                            \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				 ncclGetErrorString(r_));                           \
			rc = -1;                                                    \
			goto out;                                                   \
		}                                                                   \
	} while (0)

#define NCCL_CUDA_CHECK(call)                                                       \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			snprintf(err, errlen, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
				 cudaGetErrorString(e_));                           \
			rc = -1;                                                    \
			goto out;                                                   \
		}                                                                   \
	} while (0)

typedef struct nccl_impl {
	ncclComm_t nc;       /* the communicator */
	cudaStream_t stream; /* where collectives are enqueued (0: legacy) */
	int device;          /* the GPU of this rank */
	float *scratch;      /* one device float for the barrier */
} nccl_impl;

static int nccl_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	nccl_impl *x = c->impl;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
	ncclRedOp_t o = op == COMM_OP_AVG ? ncclAvg : ncclSum;
#else
	if (op == COMM_OP_AVG) {
		snprintf(err, errlen, "NCCL %d has no ncclAvg (2.10 or later needed)", NCCL_VERSION_CODE);
		return -1;
	}
	ncclRedOp_t o = ncclSum;
#endif
	NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, o, x->nc, x->stream));
out:
	return rc;
}

static int nccl_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	nccl_impl *x = c->impl;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclChar, root, x->nc, x->stream));
out:
	return rc;
}

/* NCCL has no barrier: a one-float all-reduce, waited for. */
static int nccl_barrier(comm *c)
{
	nccl_impl *x = c->impl;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	NCCL_CHECK(ncclAllReduce(x->scratch, x->scratch, 1, ncclFloat, ncclSum, x->nc, x->stream));
	NCCL_CUDA_CHECK(cudaStreamSynchronize(x->stream));
out:
	return rc;
}

static void nccl_set_stream(comm *c, void *stream)
{
	((nccl_impl *)c->impl)->stream = (cudaStream_t)stream;
}

static void nccl_destroy(comm *c)
{
	nccl_impl *x = c->impl;
	if (!x)
		return;
	if (x->nc)
		ncclCommDestroy(x->nc);
	if (x->scratch)
		cudaFree(x->scratch);
	free(x);
}

/* The NCCL comm stops waiting; the bootstrap comm (MPI) ends the job. */
static void nccl_abort(comm *c, int code)
{
	nccl_impl *x = c->impl;
	if (x && x->nc) {
		ncclCommAbort(x->nc);
		x->nc = NULL;
	}
}

static const comm_ops nccl_ops = { nccl_allreduce, nccl_broadcast, nccl_barrier, nccl_set_stream,
				   nccl_abort, nccl_destroy,
				   NULL, NULL, NULL /* no point to point */ };

bool comm_nccl_built(void)
{
	return true;
}

_Static_assert(2 * NCCL_UNIQUE_ID_BYTES + 1 == COMM_NCCL_ID_HEX, "COMM_NCCL_ID_HEX in comm.h");

/* rank of size on `device`; the id comes from get_id, called after the
 * device is set (rank 0 of a bootstrap comm makes it there). */
typedef int (*nccl_get_id)(void *ctx, ncclUniqueId *id, char *err, size_t errlen);

static comm *nccl_make(int rank, int size, int device, nccl_get_id get_id, void *ctx, char *err,
		       size_t errlen)
{
	int rc = 0;
	ncclUniqueId id;
	comm *c = comm_alloc(&nccl_ops, COMM_KIND_NCCL, rank, size);
	nccl_impl *x = calloc(1, sizeof(*x));
	if (!c || !x) {
		snprintf(err, errlen, "out of memory");
		free(x);
		comm_free(c);
		return NULL;
	}
	c->impl = x;
	x->device = device;
	NCCL_CUDA_CHECK(cudaSetDevice(device));
	NCCL_CUDA_CHECK(cudaMalloc((void **)&x->scratch, sizeof(float)));
	if (get_id(ctx, &id, err, errlen) != 0) {
		rc = -1;
		goto out;
	}
	NCCL_CHECK(ncclCommInitRank(&x->nc, c->size, id, c->rank));
out:
	if (rc != 0) {
		comm_free(c); /* frees x through nccl_destroy */
		return NULL;
	}
	return c;
}

static int id_from_bootstrap(void *ctx, ncclUniqueId *id, char *err, size_t errlen)
{
	comm *bootstrap = ctx;
	int rc = 0;
	if (comm_rank(bootstrap) == 0)
		NCCL_CHECK(ncclGetUniqueId(id));
	if (comm_broadcast(bootstrap, id, sizeof(*id), 0) != 0) {
		snprintf(err, errlen, "sharing the NCCL id: %s", comm_error(bootstrap));
		rc = -1;
	}
out:
	return rc;
}

comm *comm_new_nccl(comm *bootstrap, int device, char *err, size_t errlen)
{
	return nccl_make(comm_rank(bootstrap), comm_size(bootstrap), device, id_from_bootstrap,
			 bootstrap, err, errlen);
}

int comm_nccl_unique_id(char hex[COMM_NCCL_ID_HEX], char *err, size_t errlen)
{
	int rc = 0;
	ncclUniqueId id;
	NCCL_CHECK(ncclGetUniqueId(&id));
	comm_hex_encode(&id, sizeof(id), hex);
out:
	return rc;
}

static int id_from_hex(void *ctx, ncclUniqueId *id, char *err, size_t errlen)
{
	if (comm_hex_decode(ctx, id, sizeof(*id)) != 0) {
		snprintf(err, errlen, "the NCCL id is not %d hex digits (SENTE_NCCL_ID is set by "
			 "the launcher of `sente train --gpus`)", 2 * NCCL_UNIQUE_ID_BYTES);
		return -1;
	}
	return 0;
}

comm *comm_new_nccl_from_id(int rank, int size, const char *hex, int device, char *err,
			    size_t errlen)
{
	if (size < 1 || rank < 0 || rank >= size) {
		snprintf(err, errlen, "NCCL rank %d of %d is out of range", rank, size);
		return NULL;
	}
	return nccl_make(rank, size, device, id_from_hex, (void *)hex, err, errlen);
}

/* ---- host buffers over an NCCL comm ------------------------------------- */

/* The learner's control traffic (setup, games, stop flags) is small and in
 * host memory; ranks started by the single-machine launcher have no MPI to
 * carry it, so it goes through the NCCL comm, staged in device memory. */
typedef struct nccl_host_impl {
	comm *dev;     /* the NCCL comm (not owned) */
	void *buf;     /* device staging */
	size_t cap;    /* its bytes */
	int device;    /* its GPU */
} nccl_host_impl;

static int nh_stage(comm *c, size_t bytes)
{
	nccl_host_impl *x = c->impl;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	NCCL_CUDA_CHECK(cudaSetDevice(x->device));
	if (bytes > x->cap) {
		size_t cap = x->cap ? x->cap : 1 << 16;
		while (cap < bytes)
			cap *= 2;
		if (x->buf)
			cudaFree(x->buf);
		x->buf = NULL;
		x->cap = 0;
		NCCL_CUDA_CHECK(cudaMalloc(&x->buf, cap));
		x->cap = cap;
	}
out:
	return rc;
}

/* Copies in, runs the collective on the NCCL comm's stream, copies out. */
static int nh_run(comm *c, void *host, size_t bytes, int is_bcast, comm_op op, int root)
{
	nccl_host_impl *x = c->impl;
	char *err = c->err;
	size_t errlen = sizeof(c->err);
	int rc = 0;
	if (nh_stage(c, bytes ? bytes : 4) != 0)
		return -1;
	cudaStream_t st = (cudaStream_t)comm_get_stream(x->dev);
	NCCL_CUDA_CHECK(cudaMemcpyAsync(x->buf, host, bytes, cudaMemcpyHostToDevice, st));
	if ((is_bcast ? comm_broadcast(x->dev, x->buf, bytes, root)
		      : comm_allreduce(x->dev, x->buf, bytes / sizeof(float), op)) != 0) {
		snprintf(err, errlen, "%s", comm_error(x->dev));
		return -1;
	}
	NCCL_CUDA_CHECK(cudaMemcpyAsync(host, x->buf, bytes, cudaMemcpyDeviceToHost, st));
	NCCL_CUDA_CHECK(cudaStreamSynchronize(st));
out:
	return rc;
}

static int nh_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	return nh_run(c, buf, n * sizeof(float), 0, op, 0);
}

static int nh_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	return nh_run(c, buf, bytes, 1, COMM_OP_SUM, root);
}

static int nh_barrier(comm *c)
{
	nccl_host_impl *x = c->impl;
	if (comm_barrier(x->dev) != 0) {
		snprintf(c->err, sizeof(c->err), "%s", comm_error(x->dev));
		return -1;
	}
	return 0;
}

static void nh_abort(comm *c, int code)
{
	comm_abort(((nccl_host_impl *)c->impl)->dev, code);
}

static void nh_destroy(comm *c)
{
	nccl_host_impl *x = c->impl;
	if (!x)
		return;
	if (x->buf) {
		cudaSetDevice(x->device);
		cudaFree(x->buf);
	}
	free(x);
}

static const comm_ops nccl_host_ops = { nh_allreduce, nh_broadcast, nh_barrier, NULL, nh_abort,
					nh_destroy, NULL, NULL, NULL /* no point to point */ };

comm *comm_new_nccl_host(comm *nccl, char *err, size_t errlen)
{
	if (!nccl || comm_get_kind(nccl) != COMM_KIND_NCCL) {
		snprintf(err, errlen, "host buffers over NCCL need an NCCL comm");
		return NULL;
	}
	comm *c = comm_alloc(&nccl_host_ops, COMM_KIND_NCCL, comm_rank(nccl), comm_size(nccl));
	nccl_host_impl *x = calloc(1, sizeof(*x));
	if (!c || !x) {
		snprintf(err, errlen, "out of memory");
		free(x);
		comm_free(c);
		return NULL;
	}
	x->dev = nccl;
	x->device = ((nccl_impl *)nccl->impl)->device;
	c->impl = x;
	return c;
}

#else

#define NOT_BUILT                                                                   \
	"this sente was built without NCCL (needs nvcc and nccl.h; the Makefile prints " \
	"'sente: NCCL found' when it has them)"

bool comm_nccl_built(void)
{
	return false;
}

comm *comm_new_nccl(comm *bootstrap, int device, char *err, size_t errlen)
{
	(void)bootstrap;
	(void)device;
	snprintf(err, errlen, NOT_BUILT);
	return NULL;
}

int comm_nccl_unique_id(char hex[COMM_NCCL_ID_HEX], char *err, size_t errlen)
{
	hex[0] = '\0';
	snprintf(err, errlen, NOT_BUILT);
	return -1;
}

comm *comm_new_nccl_from_id(int rank, int size, const char *hex, int device, char *err,
			    size_t errlen)
{
	snprintf(err, errlen, NOT_BUILT);
	return NULL;
}

comm *comm_new_nccl_host(comm *nccl, char *err, size_t errlen)
{
	(void)nccl;
	snprintf(err, errlen, NOT_BUILT);
	return NULL;
}

#endif
