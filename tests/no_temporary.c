#include "tests/no_temporary.h"

#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

bool no_temporary(const char *path)
{
	char pattern[4200];
	glob_t g;
	snprintf(pattern, sizeof(pattern), "%s.tmp*", path);
	int rc = glob(pattern, 0, NULL, &g);
	globfree(&g);
	return rc == GLOB_NOMATCH;
}

void plant_file(const char *dir, const char *name)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fclose(f);
}

bool file_present(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

long dead_pid(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (long)pid;
}
