/* gpu_learner.c: the CUDA learner behind train/learner.h: the window in
 * device memory (gpu_replay.h) feeding the GPU trainer (gpu_train.h). */
#include "train/learner_internal.h"

#include <stdio.h>

learner_cuda *learner_cuda_new(const nn_net *net, const learner_options *o, char *what,
			       size_t whatlen, char *err, size_t errlen)
{
	snprintf(err, errlen, "the CUDA learner is not in this build");
	return NULL;
}

void learner_cuda_free(learner_cuda *l) { (void)l; }
int learner_cuda_add_game(learner_cuda *l, const game_record *r) { return -1; }
int64_t learner_cuda_positions(const learner_cuda *l) { return 0; }
int learner_cuda_step(learner_cuda *l, int global, int first, train_stats *st) { return -1; }
nn_net *learner_cuda_net(learner_cuda *l) { return NULL; }
int64_t learner_cuda_steps(const learner_cuda *l) { return 0; }
void learner_cuda_set_comm(learner_cuda *l, comm *c) { (void)l; }
int learner_cuda_broadcast(learner_cuda *l, int root) { return -1; }
int learner_cuda_checkpoint_save(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "the CUDA learner is not in this build");
	return -1;
}
int learner_cuda_checkpoint_load(learner_cuda *l, const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "the CUDA learner is not in this build");
	return -1;
}
int learner_cuda_checkpoint_world(const learner_cuda *l) { return 0; }
const char *learner_cuda_error(const learner_cuda *l) { return "the CUDA learner is not in this build"; }
