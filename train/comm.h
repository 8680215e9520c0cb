/* comm.h: the learner's collectives: rank, world size, all-reduce (sum or
 * average, counts in elements), broadcast from a root, barrier.
 *
 * One interface, four transports behind a table of function pointers:
 *   single   one process, every collective the identity (always built);
 *   threads  ranks that are threads of one process (always built; for
 *            tests and tools that want several ranks without MPI);
 *   MPI      processes started by `mpirun`, host buffers (built when the
 *            Makefile finds mpicc: SENTE_HAVE_MPI);
 *   NCCL     device buffers, one process per GPU, the NCCL unique id shared
 *            through another comm's broadcast (MPI, or the threads of a
 *            single-machine launcher); built when nvcc and nccl.h are found
 *            (SENTE_HAVE_NCCL).
 *
 * Every rank must make the same collective calls in the same order with
 * the same counts. Point-to-point messages (comm_send, comm_probe,
 * comm_recv; host transports only) are for ranks with different roles,
 * such as self-play workers feeding a learner (loop/distributed.h). All
 * calls return 0, or -1 with comm_error() set. A comm is used by one
 * thread at a time (each thread-rank has its own). */
#ifndef SENTE_TRAIN_COMM_H
#define SENTE_TRAIN_COMM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum comm_kind {
	COMM_KIND_SINGLE = 0,  /* one process, identity */
	COMM_KIND_THREADS = 1, /* in-process ranks */
	COMM_KIND_MPI = 2,     /* MPI_COMM_WORLD, host buffers */
	COMM_KIND_NCCL = 3,    /* NCCL, device buffers */
} comm_kind;

typedef enum comm_op {
	COMM_OP_SUM = 0, /* element-wise sum over ranks */
	COMM_OP_AVG = 1, /* element-wise mean over ranks */
} comm_op;

typedef struct comm comm;
typedef struct comm_group comm_group;

/* True when this binary was built with MPI / with NCCL. */
bool comm_mpi_built(void);
bool comm_nccl_built(void);
/* True when the environment says this process was started by an MPI
 * launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK). */
bool comm_launched_by_mpi(void);

/* The single-process comm (rank 0 of 1). NULL only when memory is short. */
comm *comm_new_single(void);
/* The process's world: MPI_COMM_WORLD when started by an MPI launcher
 * (MPI is initialised here and finalised by comm_free), else the single
 * comm. NULL with a message when started by mpirun in a build without MPI
 * (which would silently train K unconnected copies) or MPI fails. */
comm *comm_new_world(char *err, size_t errlen);
/* NCCL over `device` (an index as cudaSetDevice takes), with the unique id
 * made by rank 0 of `bootstrap` and broadcast through it; the NCCL comm has
 * bootstrap's rank and size. NULL with a message, or when not built. */
comm *comm_new_nccl(comm *bootstrap, int device, char *err, size_t errlen);
/* The single-machine launcher's way (train/launch.h), with no MPI: the
 * parent makes the NCCL unique id as hex (COMM_NCCL_ID_HEX chars with the
 * NUL) and hands it to its children, each of which makes its rank of the
 * NCCL comm from it. NCCL's bootstrap root runs as a thread of the process
 * that made the id, so that process must live until every rank's comm is
 * made (the launcher waits for its children), and an id serves one comm.
 * Both fail with a message, also when not built with NCCL. */
#define COMM_NCCL_ID_HEX 257 /* 2 x NCCL_UNIQUE_ID_BYTES (128) + 1 */
int comm_nccl_unique_id(char hex[COMM_NCCL_ID_HEX], char *err, size_t errlen);
comm *comm_new_nccl_from_id(int rank, int size, const char *hex, int device, char *err,
			    size_t errlen);
/* Bytes to lower-case hex (2n chars and a NUL), and back: decode returns
 * 0, or -1 unless hex is exactly 2n hex digits. For the NCCL id's trip
 * through the environment. */
