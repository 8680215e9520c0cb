/* rundir.h: a run's folder, as `sente run` and `sente train` both keep it:
 *
 *   DIR/sente.db                   the store (games, models, metrics)
 *   DIR/models/model-STEP.sente    every exported network, registered
 *   DIR/checkpoints/learner.ckpt   the learner's state, to resume from
 */
#ifndef SENTE_TRAIN_RUNDIR_H
#define SENTE_TRAIN_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/store.h"
#include "engine/game.h"
#include "nn/net.h"

/* mkdir -p; 0, or -1 with errno. */
int rundir_mkdir_p(const char *path);

/* A run's folder for a learner: DIR/models and DIR/checkpoints made,
 * DIR/sente.db opened, and ckpt (ckptlen bytes) set to
 * DIR/checkpoints/learner.ckpt. NULL with a message. */
store *rundir_open(const char *dir, char *ckpt, size_t ckptlen, char *err, size_t errlen);
/* The network to train: the one in checkpoint `ckpt` when the file exists
 * (*resumed true), else a new one of game g, blocks x channels, randomly
 * initialised from seed. NULL with a message. */
nn_net *rundir_learner_net(const char *ckpt, const game_params *g, int blocks, int channels,
			   uint64_t seed, bool *resumed, char *err, size_t errlen);

/* Saves a copy of `net` (training form; BN folded in the copy) as
 * DIR/models/model-STEP.sente and registers it with `note` and `parent`;
 * the model id, or -1 with a message. */
int64_t rundir_export_model(store *db, const nn_net *net, int64_t step, const char *dir,
			    int64_t parent, const char *note, char *err, size_t errlen);

#endif
