/* learner_internal.h: the CUDA learner as train/learner.c calls it
 * (train/cuda/gpu_learner.c; in a build without the GPU learner every
 * call fails with a message and learner_cuda_new returns NULL). */
#ifndef SENTE_TRAIN_LEARNER_INTERNAL_H
#define SENTE_TRAIN_LEARNER_INTERNAL_H

#include "train/learner.h"

typedef struct learner_cuda learner_cuda;

/* `what` receives the description learner_describe returns. */
learner_cuda *learner_cuda_new(const nn_net *net, const learner_options *o, char *what,
			       size_t whatlen, char *err, size_t errlen);
void learner_cuda_free(learner_cuda *l); /* accepts NULL */
int learner_cuda_add_game(learner_cuda *l, const game_record *r);
int64_t learner_cuda_positions(const learner_cuda *l);
int learner_cuda_step(learner_cuda *l, int global, int first, train_stats *st);
nn_net *learner_cuda_net(learner_cuda *l);
int64_t learner_cuda_steps(const learner_cuda *l);
void learner_cuda_set_comm(learner_cuda *l, comm *c);
int learner_cuda_broadcast(learner_cuda *l, int root);
int learner_cuda_checkpoint_save(learner_cuda *l, const char *path, char *err, size_t errlen);
int learner_cuda_checkpoint_load(learner_cuda *l, const char *path, char *err, size_t errlen);
int learner_cuda_checkpoint_world(const learner_cuda *l);
const char *learner_cuda_error(const learner_cuda *l);

#endif
