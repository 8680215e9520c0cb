/* script_util.h: what the tests of scripts/ share: running a shell command
 * with its output captured, and writing files into a scratch tree. */
#ifndef SENTE_TESTS_SCRIPT_UTIL_H
#define SENTE_TESTS_SCRIPT_UTIL_H

#include <stddef.h>

/* Runs `cmd` (stderr joined to stdout) and returns its exit status, -1 when
 * it did not exit normally; its output goes to out (len bytes,
 * NUL-terminated). */
int script_run(const char *cmd, char *out, size_t len);
/* Writes text into root/file, making the folders on the way; fails the test
 * when it cannot. */
void script_put(const char *root, const char *file, const char *text);

#endif
