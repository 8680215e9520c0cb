/* loop_util.h: what tests of the loop and of the learner's session share:
 * options for a tiny Connect Four run (an iteration takes about a second)
 * and removing its folder. */
#ifndef SENTE_TESTS_LOOP_UTIL_H
#define SENTE_TESTS_LOOP_UTIL_H

#include "loop/loop.h"

/* A 1x8 network, 8 games of 16/4 visits, 60 positions an iteration,
 * batches of 32, measured with 8 visits on 3 positions a set; silent. */
loop_options loop_test_options(const char *dir);
/* rm -rf dir. */
void loop_test_rmdir(const char *dir);

#endif
