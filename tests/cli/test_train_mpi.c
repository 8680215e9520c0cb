/* `sente train` alone and under `mpirun -np 2`: the same steps from the
 * same games give the same weights (two ranks with half the batch each,
 * synchronised batch norm, averaged gradients); the checkpoint says how
 * many ranks wrote it and a resume on another number says so. Skips
 * itself when mpirun or an MPI build is missing, and in the sanitizer
 * build (make asan): there Open MPI's own start-up and shutdown (MPI_Init,
 * hwloc, PMIx, components it dlcloses, so that LeakSanitizer cannot even
 * name their frames) report thousands of leaks that no narrow suppression
 * covers. The in-process thread-rank tests (tests/train/test_train_comm.c)
 * run the same data-parallel code under the sanitizers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/cuda/cuda.h"
#include "nn/net.h"
#include "data/store.h"
#include "tests/cli/cli_util.h"
#include "tests/train/train_util.h"
#include "train/comm.h"
#include "train/trainer.h"

/* Small: a 1x16 net, 3 steps of 32, one oneDNN thread per rank. */
#define TRAIN_ARGS "--steps 3 --batch 32 --blocks 1 --channels 16 --export-steps 3 --threads 1"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	static char buf[16384];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Without the GPUs it names, --gpus stops before launching anything and
 * says why; bad lists and precisions are usage errors. */
Test(train_cli, gpus_without_devices)
{
	if (nn_cuda_device_count() >= 2)
		cr_skip_test("two CUDA devices are present: the launcher would start");
	char cmd[1024], out[] = "/tmp/sente-gpus-XXXXXX";
	int fd = mkstemp(out);
	cr_assert(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "%s train --gpus 0,1 --dir /tmp/sente-no-such-run 2>%s", cli_test_bin(), out);
	int st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit %d", st);
	cr_assert(strstr(slurp(out), "CUDA device"), "%s", slurp(out));
	snprintf(cmd, sizeof(cmd), "%s train --gpus 0,x 2>/dev/null", cli_test_bin());
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d", st);
	snprintf(cmd, sizeof(cmd), "%s train --backend cuda --precision fp8 2>/dev/null", cli_test_bin());
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d", st);
	/* fp16 is the GPU learner's: asked of the CPU one, a usage error. */
	snprintf(cmd, sizeof(cmd), "%s train --dir /tmp/sente-no-such-run --precision fp16 2>%s",
		 cli_test_bin(), out);
	st = system(cmd);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "exit %d", st);
	cr_assert(strstr(slurp(out), "fp32 or bf16"), "%s", slurp(out));
	unlink(out);
}

Test(train_cli, mpirun_two_ranks_equal_one, .timeout = 120)
{
	const char *b = cli_test_bin();
	cli_test_need_mpirun();
	char dir[] = "/tmp/sente-mpi-XXXXXX", cmd[4096], path[1024], err[256];
	cr_assert(mkdtemp(dir));
	/* Games from a uniform policy: enough positions, in a second. */
	snprintf(cmd, sizeof(cmd),
		 "%s selfplay --db %s/one/sente.db --game connect4 --games 24 --parallel-games 8 "
		 "--visits 16 --cheap-visits 0 -s 3 -q >/dev/null 2>&1 && cp -r %s/one %s/two",
		 b, dir, dir, dir);
	snprintf(path, sizeof(path), "mkdir -p %s/one", dir);
	cr_assert_eq(system(path), 0);
	cr_assert_eq(system(cmd), 0, "%s", cmd);

	snprintf(cmd, sizeof(cmd), "%s train --dir %s/one " TRAIN_ARGS " 2>%s/one.log", b, dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* --bind-to none: two ranks on a machine that may have one core. */
	snprintf(cmd, sizeof(cmd),
		 "mpirun --oversubscribe --bind-to none -np 2 %s train --dir %s/two " TRAIN_ARGS
		 " >%s/two.log 2>&1", b, dir, dir);
	int st = system(cmd);
	snprintf(path, sizeof(path), "%s/two.log", dir);
	cr_assert_eq(st, 0, "%s:\n%s", cmd, slurp(path));
	cr_assert(strstr(slurp(path), "2 ranks (mpi)"), "%s", slurp(path));

	snprintf(path, sizeof(path), "%s/one/checkpoints/learner.ckpt", dir);
	nn_net *one = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(one, "%s", err);
	snprintf(path, sizeof(path), "%s/two/checkpoints/learner.ckpt", dir);
	nn_net *two = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(two, "%s", err);
	cr_assert_eq(one->n_floats, two->n_floats);
	cr_assert_eq(one->meta.train_step, 3);
	cr_assert_eq(two->meta.train_step, 3);
	/* The update from the run's first network (step 0) must be one
	 * rank's (train_util.h says how close). */
	snprintf(cmd, sizeof(cmd), "%s/one/sente.db", dir);
	store *db = store_open(cmd, err, sizeof(err));
	cr_assert(db, "%s", err);
	cr_assert_eq(store_model_file(db, 1, cmd, sizeof(cmd)), 0, "no first model");
	store_close(db);
	nn_net *start = nn_net_load(cmd, NULL, err, sizeof(err));
	cr_assert(start, "%s: %s", cmd, err);
	cr_assert_eq(start->meta.train_step, 0);
	cr_assert_eq(start->n_floats, one->n_floats);
	double d = tu_update_difference(start->data, one->data, two->data, one->n_floats);
	nn_net_free(start);
	cr_assert_lt(d, TU_SAME_UPDATE, "two ranks' update differs from one rank's by %.3g of its size",
		     d);

	/* The checkpoint of two ranks, resumed on one: it says so. */
	train_options o = train_options_default();
	o.batch = 16;
	trainer *t = trainer_new(two, &o, err, sizeof(err));
	cr_assert(t, "%s", err);
	cr_assert_eq(trainer_checkpoint_load(t, path, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(trainer_checkpoint_world(t), 2);
	trainer_free(t);
	snprintf(cmd, sizeof(cmd), "%s train --dir %s/two --steps 1 --batch 32 --threads 1 2>%s/three.log",
		 b, dir, dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(path, sizeof(path), "%s/three.log", dir);
	cr_assert(strstr(slurp(path), "written by 2 ranks, resuming on 1"), "%s", slurp(path));

	nn_net_free(one);
	nn_net_free(two);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
