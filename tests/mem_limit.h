/* mem_limit.h: runs a piece of a test in a child process whose address
 * space may grow by a bounded amount, so a loader that allocates what a
 * hostile file asks for fails there instead of taking the machine's memory. */
#ifndef SENTE_TESTS_MEM_LIMIT_H
#define SENTE_TESTS_MEM_LIMIT_H

#include <stddef.h>

/* Forks; the child sets RLIMIT_AS to its current size plus `slack` bytes,
 * runs fn(arg) and exits with its return value. Returns that value, or -1
 * when the child could not be started or died by a signal. */
int mem_limit_run(int (*fn)(void *arg), void *arg, size_t slack);

#endif
