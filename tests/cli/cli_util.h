/* cli_util.h: what the command-line tests share: the binary under test
 * ($SENTE_BIN, set by the Makefile; the test skips without it) and running
 * it with its output captured. */
#ifndef SENTE_TESTS_CLI_UTIL_H
#define SENTE_TESTS_CLI_UTIL_H

#include <stddef.h>

/* $SENTE_BIN, or skips the calling test. */
const char *cli_test_bin(void);
/* Runs `sente ARGS` and returns its exit code; its stdout and stderr go
 * to out (len bytes, NUL-terminated). Fails the test when it does not exit
 * normally. */
int cli_test_run(const char *args, char *out, size_t len);
/* cli_test_run, killed after `seconds` (0: never) so that a hang fails the
 * test rather than outlive it; a killed run exits 124 (timeout(1)). */
int cli_test_run_within(double seconds, const char *args, char *out, size_t len);
/* Runs a shell command line, its stdout into out (NUL-terminated);
 * returns its exit code. */
int cli_test_shell(const char *cmd, char *out, size_t len);

/* Skips the calling test unless `mpirun` can start this sente's ranks
 * here (an MPI build, mpirun on the PATH, not under AddressSanitizer,
 * where Open MPI's own start-up leaks), and sets what Open MPI needs in
 * CI: running as root, no OpenCL probe. */
void cli_test_need_mpirun(void);

#endif
