/* A run's folder (train/rundir.h): blank names refused, one process at a
 * time, and whatever moment a run is killed at, no registered model file
 * changes, no two models share a file, and every parent is older than its
 * child. The kills are injected at the two points between the checkpoint,
 * the model's file and its row (SENTE_FAULT), then the run resumes. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/fileio.h"
#include "tests/cli/cli_util.h"
#include "tests/loop/loop_util.h"
#include "tests/no_temporary.h"
#include "tests/train/train_util.h"
#include "train/rundir.h"

Test(rundir, blank_names_are_refused)
{
	char err[256];
	const char *blank[] = { "", " ", "\t \n" };
	for (int i = 0; i < 3; i++) {
		err[0] = '\0';
		cr_assert_null(rundir_open(blank[i], err, sizeof(err)));
		cr_assert(strstr(err, "empty name"), "'%s': %s", blank[i], err);
	}
	/* The commands say it and write nothing (before, "" meant "/"). */
	char out[4096];
	struct stat st;
	bool had = stat("/sente.db", &st) == 0;
	cr_assert_eq(cli_test_run("run --dir '' --minutes 0.01 -q", out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "empty name"), "%s", out);
	cr_assert_eq(cli_test_run("train --dir ' ' --steps 1 -q", out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "empty name"), "%s", out);
	cr_assert(had || stat("/sente.db", &st) != 0, "nothing written into /");
}

Test(rundir, one_process_at_a_time)
{
	char dir[] = "/tmp/sente-rundir-XXXXXX", err[512];
	cr_assert(mkdtemp(dir));
	rundir *a = rundir_open(dir, err, sizeof(err));
	cr_assert(a, "%s", err);
	/* Another process holding the folder is named. */
	int ready[2], done[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(done), 0);
	rundir_close(a);
	pid_t pid = fork();
	if (pid == 0) {
		rundir *c = rundir_open(dir, err, sizeof(err));
		char x = c ? 'y' : 'n';
		if (write(ready[1], &x, 1) != 1 || read(done[0], &x, 1) != 1)
			_exit(2);
		rundir_close(c);
		_exit(0);
	}
	char x;
	cr_assert_eq(read(ready[0], &x, 1), 1);
	cr_assert_eq(x, 'y');
	cr_assert_null(rundir_open(dir, err, sizeof(err)));
	char want[64];
	snprintf(want, sizeof(want), "pid %d", (int)pid);
	cr_assert(strstr(err, "in use") && strstr(err, want), "%s", err);
	cr_assert_eq(write(done[1], "x", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Released when its holder ends, even without closing. */
	a = rundir_open(dir, err, sizeof(err));
	cr_assert(a, "%s", err);
	rundir_close(a);
	loop_test_rmdir(dir);
}

/* What the store says of its models, with each file's CRC now. */
typedef struct model_row {
	int64_t id, parent, step;
	char file[512];
	uint32_t crc;
	bool readable;
} model_row;

typedef struct model_list {
	model_row m[64];
	int n;
} model_list;

static int on_model(void *ctx, const store_model *m)
{
	model_list *l = ctx;
	cr_assert_lt(l->n, 64);
	model_row *r = &l->m[l->n++];
	r->id = m->id;
	r->parent = m->parent_id;
	r->step = m->train_step;
	snprintf(r->file, sizeof(r->file), "%s", m->file);
	char err[256];
	size_t len;
	uint8_t *b = fileio_slurp(m->file, "model", &len, err, sizeof(err));
	r->readable = b != NULL;
	r->crc = b ? fileio_crc(b, len) : 0;
	free(b);
	return 0;
}

static void list_models(const char *dir, model_list *l)
{
	char path[600], err[256];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	l->n = 0;
	cr_assert_geq(store_list_models(db, on_model, l), 0);
	char msg[256];
	cr_assert_eq(store_integrity_check(db, msg, sizeof(msg)), 0, "%s", msg);
	store_close(db);
}

/* The promise, checked against what was seen before. */
static void check_models(const model_list *before, const model_list *now)
{
	for (int i = 0; i < now->n; i++) {
		const model_row *m = &now->m[i];
		cr_assert(m->readable, "model %lld's file %s", (long long)m->id, m->file);
		cr_assert(m->parent < m->id, "model %lld's parent %lld", (long long)m->id,
			  (long long)m->parent);
		for (int j = 0; j < i; j++) {
			cr_assert_str_neq(m->file, now->m[j].file, "models %lld and %lld share a file",
					  (long long)m->id, (long long)now->m[j].id);
			if (now->m[j].id == m->parent)
				cr_assert_leq(now->m[j].step, m->step, "a parent is not ahead of its child");
		}
	}
	for (int i = 0; i < before->n; i++) {
		cr_assert_eq(now->m[i].id, before->m[i].id, "a registered model disappeared");
		cr_assert_str_eq(now->m[i].file, before->m[i].file);
		cr_assert_eq(now->m[i].crc, before->m[i].crc, "model %lld's file %s changed",
			     (long long)before->m[i].id, before->m[i].file);
	}
}

/* `sente run` on dir with SENTE_FAULT=fault ("" none: a short session);
 * its wait status. */
static int run(const char *dir, const char *fault)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "exec env SENTE_FAULT='%s' %s run --dir %s --minutes %s --blocks 1 --channels 8 "
		 "--parallel-games 8 --visits 16 --cheap-visits 4 --positions 60 --window 2000 "
		 "--batch 32 --eval-visits 4 --eval-positions 1 -q 2>>%s/log",
		 fault, cli_test_bin(), dir, fault[0] ? "2" : "0.2", dir);
	return system(cmd);
}

