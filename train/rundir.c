/* rundir.c: a run's folder (see rundir.h). */
#include "train/rundir.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/fileio.h"
#include "train/trainer.h"

/* Fault injection for the tests of rundir.h's promise: SENTE_FAULT=POINT
 * or POINT:N makes the process kill itself (SIGKILL, as kill -9 would) the
 * first (or N-th) time it reaches POINT in rundir_save: "after-checkpoint"
 * (the checkpoint written, the model not yet), "after-model-file" (the
 * model's file written, its row not yet). */
enum { FAULT_AFTER_CHECKPOINT, FAULT_AFTER_MODEL_FILE, FAULT_POINTS };
static void fault_point(int point, const char *name)
{
	static int seen[FAULT_POINTS];
	const char *f = getenv("SENTE_FAULT");
	size_t n = strlen(name);
	if (!f || strncmp(f, name, n) != 0 || (f[n] != '\0' && f[n] != ':'))
		return;
	int want = f[n] == ':' ? atoi(f + n + 1) : 1;
	if (++seen[point] == want)
		raise(SIGKILL);
}

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

/* Takes DIR/run.lock for this process (released when it exits, however it
 * exits) and writes the pid into it. -1 with a message naming the holder. */
static int take_lock(rundir *r, char *err, size_t errlen)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/run.lock", r->dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		char pid[32] = "";
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		snprintf(err, errlen, "%s is in use by another sente run or train (pid %s); wait for "
			 "it to finish or stop it first", r->dir, pid[0] ? pid : "unknown");
		close(fd);
		return -1;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* The lock holds without the pid; only the message loses it. */
	}
	r->lock_fd = fd;
	return 0;
}

rundir *rundir_open(const char *dir, char *err, size_t errlen)
{
	const char *p = dir;
	while (p && isspace((unsigned char)*p))
		p++;
	if (!p || !*p) {
		snprintf(err, errlen, "the run's folder is an empty name; give a path (--dir DIR)");
		return NULL;
	}
	if (strlen(dir) >= sizeof(((rundir *)0)->dir) - 64) {
		snprintf(err, errlen, "the run's folder name is too long (%zu bytes)", strlen(dir));
		return NULL;
	}
	rundir *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->lock_fd = -1;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	char path[4200];
	snprintf(path, sizeof(path), "%s/models", dir);
	if (rundir_mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/checkpoints", dir);
	if (rundir_mkdir_p(path) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	if (take_lock(r, err, errlen) != 0)
		goto fail;
	/* What a writer killed mid-write left: in models/ and checkpoints/ only
	 * the holder of the lock writes, so all of it; in DIR, where `sente
	 * eval` may be writing the report now, that of dead processes. */
	snprintf(path, sizeof(path), "%s/models", dir);
	fileio_sweep(path, true);
	snprintf(path, sizeof(path), "%s/checkpoints", dir);
	fileio_sweep(path, true);
	fileio_sweep(dir, false);
	snprintf(r->ckpt, sizeof(r->ckpt), "%s/checkpoints/learner.ckpt", dir);
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	r->db = store_open(path, err, errlen);
	if (!r->db)
		goto fail;
	return r;
fail:
	rundir_close(r);
	return NULL;
}

void rundir_close(rundir *r)
{
	if (!r)
		return;
	store_close(r->db);
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* releases the lock */
	free(r);
}

nn_net *rundir_learner_net(const rundir *r, const game_params *g, int blocks, int channels,
			   int se_channels, int heads, uint32_t sizes, uint64_t seed, bool *resumed,
			   char *err, size_t errlen)
{
	*resumed = access(r->ckpt, R_OK) == 0;
	if (*resumed)
		return trainer_checkpoint_net(r->ckpt, err, errlen);
	nn_arch a = nn_arch_default(g, blocks, channels);
	nn_arch_set_heads(&a, heads);
	a.sizes = sizes;
	a.masked_pool = sizes != 0; /* SE means over each board, not the frame */
	nn_arch_set_se(&a, se_channels);
	nn_net *net = nn_net_new(&a, err, errlen);
	if (net)
		nn_net_init_random(net, seed);
	return net;
}

/* A model file name for `step` that no file has: model-STEP.sente, else
 * model-STEP-2.sente, -3, ... The folder is this process's (run.lock), so
 * the name stays free until it is written. */
static void model_file_name(const rundir *r, int64_t step, char *file, size_t len)
{
	snprintf(file, len, "%s/models/model-%08lld.sente", r->dir, (long long)step);
	for (int k = 2; access(file, F_OK) == 0; k++)
		snprintf(file, len, "%s/models/model-%08lld-%d.sente", r->dir, (long long)step, k);
}

int rundir_save(rundir *r, learner *L, int64_t *model_id, const char *note, char *err,
		size_t errlen)
{
	return rundir_save_compute(r, L, model_id, note, NULL, err, errlen);
}

int rundir_save_compute(rundir *r, learner *L, int64_t *model_id, const char *note,
			const store_compute *c, char *err, size_t errlen)
{
	if (learner_checkpoint_save(L, r->ckpt, err, errlen) != 0)
		return -1;
	fault_point(FAULT_AFTER_CHECKPOINT, "after-checkpoint");
	const nn_net *src = learner_net(L);
	if (!src) {
		snprintf(err, errlen, "no weights to export: %s", learner_error(L));
		return -1;
	}
	nn_net *net = nn_net_clone(src);
	if (!net) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int64_t step = learner_steps(L);
	net->meta.train_step = (uint64_t)step;
	net->meta.created = (uint64_t)time(NULL);
	snprintf(net->meta.parent, sizeof(net->meta.parent), "%lld", (long long)*model_id);
	nn_net_fold_bn(net);
	char file[8192];
	model_file_name(r, step, file, sizeof(file));
	int rc = -1;
	int64_t id;
	if (nn_net_save(net, file, err, errlen) != 0)
		goto out;
	fault_point(FAULT_AFTER_MODEL_FILE, "after-model-file");
	if (store_add_model_compute(r->db, file, *model_id, step, note, c, &id) != 0) {
		snprintf(err, errlen, "registering the model: %s", store_errmsg(r->db));
		goto out;
	}
	*model_id = id;
	rc = 0;
out:
	nn_net_free(net);
	return rc;
}

int rundir_first_model(rundir *r, learner *L, int64_t *model_id, const char *note, char *err,
		       size_t errlen)
{
	char file[4096];
	int64_t step;
	int have = store_latest_model(r->db, model_id, file, sizeof(file), &step);
	if (have == 1)
		return 0;
	if (have < 0) {
		snprintf(err, errlen, "%s", store_errmsg(r->db));
		return -1;
	}
	*model_id = 0;
	/* Nothing has been spent on the first network yet. */
	store_compute none = { 0 };
	return rundir_save_compute(r, L, model_id, note, &none, err, errlen);
}
