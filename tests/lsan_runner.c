/* lsan_runner.c: LeakSanitizer (make asan) checks every test's process,
 * not Criterion's runner. The tests run in worker processes (argv[0]
 * "boxfort-worker"), each checked when it exits, and make asan fails on any
 * report in the log. The runner itself runs no test code and keeps a few
 * allocations of Criterion's own at exit (4 objects, 192 bytes, allocated
 * inside libcriterion, seen with Criterion 2.4); a suppression cannot name
 * them without naming libcriterion, whose frames are on every test's stack
 * and would hide every leak. LeakSanitizer asks this function at exit
 * whether to check the process. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int __lsan_is_turned_off(void);

int __lsan_is_turned_off(void)
{
	char cmd[64] = "";
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
		cmd[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return strcmp(cmd, "boxfort-worker") != 0;
}
