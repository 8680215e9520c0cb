/* comm_internal.h: the comm struct and its table, shared by the transports
 * (comm.c, comm_nccl.c); not for other modules. */
#ifndef SENTE_TRAIN_COMM_INTERNAL_H
#define SENTE_TRAIN_COMM_INTERNAL_H

#include "train/comm.h"

/* A transport: what each collective does (the comm's rank, size and
 * timing are handled by comm.c). */
typedef struct comm_ops {
	int (*allreduce)(comm *c, float *buf, size_t n, comm_op op);
	int (*broadcast)(comm *c, void *buf, size_t bytes, int root);
	int (*barrier)(comm *c);
	void (*set_stream)(comm *c, void *stream); /* NULL: ignored */
	void (*abort)(comm *c, int code);          /* NULL: nothing */
	void (*destroy)(comm *c);                  /* frees impl; NULL: nothing */
	/* Point to point (comm.h); NULL: the transport has none. */
	int (*send)(comm *c, const void *buf, size_t bytes, int dest, int tag);
	int (*probe)(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out);
	int (*recv)(comm *c, void *buf, size_t bytes, int src, int tag);
} comm_ops;

struct comm {
	const comm_ops *ops; /* the transport */
	comm_kind kind;      /* which one */
	int rank, size;      /* this rank, ranks in all */
	double seconds;      /* wall time inside collectives */
	void *stream;        /* last comm_set_stream (NCCL's cudaStream_t) */
	void *impl;          /* the transport's state */
	bool in_group;       /* owned by a comm_group: comm_free leaves it */
	char err[256];       /* last failure */
};

/* A zeroed comm of the given transport; NULL when memory is short. */
comm *comm_alloc(const comm_ops *ops, comm_kind kind, int rank, int size);

#endif
