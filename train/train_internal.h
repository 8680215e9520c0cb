/* train_internal.h: trainer state that checkpoint.c saves and restores;
 * not for other modules. */
#ifndef SENTE_TRAIN_INTERNAL_H
#define SENTE_TRAIN_INTERNAL_H

#include "train/trainer.h"

/* Optimizer moment arrays (SGD: 1, the momentum buffer; AdamW: 2, m and
 * v), each parallel to trainer_net(t)->data. */
int trainer_n_moments(const trainer *t);
float *trainer_moment(trainer *t, int k);
uint64_t trainer_rng_state(const trainer *t);
/* Sets the step count and RNG state (after a checkpoint load). */
void trainer_restore_state(trainer *t, int64_t step, uint64_t rng);
/* Records the world size read from a checkpoint (trainer_checkpoint_world). */
void trainer_set_checkpoint_world(trainer *t, int world);

#endif
