/* no_temporary.h: whether a crash-safe write (engine/fileio.h) left a
 * temporary file of PATH, PATH.tmp.PID.N, in its folder. */
#ifndef SENTE_TESTS_NO_TEMPORARY_H
#define SENTE_TESTS_NO_TEMPORARY_H

#include <stdbool.h>

/* True when no file named PATH.tmp* exists. */
bool no_temporary(const char *path);

#endif
