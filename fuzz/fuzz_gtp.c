/* fuzz_gtp.c: libFuzzer target for the GTP parser and engine. The input is
 * split into lines and fed to a fresh engine for each game (a 9x9 board
 * where the size is a choice), answers going to /dev/null. Nothing may
 * crash, leak or read out of bounds, whatever the bytes.
 *
 * loadsgf and printsgf take file names: the target runs in a folder of its
 * own under /tmp (removed at exit), so what the fuzzer writes never lands
 * in the checkout. libFuzzer reads its arguments after
 * LLVMFuzzerInitialize, so the corpus folders named on the command line
 * are made absolute first, and crash artifacts go where they would have
 * (the starting folder) unless -artifact_prefix says otherwise. Other
 * flags that take a relative path (-dict=...) need an absolute one. */
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/game_desc.h"
#include "gtp/engine.h"

static void feed(const game_desc *d, const uint8_t *data, size_t size, FILE *sink)
{
	gtp_options opt = gtp_options_default();
	opt.game = d->defaults;
	if (d->has_size)
		opt.game.size = 9 < d->min_size ? d->min_size : 9 > d->max_size ? d->max_size : 9;
	/* Small searches: the fuzzer is after the parser and handlers. */
	opt.search.threads = 1;
	opt.search.max_visits = 16;
	opt.search.max_memory = 16 << 20;
	opt.cache_bytes = 0;
	opt.ponder = false;
	opt.quiet = true;
	char err[128];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
	if (!e)
		return;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size || data[i] == '\n') {
			if (!gtp_engine_handle(e, (const char *)data + start, i - start, sink))
				break;
			start = i + 1;
		}
	}
	gtp_engine_free(e);
}

static char fuzz_dir[] = "/tmp/sente_fuzz_gtp_XXXXXX";

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

static void rm_fuzz_dir(void)
{
	nftw(fuzz_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char cwd[PATH_MAX], prefix[PATH_MAX + 32];
	if (!getcwd(cwd, sizeof(cwd)) || !mkdtemp(fuzz_dir))
		abort();
	int n = *argc, has_prefix = 0;
	char **args = calloc((size_t)n + 2, sizeof(char *));
	if (!args)
		abort();
	for (int i = 0; i < n; i++) {
		const char *a = (*argv)[i];
		args[i] = (char *)a;
		if (!strncmp(a, "-artifact_prefix=", 17) || !strncmp(a, "-exact_artifact_path=", 21))
			has_prefix = 1;
		if (i > 0 && a[0] != '-' && a[0] != '/' &&
		    asprintf(&args[i], "%s/%s", cwd, a) < 0)
			abort();
	}
	if (!has_prefix) {
		snprintf(prefix, sizeof(prefix), "-artifact_prefix=%s/", cwd);
		args[n++] = prefix;
	}
	args[n] = NULL;
	*argc = n;
	*argv = args;
	if (chdir(fuzz_dir) != 0)
		abort();
	atexit(rm_fuzz_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	for (const game_desc *const *d = game_descs; *d; d++)
		feed(*d, data, size, sink);
	return 0;
}
