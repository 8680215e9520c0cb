/* no_temporary.h: the tests' view of crash-safe writes' temporary files
 * (engine/fileio.h): whether a write left one of PATH, PATH.tmp.PID.N, and
 * the means to plant what a killed writer would leave. */
#ifndef SENTE_TESTS_NO_TEMPORARY_H
#define SENTE_TESTS_NO_TEMPORARY_H

#include <stdbool.h>

/* True when no file named PATH.tmp* exists. */
bool no_temporary(const char *path);

/* Creates the empty file DIR/NAME (asserting that it could). */
void plant_file(const char *dir, const char *name);
/* Whether DIR/NAME exists. */
bool file_present(const char *dir, const char *name);
/* A pid that was a process of this machine and is no longer one. */
long dead_pid(void);

#endif
