/* mem_limit.c: see mem_limit.h. */
#include "tests/mem_limit.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* The process's virtual size in bytes, from /proc (0 when unknown). */
static size_t vm_size(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

int mem_limit_run(int (*fn)(void *arg), void *arg, size_t slack)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		size_t now = vm_size();
		struct rlimit rl = { .rlim_cur = now + slack, .rlim_max = now + slack };
		if (!now || setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(125);
		int rc = fn(arg);
		fflush(NULL);
		_exit(rc);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}
