/* scripts/check_layers.sh, which `make test` runs: the repository passes,
 * and a tree with an include across the layers fails, naming it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/scripts/script_util.h"

/* Runs the script on root; its exit status, output into out. */
static int check(const char *root, char *out, size_t len)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "sh scripts/check_layers.sh %s", root);
	return script_run(cmd, out, len);
}

Test(check_layers, the_repository_keeps_its_layers)
{
	char out[8192];
	cr_assert_eq(check(".", out, sizeof(out)), 0, "%s", out);
}

Test(check_layers, a_bad_include_fails_and_is_named)
{
	char root[] = "/tmp/sente-layers-XXXXXX", out[4096];
	cr_assert(mkdtemp(root));
	script_put(root, "engine/ok.c", "#include <stdio.h>\n#include \"engine/game.h\"\n");
	script_put(root, "loop/ok.c", "#include \"train/learner.h\"\n#include \"match/match.h\"\n");
	script_put(root, "loop/ok2.c", "#include \"serve/serve.h\"\n");
	script_put(root, "serve/ok.c", "#include \"data/store.h\"\n#include \"engine/game.h\"\n");
	cr_assert_eq(check(root, out, sizeof(out)), 0, "%s", out);
	script_put(root, "train/bad.c", "#include \"train/learner.h\"\n\n#include \"selfplay/selfplay.h\"\n");
	script_put(root, "nn/cuda/bad.cu", "#include \"search/mcts.h\"\n");
	script_put(root, "search/bad.h", "#  include \"cli/cli.h\"\n");
	script_put(root, "serve/bad.c", "#include \"loop/loop.h\"\n");
	cr_assert_eq(check(root, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "serve/bad.c:1: serve/ may not include loop/"), "%s", out);
	cr_assert(strstr(out, "train/bad.c:3: train/ may not include selfplay/"), "%s", out);
	cr_assert(strstr(out, "nn/cuda/bad.cu:1: nn/ may not include search/"), "%s", out);
	cr_assert(strstr(out, "search/bad.h:1: search/ may not include cli/"), "%s", out);
	cr_assert(strstr(out, "4 include(s) break the layering"), "%s", out);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}
