/* launch.c: one process per GPU on one machine (launch.h). The parent only
 * starts, watches and signals its children; all the training happens in
 * them. It polls them (every 20 ms) with waitpid on their own pids rather
 * than catching SIGCHLD, which would take the exit statuses of other
 * children of the process (tests, GTP engines). */
#include "train/launch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/clock.h"

extern char **environ;

/* The variables a child reads; the parent's own values are not passed on. */
static const char *const child_vars[] = { "SENTE_RANK", "SENTE_WORLD_SIZE", "SENTE_DEVICE",
					  "SENTE_NCCL_ID", "SENTE_QUIET" };
#define N_CHILD_VARS (sizeof(child_vars) / sizeof(child_vars[0]))

/* Signals received during launch_ranks, a bit per signal, for the polling
 * loop to pass on. */
static volatile sig_atomic_t got_int, got_term;

static void on_signal(int sig)
{
	if (sig == SIGINT)
		got_int = 1;
	else
		got_term = 1;
}

static bool is_child_var(const char *entry)
{
	for (size_t i = 0; i < N_CHILD_VARS; i++) {
		size_t len = strlen(child_vars[i]);
		if (strncmp(entry, child_vars[i], len) == 0 && entry[len] == '=')
			return true;
	}
	return false;
}

/* "exited with status 3", "was killed by signal 9 (Killed)". */
static void describe_status(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "ended with wait status %#x", st);
}

static void signal_alive(const pid_t *pid, const bool *alive, int n, int sig)
{
	for (int r = 0; r < n; r++)
		if (alive[r])
			kill(pid[r], sig);
}

int launch_ranks(const char *exe, char *const argv[], const int *devices, int n,
		 const launch_opts *opts, char *err, size_t errlen)
{
	int rc = 0, started = 0, failed = -1, nenv = 0;
	double grace = opts && opts->grace_seconds > 0 ? opts->grace_seconds : LAUNCH_GRACE_SECONDS;
	double deadline = 0; /* when the survivors of a failure get SIGKILL; 0: none */
	bool killed = false, attr_ok = false, handlers = false;
	char why[160] = "";  /* the first failure */
	pid_t *pid = NULL;
	bool *alive = NULL;
	char **envp = NULL;
	typedef char child_vars_t[N_CHILD_VARS][COMM_NCCL_ID_HEX + 32];
	child_vars_t *vars = NULL; /* [n] each child's own, alive until the end */
	posix_spawnattr_t attr;
	sigset_t defaults, empty;
	struct sigaction sa, old_int, old_term, old_chld;

	if (n < 1 || n > LAUNCH_MAX_RANKS) {
		snprintf(err, errlen, "%d ranks asked for: 1 to %d can be launched", n, LAUNCH_MAX_RANKS);
		return -1;
	}
	if (opts && opts->nccl_id && strlen(opts->nccl_id) != COMM_NCCL_ID_HEX - 1) {
		snprintf(err, errlen, "the NCCL id is not %d hex digits", COMM_NCCL_ID_HEX - 1);
		return -1;
	}
	while (environ && environ[nenv])
		nenv++;
	pid = calloc((size_t)n, sizeof(*pid));
	alive = calloc((size_t)n, sizeof(*alive));
	envp = calloc((size_t)nenv + N_CHILD_VARS + 1, sizeof(*envp));
	vars = calloc((size_t)n, sizeof(*vars));
	if (!pid || !alive || !envp || !vars) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
		goto out;
	}
	/* The parent's environment without its own SENTE_RANK etc.; the
	 * children's variables go after it. */
	int base = 0;
	for (int i = 0; i < nenv; i++)
		if (!is_child_var(environ[i]))
			envp[base++] = environ[i];

	/* Children start with default SIGINT/SIGTERM (also when this process
	 * ignores them, as under nohup) and nothing blocked. */
	if (posix_spawnattr_init(&attr) != 0) {
		snprintf(err, errlen, "posix_spawnattr_init failed");
		rc = -1;
		goto out;
	}
	attr_ok = true;
	sigemptyset(&defaults);
	sigaddset(&defaults, SIGINT);
	sigaddset(&defaults, SIGTERM);
	sigemptyset(&empty);
	posix_spawnattr_setsigdefault(&attr, &defaults);
	posix_spawnattr_setsigmask(&attr, &empty);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

	got_int = got_term = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	/* Children ignored or reaped by a SIGCHLD handler would leave no
	 * status for waitpid. */
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigaction(SIGCHLD, &sa, &old_chld);
	handlers = true;

	for (int r = 0; r < n; r++) {
		int e = base;
		char(*v)[COMM_NCCL_ID_HEX + 32] = vars[r];
		snprintf(v[0], sizeof(v[0]), "SENTE_RANK=%d", r);
		snprintf(v[1], sizeof(v[1]), "SENTE_WORLD_SIZE=%d", n);
		snprintf(v[2], sizeof(v[2]), "SENTE_DEVICE=%d", devices[r]);
		envp[e++] = v[0];
		envp[e++] = v[1];
		envp[e++] = v[2];
		if (opts && opts->nccl_id) {
			snprintf(v[3], sizeof(v[3]), "SENTE_NCCL_ID=%s", opts->nccl_id);
			envp[e++] = v[3];
		}
		if (r > 0) {
			snprintf(v[4], sizeof(v[4]), "SENTE_QUIET=1");
			envp[e++] = v[4];
		}
		envp[e] = NULL;
		int s = strchr(exe, '/') ? posix_spawn(&pid[r], exe, NULL, &attr, argv, envp)
					 : posix_spawnp(&pid[r], exe, NULL, &attr, argv, envp);
		if (s != 0) {
			snprintf(why, sizeof(why), "rank %d (GPU %d) could not be started: %s: %s", r,
				 devices[r], exe, strerror(s));
			failed = r;
			break;
		}
		alive[r] = true;
		started++;
	}
	if (failed >= 0) {
		signal_alive(pid, alive, n, SIGTERM);
		deadline = clock_now() + grace;
	}

	/* Watch until every started child is reaped. */
	for (int left = started; left > 0;) {
		if (got_int) {
			got_int = 0;
			signal_alive(pid, alive, n, SIGINT);
		}
		if (got_term) {
			got_term = 0;
			signal_alive(pid, alive, n, SIGTERM);
		}
		for (int r = 0; r < n; r++) {
			if (!alive[r])
				continue;
			int st = 0;
			pid_t w = waitpid(pid[r], &st, WNOHANG);
			if (w == 0 || (w < 0 && errno == EINTR))
				continue;
			alive[r] = false;
			left--;
			bool bad = w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
			if (bad && failed < 0) {
				char how[96];
				if (w < 0)
					snprintf(how, sizeof(how), "vanished (its status was taken "
						 "elsewhere: %s)", strerror(errno));
				else
					describe_status(st, how, sizeof(how));
				snprintf(why, sizeof(why), "rank %d (GPU %d) %s", r, devices[r], how);
				failed = r;
				signal_alive(pid, alive, n, SIGTERM);
				deadline = clock_now() + grace;
			}
		}
		if (left == 0)
			break;
		if (deadline > 0 && !killed && clock_now() >= deadline) {
			signal_alive(pid, alive, n, SIGKILL);
			killed = true;
		}
		struct timespec tick = { 0, 20 * 1000 * 1000 };
		nanosleep(&tick, NULL);
	}
	if (failed >= 0) {
		snprintf(err, errlen, "%s; the other ranks were stopped%s", why,
			 killed ? " (some only by SIGKILL)" : "");
		rc = -1;
	}
