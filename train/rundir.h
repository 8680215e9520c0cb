/* rundir.h: a run's folder, as `sente run` and `sente train` both keep it:
 *
 *   DIR/sente.db                   the store (games, models, metrics)
 *   DIR/models/model-STEP.sente    every exported network, registered
 *   DIR/checkpoints/learner.ckpt   the learner's state, to resume from
 *   DIR/run.lock                   held by the one process using DIR
 *
 * What must hold, whatever moment the process dies at (kill -9, a full
 * disk): a committed game is never lost; a registered model's file never
 * changes and no two models share a file; a model's parent is an ancestor
 * of its weights. So a learner's state is saved in this order: the
 * checkpoint first, then the model (a new file, never one that exists),
 * then its row. Dying between the two leaves a checkpoint ahead of the
 * newest model, which the next export follows; never a model the resumed
 * learner does not descend from.
 */
#ifndef SENTE_TRAIN_RUNDIR_H
#define SENTE_TRAIN_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/store.h"
#include "engine/game.h"
#include "nn/net.h"
#include "train/learner.h"

typedef struct rundir {
	char dir[4096];   /* the folder as given */
	char ckpt[4160];  /* DIR/checkpoints/learner.ckpt */
	store *db;        /* DIR/sente.db */
	int lock_fd;      /* DIR/run.lock, locked while open */
} rundir;

/* mkdir -p; 0, or -1 with errno. */
int rundir_mkdir_p(const char *path);

/* Opens a run's folder for a learner: refuses an empty or blank path and a
 * folder another process holds (naming its pid), makes DIR/models and
 * DIR/checkpoints, removes the temporary files that a process killed
 * mid-write left (fileio_sweep: all of them in models/ and checkpoints/,
 * those of dead processes in DIR), opens DIR/sente.db. NULL with a
 * message. */
rundir *rundir_open(const char *dir, char *err, size_t errlen);
/* Closes the store and releases the folder. NULL is fine. */
void rundir_close(rundir *r);

/* The network to train: the one in the checkpoint when there is one
 * (*resumed true), else a new one of game g, blocks x channels, with the
 * optional heads of `heads` (NN_HEAD_*; ownership and score are
 * refused, with a message, for a game without territory), randomly
 * initialised from seed; `sizes` (nn_arch.sizes, 0: g's board alone) the
 * board sizes a new Go network plays, g's the largest (with masked
 * pooling: nn_arch.masked_pool); se_channels > 0 makes every block
 * squeeze-excitation with that bottleneck. NULL with a message. */
nn_net *rundir_learner_net(const rundir *r, const game_params *g, int blocks, int channels,
			   int se_channels, int heads, uint32_t sizes, uint64_t seed, bool *resumed,
			   char *err, size_t errlen);

/* Saves the learner: its checkpoint, then its weights (BN folded) as a new
 * model file DIR/models/model-STEP.sente (model-STEP-K.sente when that
 * exists), registered with `note` and the parent *model_id, which becomes
 * the new model's id. 0, or -1 with a message (*model_id unchanged). */
int rundir_save(rundir *r, learner *L, int64_t *model_id, const char *note, char *err,
		size_t errlen);

/* rundir_save that also records `c` (NULL: nothing) as the new model's
 * compute, in the same transaction as its row. */
int rundir_save_compute(rundir *r, learner *L, int64_t *model_id, const char *note,
			const store_compute *c, char *err, size_t errlen);

/* The model to continue from: the newest registered one into *model_id;
 * a run without models (a new one, or one stopped before its first model
 * was registered) saves the learner as its first model. 0, or -1 with a
 * message. */
int rundir_first_model(rundir *r, learner *L, int64_t *model_id, const char *note, char *err,
		       size_t errlen);

#endif