Test(rundir, kills_between_checkpoint_model_and_row_lose_nothing, .timeout = 300)
{
	char dir[] = "/tmp/sente-rundir-XXXXXX";
	cr_assert(mkdtemp(dir));
	/* The sequence of kills: at a new run's first save, after its
	 * checkpoint; at the second save, after the model's file; at the
	 * second save again, after the checkpoint; then a clean session. */
	const char *faults[] = { "after-checkpoint", "after-model-file:2", "after-checkpoint:2", "" };
	model_list before = { .n = 0 }, now;
	for (int k = 0; k < 4; k++) {
		int st = run(dir, faults[k]);
		if (faults[k][0])
			cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
				  "killed at %s (status %d)", faults[k], st);
		else
			cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a clean session");
		list_models(dir, &now);
		check_models(&before, &now);
		before = now;
	}
	cr_assert_geq(now.n, 3, "the sessions registered models (%d)", now.n);
	loop_test_rmdir(dir);
}

/* A run killed mid-write leaves NAME.tmp.PID.N files: the next process to
 * open the folder removes those of its models and checkpoint (only the
 * holder of run.lock writes there) and those of dead processes in DIR
 * itself, where `sente eval` may be writing the report at that moment. */
Test(rundir, opening_removes_what_a_killed_run_left)
{
	char dir[] = "/tmp/sente-rundir-XXXXXX", err[512], name[4][96];
	cr_assert(mkdtemp(dir));
	long pid = dead_pid();
	rundir *r = rundir_open(dir, err, sizeof(err));
	cr_assert(r, "%s", err);
	rundir_close(r);
	snprintf(name[0], sizeof(name[0]), "models/model-40.sente.tmp.%ld.0", (long)getpid());
	snprintf(name[1], sizeof(name[1]), "checkpoints/learner.ckpt.tmp.%ld.7", pid);
	snprintf(name[2], sizeof(name[2]), "report.html.tmp.%ld.1", pid);
	snprintf(name[3], sizeof(name[3]), "report.html.tmp.%ld.2", (long)getpid());
	for (int i = 0; i < 4; i++)
		plant_file(dir, name[i]);
	plant_file(dir, "models/model-40.sente");
	r = rundir_open(dir, err, sizeof(err));
	cr_assert(r, "%s", err);
	for (int i = 0; i < 3; i++)
		cr_assert_not(file_present(dir, name[i]), "%s was removed", name[i]);
	cr_assert(file_present(dir, name[3]), "a live process's report stays");
	cr_assert(file_present(dir, "models/model-40.sente"), "a model file stays");
	rundir_close(r);
	loop_test_rmdir(dir);
}

