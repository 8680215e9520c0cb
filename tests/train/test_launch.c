/* The single-machine launcher (train/launch.h) with /bin/sh scripts as its
 * ranks: each rank's environment, a failing rank stopping the others,
 * SIGINT passed on; the GPU choice under MPI; the NCCL id's hex form. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/clock.h"
#include "engine/rng.h"
#include "nn/cuda/cuda.h"
#include "tests/gpu_skip.h"
#include "train/comm.h"
#include "train/launch.h"

static void make_dir(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/sente_launch_XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
}

static void remove_dir(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static int read_file(const char *dir, const char *name, int rank, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s%d", dir, name, rank);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t got = fread(buf, 1, len - 1, f);
	buf[got] = '\0';
	fclose(f);
	while (got > 0 && buf[got - 1] == '\n')
		buf[--got] = '\0';
	return 0;
}

/* Launches `sh -c script` on n ranks. */
static int launch_sh(const char *script, const int *devices, int n, const launch_opts *o,
		     char *err, size_t errlen)
{
	char *const argv[] = { "sh", "-c", (char *)script, NULL };
	return launch_ranks("/bin/sh", argv, devices, n, o, err, errlen);
}

Test(launch, every_rank_gets_its_environment)
{
	char dir[64], script[512], err[512] = "", id[COMM_NCCL_ID_HEX];
	unsigned char bytes[128];
	uint64_t rng = 7;
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)rng_next(&rng);
	comm_hex_encode(bytes, sizeof(bytes), id);
	make_dir(dir, sizeof(dir));
	/* The parent's own values must not leak into the children. */
	setenv("SENTE_RANK", "9", 1);
	setenv("SENTE_QUIET", "1", 1);
	setenv("SENTE_LAUNCH_TEST", "kept", 1);
	snprintf(script, sizeof(script),
		 "echo \"$SENTE_RANK $SENTE_WORLD_SIZE $SENTE_DEVICE ${SENTE_QUIET:-loud} "
		 "$SENTE_LAUNCH_TEST $0\" > %s/env$SENTE_RANK; echo \"$SENTE_NCCL_ID\" > %s/id$SENTE_RANK",
		 dir, dir);
	int devices[3] = { 5, 7, 2 };
	launch_opts o = { .nccl_id = id };
	cr_assert_eq(launch_sh(script, devices, 3, &o, err, sizeof(err)), 0, "%s", err);
	for (int r = 0; r < 3; r++) {
		char got[512], want[128];
		cr_assert_eq(read_file(dir, "env", r, got, sizeof(got)), 0, "rank %d wrote nothing", r);
		snprintf(want, sizeof(want), "%d 3 %d %s kept sh", r, devices[r], r == 0 ? "loud" : "1");
		cr_assert_str_eq(got, want);
		cr_assert_eq(read_file(dir, "id", r, got, sizeof(got)), 0);
		cr_assert_str_eq(got, id);
	}
	/* Without an id, SENTE_NCCL_ID is not set. */
	cr_assert_eq(launch_sh(script, devices, 1, NULL, err, sizeof(err)), 0, "%s", err);
	char got[512];
	cr_assert_eq(read_file(dir, "id", 0, got, sizeof(got)), 0);
	cr_assert_str_eq(got, "");
	remove_dir(dir);
}

Test(launch, a_failing_rank_stops_the_others)
{
	char err[512] = "";
	const char *script = "if [ $SENTE_RANK = 1 ]; then sleep 0.2; exit 3; fi; exec sleep 60";
	int devices[3] = { 10, 11, 12 };
	double t0 = clock_now();
	cr_assert_eq(launch_sh(script, devices, 3, NULL, err, sizeof(err)), -1);
	double took = clock_now() - t0;
	cr_assert(strstr(err, "rank 1 (GPU 11) exited with status 3"), "%s", err);
	cr_assert(took < 5, "the sleeping ranks were stopped after %.1f s", took);
}

/* A rank that dies of a signal is named with it; ranks that ignore SIGTERM
 * get SIGKILL after the grace period. Rank 0 dies only once rank 1 has
 * set its trap (a file says so): on a loaded machine rank 1's shell may
 * start after any fixed delay, and a SIGTERM before its trap ends it at
 * once. */
Test(launch, a_killed_rank_and_sigkill_after_the_grace)
{
	char err[512] = "", dir[64], script[512];
	make_dir(dir, sizeof(dir));
	snprintf(script, sizeof(script),
		 "if [ $SENTE_RANK = 0 ]; then while [ ! -e %s/trapped ]; do sleep 0.02; done; "
		 "kill -KILL $$; fi; trap '' TERM; touch %s/trapped; exec sleep 60",
		 dir, dir);
	int devices[2] = { 0, 1 };
	launch_opts o = { .grace_seconds = 0.3 };
	double t0 = clock_now();
	cr_assert_eq(launch_sh(script, devices, 2, &o, err, sizeof(err)), -1);
	double took = clock_now() - t0;
	cr_assert(strstr(err, "rank 0 (GPU 0) was killed by signal 9"), "%s", err);
	cr_assert(strstr(err, "SIGKILL"), "%s", err);
	cr_assert(took < 5, "%.1f s", took);
	remove_dir(dir);
}

