/* scripts/cuda_libdir.sh, which the Makefile asks where the CUDA libraries
 * are: lib64 or lib (pip and conda toolkits), and -lcudart or the versioned
 * -l:libcudart.so.N where the unversioned link name is missing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

/* Runs the script on home; its exit status, its output (newline cut). */
static int libdir(const char *home, char *out, size_t len)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "sh scripts/cuda_libdir.sh %s 2>&1", home);
	FILE *p = popen(cmd, "r");
	cr_assert(p);
	size_t n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	if (n && out[n - 1] == '\n')
		out[n - 1] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* An empty file home/rel, folders made on the way. */
static void touch(const char *home, const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", home, rel);
	for (char *p = path + strlen(home) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fclose(f);
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
			touch(home, cases[i].files[f]);
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
