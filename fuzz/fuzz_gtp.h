/* fuzz_gtp.h: what the GTP engine's libFuzzer targets share: an engine set
 * up for fast commands, and a working folder of their own.
 *
 * loadsgf and printsgf take file names: a target runs in a folder of its
 * own under /tmp (removed at exit), so what the fuzzer writes never lands
 * in the checkout. libFuzzer reads its arguments after
 * LLVMFuzzerInitialize, so the corpus folders named on the command line
 * are made absolute first, and crash artifacts go where they would have
 * (the starting folder) unless -artifact_prefix says otherwise. Other
 * flags that take a relative path (-dict=...) need an absolute one, and
 * -merge=1 needs the program named by an absolute path: it runs it again
 * by its original argv[0], which libFuzzer does not let a target change. */
#ifndef SENTE_FUZZ_GTP_H
#define SENTE_FUZZ_GTP_H

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/game_desc.h"
#include "gtp/engine.h"

/* A new engine for game d (on a 9x9 board where the size is a choice):
 * no weights, one thread, 16 visits, no cache, no pondering, quiet. The
 * fuzzer is after the parser and handlers, not the search. NULL when it
 * cannot start. */
static inline gtp_engine *fuzz_gtp_engine(const game_desc *d)
{
	gtp_options opt = gtp_options_default();
	opt.game = d->defaults;
	if (d->has_size)
		opt.game.size = 9 < d->min_size ? d->min_size : 9 > d->max_size ? d->max_size : 9;
	opt.search.threads = 1;
	opt.search.max_visits = 16;
	opt.search.max_memory = 16 << 20;
	opt.cache_bytes = 0;
	opt.ponder = false;
	opt.quiet = true;
	char err[128];
	return gtp_engine_new(&opt, err, sizeof(err));
}

static char fuzz_gtp_dir[] = "/tmp/sente_fuzz_gtp_XXXXXX";

static inline int fuzz_gtp_rm_entry(const char *path, const struct stat *sb, int type,
				    struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(path);
}

static inline void fuzz_gtp_rm_dir(void)
{
	nftw(fuzz_gtp_dir, fuzz_gtp_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* For LLVMFuzzerInitialize: makes the folder arguments absolute, sends
 * artifacts to the starting folder, and moves into a fresh folder under
 * /tmp that is removed at exit. Aborts when any of it fails. */
static inline void fuzz_gtp_enter_dir(int *argc, char ***argv)
{
	static char cwd[PATH_MAX], prefix[PATH_MAX + 32];
	if (!getcwd(cwd, sizeof(cwd)) || !mkdtemp(fuzz_gtp_dir))
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
	if (chdir(fuzz_gtp_dir) != 0)
		abort();
	atexit(fuzz_gtp_rm_dir);
}

#endif