Test(launch, bad_requests_are_refused)
{
	char err[512] = "";
	int devices[2] = { 0, 1 };
	char *const argv[] = { "x", NULL };
	cr_assert_eq(launch_ranks("/bin/true", argv, devices, 0, NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "0 ranks"), "%s", err);
	cr_assert_eq(launch_ranks("/nonexistent/sente", argv, devices, 2, NULL, err, sizeof(err)),
		     -1);
	cr_assert(strstr(err, "could not be started") || strstr(err, "exited with status 127"),
		  "%s", err);
	launch_opts o = { .nccl_id = "abc" };
	cr_assert_eq(launch_ranks("/bin/true", argv, devices, 2, &o, err, sizeof(err)), -1);
	cr_assert(strstr(err, "hex digits"), "%s", err);
	/* Success when every rank exits 0. */
	cr_assert_eq(launch_ranks("true", argv, devices, 2, NULL, err, sizeof(err)), 0, "%s", err);
}

typedef struct interrupter {
	const char *dir;
	int n;
	bool sent;
} interrupter;

/* Waits until every rank has set its trap, then interrupts this process
 * (not its group: only the launcher's passing on reaches the ranks). */
static void *interrupt_when_ready(void *arg)
{
	interrupter *it = arg;
	for (int tries = 0; tries < 1000; tries++) {
		int ready = 0;
		for (int r = 0; r < it->n; r++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/ready%d", it->dir, r);
			ready += access(path, F_OK) == 0;
		}
		if (ready == it->n) {
			it->sent = kill(getpid(), SIGINT) == 0;
			return NULL;
		}
		struct timespec t = { 0, 10 * 1000 * 1000 };
		nanosleep(&t, NULL);
	}
	return NULL;
}

Test(launch, sigint_is_passed_on)
{
	char dir[64], script[768], err[512] = "";
	make_dir(dir, sizeof(dir));
	snprintf(script, sizeof(script),
		 "trap 'echo stopped > %s/int$SENTE_RANK; kill $p 2>/dev/null; exit 0' INT; "
		 "sleep 60 & p=$!; touch %s/ready$SENTE_RANK; wait $p; exit 5",
		 dir, dir);
	int devices[3] = { 0, 1, 2 };
	interrupter it = { .dir = dir, .n = 3 };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, interrupt_when_ready, &it), 0);
	double t0 = clock_now();
	int rc = launch_sh(script, devices, 3, NULL, err, sizeof(err));
	pthread_join(th, NULL);
	cr_assert(it.sent, "the ranks never became ready");
	cr_assert_eq(rc, 0, "%s", err);
	cr_assert(clock_now() - t0 < 10);
	for (int r = 0; r < 3; r++) {
		char got[64];
		cr_assert_eq(read_file(dir, "int", r, got, sizeof(got)), 0, "rank %d saw no SIGINT", r);
		cr_assert_str_eq(got, "stopped");
	}
	/* The launcher's handler is gone: the old disposition is back. */
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	cr_assert(sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN);
	remove_dir(dir);
}

Test(launch, child_env)
{
	char err[256] = "", id[COMM_NCCL_ID_HEX], hex[COMM_NCCL_ID_HEX];
	int rank = -1, world = -1, device = -1;
	unsetenv("SENTE_RANK");
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), 0);
	setenv("SENTE_RANK", "2", 1);
	setenv("SENTE_WORLD_SIZE", "4", 1);
	setenv("SENTE_DEVICE", "6", 1);
	unsetenv("SENTE_NCCL_ID");
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), 1, "%s", err);
	cr_assert(rank == 2 && world == 4 && device == 6 && id[0] == '\0');
	unsigned char bytes[128];
	for (int i = 0; i < 128; i++)
		bytes[i] = (unsigned char)(i * 37 + 11);
	comm_hex_encode(bytes, sizeof(bytes), hex);
	setenv("SENTE_NCCL_ID", hex, 1);
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), 1, "%s", err);
	cr_assert_str_eq(id, hex);
	setenv("SENTE_NCCL_ID", "zz", 1);
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), -1);
	cr_assert(strstr(err, "SENTE_NCCL_ID"), "%s", err);
	unsetenv("SENTE_NCCL_ID");
	setenv("SENTE_RANK", "4", 1);
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), -1);
	setenv("SENTE_RANK", "1x", 1);
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), -1);
	cr_assert(strstr(err, "SENTE_RANK=1x"), "%s", err);
	setenv("SENTE_RANK", "0", 1);
	unsetenv("SENTE_DEVICE");
	cr_assert_eq(launch_child_env(&rank, &world, &device, id, err, sizeof(err)), -1);

	unsetenv("SENTE_QUIET");
	cr_assert(!launch_quiet());
	setenv("SENTE_QUIET", "1", 1);
	cr_assert(launch_quiet());
}