out:
	if (handlers) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGCHLD, &old_chld, NULL);
	}
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	free(pid);
	free(alive);
	free(envp);
	free(vars);
	return rc;
}

/* A non-negative int from the whole of s, or -1. */
static int parse_index(const char *s)
{
	if (!s || !*s)
		return -1;
	char *end = NULL;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || v > INT_MAX)
		return -1;
	return (int)v;
}

int launch_child_env(int *rank, int *world, int *device, char nccl_id[COMM_NCCL_ID_HEX],
		     char *err, size_t errlen)
{
	const char *sr = getenv("SENTE_RANK");
	if (!sr)
		return 0;
	const char *sw = getenv("SENTE_WORLD_SIZE"), *sd = getenv("SENTE_DEVICE");
	const char *id = getenv("SENTE_NCCL_ID");
	int r = parse_index(sr), w = parse_index(sw), d = parse_index(sd);
	if (r < 0 || w < 1 || r >= w || d < 0) {
		snprintf(err, errlen, "SENTE_RANK=%s SENTE_WORLD_SIZE=%s SENTE_DEVICE=%s: not a rank "
			 "of a world and a GPU (these are set by `sente train --gpus`; unset them "
			 "to run alone)", sr, sw ? sw : "(unset)", sd ? sd : "(unset)");
		return -1;
	}
	nccl_id[0] = '\0';
	if (id) {
		unsigned char bytes[(COMM_NCCL_ID_HEX - 1) / 2];
		if (comm_hex_decode(id, bytes, sizeof(bytes)) != 0) {
			snprintf(err, errlen, "SENTE_NCCL_ID is not %d hex digits", COMM_NCCL_ID_HEX - 1);
			return -1;
		}
		memcpy(nccl_id, id, COMM_NCCL_ID_HEX);
	}
	*rank = r;
	*world = w;
	*device = d;
	return 1;
}

bool launch_quiet(void)
{
	const char *q = getenv("SENTE_QUIET");
	return q && *q && strcmp(q, "0") != 0;
}

int gpu_for_local_rank(const int *gpus, int ngpus, int *device, char *err, size_t errlen)
{
	static const char *const names[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
					     "MPI_LOCAL_RANK", "SLURM_LOCALID" };
	const char *name = NULL, *val = NULL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !val; i++) {
		val = getenv(names[i]);
		name = names[i];
	}
	int local = 0;
	if (val) {
		local = parse_index(val);
		if (local < 0) {
			snprintf(err, errlen, "%s=%s is not a local rank", name, val);
			return -1;
		}
	} else if (comm_launched_by_mpi()) {
		snprintf(err, errlen, "started by an MPI launcher that does not say this rank's place "
			 "on its machine (none of OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, "
			 "MPI_LOCAL_RANK, SLURM_LOCALID is set), so its GPU cannot be chosen");
		return -1;
	}
	if (ngpus == 0) {
		*device = local;
		return 0;
	}
	if (local >= ngpus) {
		snprintf(err, errlen, "local rank %d has no GPU: --gpus lists %d, so start at most %d "
			 "rank%s per machine", local, ngpus, ngpus, ngpus == 1 ? "" : "s");
		return -1;
	}
	*device = gpus[local];
	return 0;
}