/* A CPU learner of a small Connect Four net (*net, to free after it). */
static learner *small_learner(nn_net **net)
{
	char err[256];
	*net = tu_net(GAME_KIND_CONNECT4, 0, 1, 8, 3);
	learner_options lo = learner_options_default();
	lo.train.batch = 8;
	learner *L = learner_new(&learner_cpu, *net, &lo, err, sizeof(err));
	cr_assert(L, "%s", err);
	return L;
}

Test(rundir, saving_twice_at_one_step_keeps_both_files)
{
	char dir[] = "/tmp/sente-rundir-XXXXXX", err[512];
	cr_assert(mkdtemp(dir));
	rundir *r = rundir_open(dir, err, sizeof(err));
	cr_assert(r, "%s", err);
	nn_net *net;
	learner *L = small_learner(&net);
	int64_t id = 0;
	cr_assert_eq(rundir_first_model(r, L, &id, "test", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(id, 1);
	model_list a, b;
	list_models(dir, &a);
	/* The same step again, other weights: as a resumed learner whose
	 * checkpoint fell behind would export it. */
	learner_net(L)->data[0] += 1;
	cr_assert_eq(rundir_save(r, L, &id, "test", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(id, 2);
	list_models(dir, &b);
	check_models(&a, &b);
	cr_assert_eq(b.n, 2);
	cr_assert_eq(b.m[1].parent, 1);
	cr_assert(strstr(b.m[1].file, "model-00000000-2.sente"), "%s", b.m[1].file);
	cr_assert_eq(rundir_first_model(r, L, &id, "test", err, sizeof(err)), 0);
	cr_assert_eq(id, 2, "the newest model, nothing saved");
	learner_free(L);
	nn_net_free(net);
	rundir_close(r);
	loop_test_rmdir(dir);
}

/* The models of a run, through a store opened at db: every file exists. */
static void check_model_files_exist(const char *db_path)
{
	char err[512], file[1024];
	store *db = store_open_ex(db_path, 0, err, sizeof(err));
	cr_assert(db, "%s", err);
	int64_t id = 0;
	cr_assert_eq(store_latest_model(db, &id, file, sizeof(file), NULL), 1, "%s", store_errmsg(db));
	cr_assert_eq(access(file, R_OK), 0, "%s: the latest model's file %s", db_path, file);
	cr_assert_eq(store_model_file(db, 1, file, sizeof(file)), 0, "%s", store_errmsg(db));
	cr_assert_eq(access(file, R_OK), 0, "%s: model 1's file %s", db_path, file);
	model_list l = { .n = 0 };
	cr_assert_eq(store_list_models(db, on_model, &l), 2);
	for (int i = 0; i < l.n; i++)
		cr_assert(l.m[i].readable, "%s: model %lld's file %s", db_path, (long long)l.m[i].id,
			  l.m[i].file);
	store_close(db);
}

Test(rundir, a_relative_dir_registers_models_found_from_any_folder)
{
	char top[] = "/tmp/sente-rundir-XXXXXX", err[512], abs_db[600];
	cr_assert(mkdtemp(top));
	cr_assert_eq(chdir(top), 0);
	cr_assert_eq(mkdir("elsewhere", 0777), 0);
	/* `--dir run`, relative to the working folder. */
	rundir *r = rundir_open("run", err, sizeof(err));
	cr_assert(r, "%s", err);
	nn_net *net;
	learner *L = small_learner(&net);
	int64_t id = 0;
	cr_assert_eq(rundir_first_model(r, L, &id, "test", err, sizeof(err)), 0, "%s", err);
	learner_net(L)->data[0] += 1;
	cr_assert_eq(rundir_save(r, L, &id, "test", err, sizeof(err)), 0, "%s", err);
	learner_free(L);
	nn_net_free(net);
	rundir_close(r);
	/* The same folder as the run saw it, then from another one, by a
	 * relative and by an absolute path. */
	check_model_files_exist("run/sente.db");
	cr_assert_eq(chdir("elsewhere"), 0);
	check_model_files_exist("../run/sente.db");
	snprintf(abs_db, sizeof(abs_db), "%s/run/sente.db", top);
	check_model_files_exist(abs_db);
	cr_assert_eq(chdir("/"), 0);
	check_model_files_exist(abs_db);
	loop_test_rmdir(top);
}
