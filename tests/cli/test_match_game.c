/* `sente match` takes the game and board from its models, makes its
 * --sgf-dir, and scores Go by area with the game's komi (7.5, as gtp, run
 * and selfplay) and Connect Four by its own end. Runs the binary; starts no
 * thread itself. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "nn/net.h"
#include "tests/cli/cli_util.h"

static char dir[] = "/tmp/sente_matchgame_XXXXXX";

static void write_net(const char *name, game_params p, uint64_t seed)
{
	nn_arch a = nn_arch_default(&p, 1, 8);
	char err[256], path[256];
	nn_net *n = nn_net_new(&a, err, sizeof(err));
	cr_assert(n, "%s", err);
	nn_net_init_random(n, seed);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert(nn_net_save(n, path, err, sizeof(err)) == 0, "%s", err);
	nn_net_free(n);
}

static void setup(void)
{
	cr_assert(mkdtemp(dir));
	write_net("c4a.sente", game_params_default(GAME_KIND_CONNECT4), 1);
	write_net("c4b.sente", game_params_default(GAME_KIND_CONNECT4), 2);
	write_net("go7a.sente", game_params_sized(GAME_KIND_GO, 7, NAN), 3);
	write_net("go7b.sente", game_params_sized(GAME_KIND_GO, 7, NAN), 4);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert(system(cmd) == 0);
}

TestSuite(match_game, .init = setup, .fini = teardown, .timeout = 60);

Test(match_game, connect4_models_need_no_game_flag)
{
	static char out[1 << 16];
	char args[1024];
	snprintf(args, sizeof(args), "match %s/c4a.sente %s/c4b.sente --games 2 --visits 2 --db %s/m.db",
		 dir, dir, dir);
	int rc = cli_test_run_within(50, args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "game end") || strstr(out, "resigned"), "%s", out);
	cr_assert_null(strstr(out, "area score"), "Connect Four has no area score:\n%s", out);
}

Test(match_game, go_models_give_the_size_and_sgf_dir_is_made)
{
	static char out[1 << 16];
	char args[1024], sgf_dir[512];
	snprintf(sgf_dir, sizeof(sgf_dir), "%s/new/games", dir);
	snprintf(args, sizeof(args),
		 "match %s/go7a.sente %s/go7b.sente --games 2 --visits 2 --max-moves 20 --db %s/g.db "
		 "--sgf-dir %s", dir, dir, dir, sgf_dir);
	int rc = cli_test_run_within(50, args, out, sizeof(out));
	cr_assert_eq(rc, 0, "%s", out);
	DIR *d = opendir(sgf_dir);
	cr_assert(d, "--sgf-dir %s was not made", sgf_dir);
	int n = 0;
	struct dirent *de;
	char path[1024];
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".sgf")) {
			n++;
			snprintf(path, sizeof(path), "%s/%s", sgf_dir, de->d_name);
		}
	closedir(d);
	cr_assert_eq(n, 2, "%d SGF files", n);
	FILE *f = fopen(path, "r");
	char text[4096] = "";
	cr_assert(f);
	cr_assert(fread(text, 1, sizeof(text) - 1, f) > 0);
	fclose(f);
	cr_assert(strstr(text, "SZ[7]") && strstr(text, "KM[7.5]"), "%s", text);

	/* Models of different games cannot play each other. */
	snprintf(args, sizeof(args), "match %s/go7a.sente %s/c4a.sente --db %s/x.db", dir, dir, dir);
	cr_assert_eq(cli_test_run_within(50, args, out, sizeof(out)), 2, "%s", out);
	cr_assert(strstr(out, "connect4"), "%s", out);
}