void comm_hex_encode(const void *bytes, size_t n, char *hex);
int comm_hex_decode(const char *hex, void *bytes, size_t n);
/* Host buffers over an NCCL comm (not owned; it must outlive this one):
 * every collective copies the buffer to the device, runs on the NCCL comm
 * and copies back, synchronously. For the learner's small control traffic
 * where there is no MPI (ranks of the single-machine launcher). Its kind
 * is COMM_KIND_NCCL. NULL with a message, or when not built. */
comm *comm_new_nccl_host(comm *nccl, char *err, size_t errlen);
/* The ranks of c with the same `color`, as a comm of their own, ranked by
 * `key` (MPI_Comm_split); every rank of c must call it. MPI and single
 * comms only (threads: make a comm_group of the part instead). NULL with
 * a message. Free it before c. */
comm *comm_split(comm *c, int color, int key, char *err, size_t errlen);
/* Frees the comm (finalising MPI when comm_new_world initialised it).
 * Accepts NULL. */
void comm_free(comm *c);

/* In-process ranks: a group of n, then one comm per rank, each to be used
 * by its own thread. The group outlives its comms' use; comm_free on those
 * comms is a no-op (the group owns them). */
comm_group *comm_group_new(int n);
comm *comm_group_rank(comm_group *g, int rank);
void comm_group_free(comm_group *g);

int comm_rank(const comm *c);
int comm_size(const comm *c);
comm_kind comm_get_kind(const comm *c);
/* "single", "threads", "mpi", "nccl". */
const char *comm_name(const comm *c);

/* In place over n floats. Host transports: buf is host memory and holds
 * the result on return; every rank gets bit-identical values. NCCL: buf is
 * device memory and the call is enqueued on the comm's stream
 * (comm_set_stream; default the legacy stream), which the caller
 * synchronises before reading. */
int comm_allreduce(comm *c, float *buf, size_t n, comm_op op);
/* Copies `bytes` bytes of root's buf into every rank's buf (host memory
 * for host transports, device memory for NCCL). */
int comm_broadcast(comm *c, void *buf, size_t bytes, int root);
/* Returns when every rank has called it. */
int comm_barrier(comm *c);
/* NCCL: the cudaStream_t to enqueue on (NULL: the legacy stream); others
 * ignore it. */
void comm_set_stream(comm *c, void *stream);
/* The stream last given to comm_set_stream (NULL before), so that a user
 * that enqueues on its own stream (the gradient reducer) can put it back. */
void *comm_get_stream(const comm *c);

/* ---- point to point (single, threads, MPI; not NCCL) ---------------------
 * Messages from one rank to another arrive in the order they were sent;
 * a tag (>= 0) says what a message is. A rank may send to itself. */
#define COMM_ANY (-1) /* comm_probe: any source, or any tag */
/* Sends `bytes` bytes of buf to rank dest with tag. Returns once buf may
 * be reused, which may be before dest receives it (small messages) or not
 * (large ones wait for dest's comm_recv: a sender must not wait on a rank
 * that is itself waiting to send to it). */
int comm_send(comm *c, const void *buf, size_t bytes, int dest, int tag);
/* Looks, without waiting, for a message from src with tag (either may be
 * COMM_ANY): 1 with its source, tag and size (any out pointer may be
 * NULL), 0 when none has arrived, -1 on failure. */
int comm_probe(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out);
/* Receives the oldest message from src with tag (exact values, as
 * comm_probe gave them) into buf of `bytes` bytes, which must be its size;
 * waits for it. */
int comm_recv(comm *c, void *buf, size_t bytes, int src, int tag);

/* Ends every rank after a failure on this one alone, which would leave the
 * others waiting in their next collective: MPI_Abort under MPI (mpirun then
 * stops the job with `code`); other transports return and let the caller
 * exit. */
void comm_abort(comm *c, int code);

/* Wall seconds spent inside collectives since the comm was made (the
 * learner's "communication" time). */
double comm_seconds(const comm *c);
/* Message of the last failure. */
const char *comm_error(const comm *c);

#endif
