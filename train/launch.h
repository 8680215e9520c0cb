/* launch.h: one learner process per GPU.
 *
 * On one machine, without MPI: `sente train --backend cuda --gpus 0,1,2,3`
 * makes the NCCL id (comm_nccl_unique_id), then launch_ranks starts the
 * same program with the same arguments once per GPU and waits for them.
 * Each child finds its role with launch_child_env and makes its NCCL rank
 * with comm_new_nccl_from_id:
 *
 *     int rank, world, device;
 *     char id[COMM_NCCL_ID_HEX];
 *     int child = launch_child_env(&rank, &world, &device, id, err, errlen);
 *     if (child < 0) fail;
 *     if (child == 0 && !comm_launched_by_mpi() && ngpus > 1) {
 *             if (comm_nccl_unique_id(id, err, errlen) != 0) fail;
 *             launch_opts o = { .nccl_id = id };
 *             return launch_ranks("/proc/self/exe", argv, gpus, ngpus, &o, err, errlen);
 *     }
 *     if (child == 1) c = comm_new_nccl_from_id(rank, world, id, device, err, errlen);
 *
 * Under mpirun (comm_launched_by_mpi()) there is no launcher: every rank
 * takes comm_new_world as the bootstrap of comm_new_nccl and its GPU from
 * gpu_for_local_rank.
 *
 * The children's environment carries SENTE_RANK, SENTE_WORLD_SIZE,
 * SENTE_DEVICE, SENTE_NCCL_ID, and SENTE_QUIET=1 for every rank but 0
 * (launch_quiet: rank 0 alone prints progress). */
#ifndef SENTE_TRAIN_LAUNCH_H
#define SENTE_TRAIN_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

#include "train/comm.h"

/* After a child fails, how long the others get between SIGTERM and
 * SIGKILL when launch_opts does not say. */
#define LAUNCH_GRACE_SECONDS 10.0
/* The most ranks launch_ranks starts. */
#define LAUNCH_MAX_RANKS 1024

typedef struct launch_opts {
	const char *nccl_id;  /* SENTE_NCCL_ID for every child (COMM_NCCL_ID_HEX - 1
			       * hex digits), NULL: not set */
	double grace_seconds; /* SIGTERM to SIGKILL after a failure; 0: the default */
} launch_opts;

/* Starts n copies of exe (a path, or a name looked up on PATH) with argv
 * (argv[0] included, NULL-terminated) and this process's environment plus
 * each rank's variables; rank r gets devices[r]. Their stdout and stderr
 * are this process's. Waits for all of them. SIGINT and SIGTERM received
 * meanwhile are passed on to every child (which finish their step and
 * stop; a terminal's Ctrl-C reaches them directly too, as they stay in
 * this process group). When a child exits with a non-zero status or dies
 * of a signal, the others get SIGTERM, then SIGKILL after the grace period.
 * 0 when every child exited with 0; else -1 with a message naming the
 * first rank that failed and how. opts may be NULL. Installs its own
 * SIGINT/SIGTERM handlers and the default SIGCHLD for its duration
 * (restoring the old ones), so one launch at a time per process. If the
 * launcher itself is killed with SIGKILL its children live on (they stay
 * in its process group, so a terminal's Ctrl-C still stops them). */
int launch_ranks(const char *exe, char *const argv[], const int *devices, int n,
		 const launch_opts *opts, char *err, size_t errlen);

/* In a child of launch_ranks: its rank, the world size, its GPU and the
 * NCCL id (empty when the launcher set none); returns 1. Returns 0 when
 * this process was not started by launch_ranks (no SENTE_RANK), -1 with a
 * message when the variables are malformed. */
int launch_child_env(int *rank, int *world, int *device, char nccl_id[COMM_NCCL_ID_HEX],
		     char *err, size_t errlen);
/* True in the children of launch_ranks that should print nothing but
 * errors (every rank but 0). */
bool launch_quiet(void);

/* Under an MPI launcher: this rank's GPU, gpus[local rank] (or the local
 * rank itself when ngpus is 0, i.e. no --gpus), the local rank read from
 * OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MPI_LOCAL_RANK or
 * SLURM_LOCALID (the first set). Without any of them, local rank 0 when
 * not under MPI at all, else an error. -1 with a message also when the
 * local rank has no GPU in the list (more ranks on a machine than GPUs). */
int gpu_for_local_rank(const int *gpus, int ngpus, int *device, char *err, size_t errlen);

#endif
