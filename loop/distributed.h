/* distributed.h: self-play across machines, as `mpirun -np K sente run`
 * (or `srun`) and `mpirun -np K sente selfplay` run it. The ranks split
 * into roles: rank 0 owns the run's folder or database (the store, the
 * models and, for `run`, the learner); ranks 1..K-1 are self-play workers,
 * each with its own evaluator (its cores, or the GPU of --gpus its local
 * rank picks; the CPU, with a message, where it has none), needing no
 * access to the folder.
 *
 * Messages (train/comm.h point to point; a worker talks only to rank 0):
 *   worker -> 0  MODEL_REQ           the model to play (at the start, and
 *                                    when an ACK names a newer one)
 *   0 -> worker  MODEL id + file     the model file's bytes (id 0, no
 *                                    bytes: none yet, uniform play)
 *   worker -> 0  GAME  model, name,  one finished game, its compact record
 *                      record        (data/record.h); rank 0 stores it in
 *                                    one transaction with the name
 *                                    (rankN@host)
 *   0 -> worker  ACK  newest id      sent while rank 0 wants games; the
 *                                    worker waits for it, so rank 0 sets
 *                                    the pace (while the learner trains,
 *                                    each worker has at most one game in
 *                                    flight and the rest wait to be sent)
 *   worker -> 0  BYE                 the worker has stopped playing
 *   0 -> worker  STOP                once per worker: stop; after it no ACK
 * Rank 0 answers every message, and waits (polling, not spinning) for a
 * BYE from every worker before it returns; games that arrive after the
 * loop has closed are still stored. A rank that dies ends the job as MPI
 * does (mpirun stops the others); what was committed stays, and the same
 * command resumes. */
#ifndef SENTE_LOOP_DISTRIBUTED_H
#define SENTE_LOOP_DISTRIBUTED_H

#include <stddef.h>

#include "loop/loop.h"
#include "selfplay/worker.h"
#include "train/comm.h"

/* `sente run` as this process was started: alone (or one rank of one),
 * loop_run; one rank of several, rank 0 runs the loop on the others'
 * games and the others play; with o->learner_ranks L > 1, ranks 1..L-1
 * train beside rank 0 (learner_follow: the CPU learner, data parallel
 * over a comm of the L ranks split from the world) and ranks L.. play.
 * 0, or -1 with a message (a worker's failure aborts the job). */
int loop_run_main(const loop_options *o, char *err, size_t errlen);
/* One rank of that over c (of two or more ranks; tests run them as
 * threads of one process, train/comm.h); `learners` is this rank's comm
 * among the o->learner_ranks learner ranks (NULL on a self-play rank, or
 * when rank 0 trains alone). 0, or -1 with a message. A failure aborts
 * the job under MPI (comm_abort); on other transports the rank returns -1
 * and may leave the others waiting. */
int loop_run_ranks(const loop_options *o, comm *c, comm *learners, char *err, size_t errlen);

/* `sente selfplay` as this process was started: alone, the worker of
 * selfplay/worker.h into the database at db_path; one rank of several,
 * rank 0 stores the others' games (following the database's newest model,
 * or o->weights) and the others play. A SELFPLAY_WORKER_* outcome; *out
 * (rank 0's totals over all workers; started false on worker ranks, which
 * print nothing on stdout) is filled either way. */
int loop_selfplay_main(const char *db_path, const selfplay_worker_options *o,
		       selfplay_worker_result *out);
/* One rank of that over c (tests run the ranks as threads, train/comm.h).
 * Rank 0 stores at most o->games games (0: no limit): games the workers
 * finish after the last one asked for are not stored, and rank 0 says how
 * many. *out on rank 0 totals the workers' games and, from their
 * goodbyes, their network evaluations and calls. */
int loop_selfplay_ranks(comm *c, const char *db_path, const selfplay_worker_options *o,
			selfplay_worker_result *out);

#endif
