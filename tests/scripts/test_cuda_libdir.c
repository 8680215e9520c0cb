/* scripts/cuda_libdir.sh, which the Makefile asks where the CUDA libraries
 * are: lib64 or lib (pip and conda toolkits), and -lcudart or the versioned
 * -l:libcudart.so.N where the unversioned link name is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/scripts/script_util.h"

/* Runs the script on home; its exit status, its output (newline cut). */
static int libdir(const char *home, char *out, size_t len)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "sh scripts/cuda_libdir.sh %s", home);
	int rc = script_run(cmd, out, len);
	size_t n = strlen(out);
	if (n && out[n - 1] == '\n')
		out[n - 1] = '\0';
	return rc;
}

static void rm_rf(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(cuda_libdir, finds_lib64_lib_and_versioned_runtimes)
{
	static const struct {
		const char *files[4]; /* what the toolkit holds */
		const char *want;     /* output after "<home>/", NULL: none found */
	} cases[] = {
		{ { "lib64/libcudart.so", "lib64/libcudart.so.13" }, "lib64 -lcudart" },
		/* a pip wheel: lib, sonames only, the highest version wins */
		{ { "lib/libcudart.so.12", "lib/libcudart.so.13", "lib/libcudart.so.9" },
		  "lib -l:libcudart.so.13" },
		/* an empty lib64 beside a full lib */
		{ { "lib64/libcublas.so", "lib/libcudart.so" }, "lib -lcudart" },
		{ { "lib64/libcudart.so.12.4" }, "lib64 -l:libcudart.so.12.4" },
		{ { "targets/x86_64-linux/lib/libcudart.so" }, "targets/x86_64-linux/lib -lcudart" },
		{ { "lib/libcudart_static.a", "bin/nvcc" }, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char home[] = "/tmp/sente-cudalib-XXXXXX", out[1024], want[1024];
		cr_assert(mkdtemp(home));
		for (int f = 0; f < 4 && cases[i].files[f]; f++)
			script_put(home, cases[i].files[f], "");
		int rc = libdir(home, out, sizeof(out));
		if (cases[i].want) {
			snprintf(want, sizeof(want), "%s/%s", home, cases[i].want);
			cr_expect_eq(rc, 0, "case %zu: %s", i, out);
			cr_expect_str_eq(out, want, "case %zu", i);
		} else {
			cr_expect_eq(rc, 1, "case %zu: %s", i, out);
			cr_expect_str_empty(out, "case %zu", i);
		}
		rm_rf(home);
	}
}