Test(launch, nccl_id_hex_round_trip)
{
	unsigned char in[128], out[128];
	char hex[COMM_NCCL_ID_HEX];
	uint64_t rng = 99;
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)rng_next(&rng);
	in[0] = 0x00;
	in[1] = 0xff;
	comm_hex_encode(in, sizeof(in), hex);
	cr_assert_eq(strlen(hex), COMM_NCCL_ID_HEX - 1);
	cr_assert(strncmp(hex, "00ff", 4) == 0, "%s", hex);
	cr_assert_eq(comm_hex_decode(hex, out, sizeof(out)), 0);
	cr_assert(memcmp(in, out, sizeof(in)) == 0);
	/* Upper case is read too; wrong lengths and non-digits are not. */
	hex[2] = 'F';
	cr_assert_eq(comm_hex_decode(hex, out, sizeof(out)), 0);
	cr_assert_eq(out[1], 0xff);
	hex[5] = 'g';
	cr_assert_eq(comm_hex_decode(hex, out, sizeof(out)), -1);
	cr_assert_eq(comm_hex_decode("abc", out, 2), -1);
	cr_assert_eq(comm_hex_decode("abcdef", out, 2), -1);
	cr_assert_eq(comm_hex_decode(NULL, out, 2), -1);
}

static void clear_local_rank_env(void)
{
	const char *names[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MPI_LOCAL_RANK",
				"SLURM_LOCALID", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

Test(launch, gpu_for_local_rank)
{
	char err[256] = "";
	int gpus[4] = { 4, 5, 6, 7 }, dev = -1;
	clear_local_rank_env();
	/* Not under MPI at all: local rank 0. */
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dev, 4);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dev, 6);
	cr_assert_eq(gpu_for_local_rank(gpus, 0, &dev, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dev, 2, "without --gpus the local rank is the GPU");
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "4", 1);
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), -1);
	cr_assert(strstr(err, "local rank 4"), "%s", err);
	setenv("OMPI_COMM_WORLD_LOCAL_RANK", "one", 1);
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), -1);
	cr_assert(strstr(err, "OMPI_COMM_WORLD_LOCAL_RANK=one"), "%s", err);
	clear_local_rank_env();
	setenv("SLURM_LOCALID", "1", 1);
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dev, 5);
	setenv("MPI_LOCALRANKID", "3", 1); /* MPICH's comes before Slurm's */
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(dev, 7);
	clear_local_rank_env();
	setenv("PMI_SIZE", "2", 1); /* an MPI launcher that does not say */
	cr_assert_eq(gpu_for_local_rank(gpus, 4, &dev, err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot be chosen"), "%s", err);
	clear_local_rank_env();
}

#ifndef SENTE_HAVE_NCCL
#define SENTE_HAVE_NCCL 0
#endif

#if SENTE_HAVE_NCCL
#include <cuda_runtime.h>

/* The launcher's way on one GPU: an id made here, a rank made from it. */
Test(launch, nccl_from_id_single_gpu)
{
	SKIP_WITHOUT_GPU();
	char err[256] = "", id[COMM_NCCL_ID_HEX];
	cr_assert_eq(comm_nccl_unique_id(id, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen(id), COMM_NCCL_ID_HEX - 1);
	comm *c = comm_new_nccl_from_id(0, 1, id, 0, err, sizeof(err));
	cr_assert(c, "%s", err);
	cr_assert_str_eq(comm_name(c), "nccl");
	float h[3] = { 1, 2, 3 }, *d = NULL;
	cr_assert_eq(cudaMalloc((void **)&d, sizeof(h)), cudaSuccess);
	cr_assert_eq(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice), cudaSuccess);
	cr_assert_eq(comm_allreduce(c, d, 3, COMM_OP_AVG), 0, "%s", comm_error(c));
	cr_assert_eq(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
	cr_assert(h[0] == 1 && h[1] == 2 && h[2] == 3);
	cudaFree(d);
	comm_free(c);
	cr_assert_null(comm_new_nccl_from_id(0, 1, "beef", 0, err, sizeof(err)));
	cr_assert(strstr(err, "hex digits"), "%s", err);
	cr_assert_null(comm_new_nccl_from_id(1, 1, id, 0, err, sizeof(err)));
}
#else
Test(launch, nccl_id_refused_when_not_built)
{
	char err[256] = "", id[COMM_NCCL_ID_HEX];
	cr_assert_eq(comm_nccl_unique_id(id, err, sizeof(err)), -1);
	cr_assert(strstr(err, "without NCCL"), "%s", err);
	cr_assert_null(comm_new_nccl_from_id(0, 1, id, 0, err, sizeof(err)));
}
#endif
