/* rundir.c: a run's folder (see rundir.h). */
#include "train/rundir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nn/net.h"
#include "train/trainer.h"

int rundir_mkdir_p(const char *path)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

store *rundir_open(const char *dir, char *ckpt, size_t ckptlen, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/models", dir);
	if (rundir_mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/checkpoints", dir);
	rundir_mkdir_p(path);
	snprintf(ckpt, ckptlen, "%s/checkpoints/learner.ckpt", dir);
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	return store_open(path, err, errlen);
}

nn_net *rundir_learner_net(const char *ckpt, const game_params *g, int blocks, int channels,
			uint64_t seed, bool *resumed, char *err, size_t errlen)
{
	*resumed = access(ckpt, R_OK) == 0;
	if (*resumed)
		return trainer_checkpoint_net(ckpt, err, errlen);
	nn_arch a = nn_arch_default(g, blocks, channels);
	nn_net *net = nn_net_new(&a, err, errlen);
	if (net)
		nn_net_init_random(net, seed);
	return net;
}

int64_t rundir_export_model(store *db, const nn_net *src, int64_t step, const char *dir,
			 int64_t parent, const char *note, char *err, size_t errlen)
{
	if (!src) {
		snprintf(err, errlen, "no weights to export");
		return -1;
	}
	nn_net *net = nn_net_clone(src);
	if (!net) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	net->meta.train_step = (uint64_t)step;
	net->meta.created = (uint64_t)time(NULL);
	snprintf(net->meta.parent, sizeof(net->meta.parent), "%lld", (long long)parent);
	nn_net_fold_bn(net);
	char file[8192];
	snprintf(file, sizeof(file), "%s/models/model-%08lld.sente", dir, (long long)step);
	int64_t id = -1;
	if (nn_net_save(net, file, err, errlen) == 0 &&
	    store_add_model(db, file, parent, step, note, &id) != 0) {
		snprintf(err, errlen, "registering the model: %s", store_errmsg(db));
		id = -1;
	}
	nn_net_free(net);
	return id;
}
