/* The GPU learner end to end through the command line: `sente train
 * --backend cuda` on one GPU, the launcher on two, a GPU checkpoint
 * resumed by the CPU learner, `sente run --backend cuda` sharing one
 * device between self-play and training, a Go run's ownership head
 * trained there by default, a Connect Four run's opponent-reply head
 * (--opp-weight) and a Go run of several board sizes (--sizes) trained
 * there (neither yet run on a device). Each test skips
 * itself, with a message, without the devices it needs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/cuda/cuda.h"
#include "tests/cli/cli_util.h"
#include "tests/gpu_skip.h"
#include "train/trainer.h"

static void gl_need(int devices)
{
	SKIP_WITHOUT_GPUS(devices);
}

static char *gl_slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
	}
	return buf;
}

/* A run folder with Connect Four games from a uniform policy. */
static void gl_games(const char *dir)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s && %s selfplay --db %s/sente.db --game connect4 --games 24 "
		 "--parallel-games 8 --visits 16 --cheap-visits 0 -s 3 -q --backend cpu >/dev/null 2>&1",
		 dir, cli_test_bin(), dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

Test(gpu_learner, train_one_gpu, .timeout = 300)
{
	gl_need(1);
	char dir[] = "/tmp/sente-gpul-XXXXXX", cmd[4096], path[1024], err[256];
	cr_assert(mkdtemp(dir));
	gl_games(dir);
	for (int p = 0; p < 3; p++) {
		static const char *const prec[] = { "fp32", "fp16", "bf16" };
		snprintf(cmd, sizeof(cmd),
			 "%s train --dir %s --backend cuda --precision %s --steps 20 --batch 32 "
			 "--blocks 1 --channels 16 --export-steps 20 --json >%s/%s.json 2>%s/%s.log",
			 cli_test_bin(), dir, prec[p], dir, prec[p], dir, prec[p]);
		snprintf(path, sizeof(path), "%s/%s.log", dir, prec[p]);
		cr_assert_eq(system(cmd), 0, "%s\n%s", cmd, gl_slurp(path));
		cr_assert(strstr(gl_slurp(path), "cuda"), "%s", gl_slurp(path));
		snprintf(path, sizeof(path), "%s/%s.json", dir, prec[p]);
		const char *js = gl_slurp(path);
		const char *l = strstr(js, "\"loss\":");
		cr_assert(l, "%s", js);
		double loss = atof(l + 7);
		cr_assert(isfinite(loss) && loss > 0 && loss < 20, "%s: loss %g", prec[p], loss);
		cr_assert(strstr(js, "\"loss_scale\":"), "%s", js);
	}
	/* The GPU checkpoint resumes on the CPU learner, at its step. */
	snprintf(path, sizeof(path), "%s/checkpoints/learner.ckpt", dir);
	nn_net *net = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert_eq(net->meta.train_step, 60);
	nn_net_free(net);
	snprintf(cmd, sizeof(cmd), "%s train --dir %s --backend cpu --steps 2 --batch 32 --threads 1 "
		 ">/dev/null 2>%s/cpu.log", cli_test_bin(), dir, dir);
	snprintf(path, sizeof(path), "%s/cpu.log", dir);
	cr_assert_eq(system(cmd), 0, "%s", gl_slurp(path));
	cr_assert(strstr(gl_slurp(path), "resumed at step 60"), "%s", gl_slurp(path));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

Test(gpu_learner, train_two_gpus_launcher, .timeout = 300)
{
	gl_need(2);
	char dir[] = "/tmp/sente-gpul-XXXXXX", cmd[4096], path[1024], err[256];
	cr_assert(mkdtemp(dir));
	gl_games(dir);
	snprintf(cmd, sizeof(cmd),
		 "%s train --dir %s --gpus 0,1 --steps 10 --batch 64 --blocks 1 --channels 16 "
		 "--export-steps 10 >/dev/null 2>%s/two.log", cli_test_bin(), dir, dir);
	snprintf(path, sizeof(path), "%s/two.log", dir);
	cr_assert_eq(system(cmd), 0, "%s", gl_slurp(path));
	cr_assert(strstr(gl_slurp(path), "2 ranks (nccl)"), "%s", gl_slurp(path));
	snprintf(path, sizeof(path), "%s/checkpoints/learner.ckpt", dir);
	nn_net *net = trainer_checkpoint_net(path, err, sizeof(err));
	cr_assert(net, "%s", err);
	cr_assert_eq(net->meta.train_step, 10);
	nn_net_free(net);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

/* `sente run --backend cuda ARGS` in a new folder made from the template
 * dir (one GPU needed); its log (stderr), once it ended well. */
static const char *gl_run(char *dir, const char *args)
{
	char cmd[4096], path[1024];
	gl_need(1);
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s run --dir %s/run --backend cuda %s 2>%s/run.log",
		 cli_test_bin(), dir, args, dir);
	snprintf(path, sizeof(path), "%s/run.log", dir);
	cr_assert_eq(system(cmd), 0, "%s", gl_slurp(path));
	return gl_slurp(path);
}

static void gl_rmdir(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	system(cmd);
}

Test(gpu_learner, run_shares_the_device, .timeout = 300)
{
	char dir[] = "/tmp/sente-gpur-XXXXXX";
	const char *log = gl_run(dir, "--game connect4 --minutes 1 --blocks 1 --channels 16 "
				      "--positions 300 --eval-visits 8 --eval-positions 2");
	cr_assert(strstr(log, "self-play cuda") && strstr(log, "training cuda"), "%s", log);
	cr_assert(strstr(log, "iteration 1:"), "%s", log);
	gl_rmdir(dir);
}

/* The loss a run's log gives for head `head` (its word in the iteration
 * line, "ownership" or "reply") in iteration 1, after checking that the
 * network has the head (`name`, as the first line names it) and that the
 * GPU learner trained it, not the CPU's. */
static double gl_head_loss(const char *log, const char *name, const char *head)
{
	char with[128], word[64];
	snprintf(with, sizeof(with), "with the %s head", name);
	snprintf(word, sizeof(word), "%s ", head);
	cr_assert(strstr(log, with), "%s", log);
	cr_assert(strstr(log, "training cuda") && !strstr(log, "training on the CPU"), "%s", log);
	const char *it = strstr(log, "iteration 1:");
	cr_assert(it, "%s", log);
	const char *at = strstr(it, word);
	cr_assert(at, "%s", log);
	return atof(at + strlen(word));
}

/* A Go run on the GPU gets the ownership head by default, as on the CPU,
 * and the GPU learner trains it: the iterations' losses show it. */
Test(gpu_learner, go_run_trains_the_ownership_head_by_default, .timeout = 300)
{
	char dir[] = "/tmp/sente-gpuo-XXXXXX";
	const char *log = gl_run(dir, "--game go --size 5 --minutes 0.5 --blocks 1 --channels 16 "
				      "--measure-every 0");
	double loss = gl_head_loss(log, "ownership", "ownership");
	cr_assert(loss > 0.01 && loss < 2, "ownership loss %g: %s", loss, log);
	gl_rmdir(dir);
}

/* --opp-weight on the GPU: the new network gets the opponent-reply head
 * and the GPU learner trains it (it no longer falls back to the CPU): the
 * iterations' losses show the reply's cross-entropy, below Connect Four's
 * uniform log 7 = 1.95 give or take a fresh network's spread. */
Test(gpu_learner, connect4_run_trains_the_opponent_reply_head, .timeout = 300)
{
	char dir[] = "/tmp/sente-gpuq-XXXXXX";
	const char *log = gl_run(dir, "--game connect4 --minutes 0.5 --blocks 1 --channels 16 "
				      "--opp-weight 0.15 --measure-every 0");
	double loss = gl_head_loss(log, "opponent-reply", "reply");
	cr_assert(loss > 0.01 && loss < 3, "reply loss %g: %s", loss, log);
	gl_rmdir(dir);
}

/* --sizes on the GPU: one network for 5x5 and 7x7 (its frame 7x7), SE
 * blocks with their means masked to each board, trained by the GPU learner
 * (no longer the CPU's) on games of both sizes from the device window. */
Test(gpu_learner, go_run_of_several_sizes_trains_on_the_gpu, .timeout = 300)
{
	char dir[] = "/tmp/sente-gpus-XXXXXX";
	const char *log = gl_run(dir, "--game go --sizes 5,7 --minutes 0.5 --blocks 1 "
				      "--channels 16 --se-channels 8 --measure-every 0");
	cr_assert(strstr(log, "5x5, 7x7") && strstr(log, "squeeze-excitation 8"), "%s", log);
	double loss = gl_head_loss(log, "ownership", "ownership");
	cr_assert(loss > 0.01 && loss < 2, "ownership loss %g: %s", loss, log);
	gl_rmdir(dir);
}
