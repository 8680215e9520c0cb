#include "tests/no_temporary.h"

#include <glob.h>
#include <stdio.h>

bool no_temporary(const char *path)
{
	char pattern[4200];
	glob_t g;
	snprintf(pattern, sizeof(pattern), "%s.tmp*", path);
	int rc = glob(pattern, 0, NULL, &g);
	globfree(&g);
	return rc == GLOB_NOMATCH;
}
