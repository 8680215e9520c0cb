/* demo.c: `sente demo`, a short game between two random players.
 *
 * This is what `make run` shows until the training loop exists: it exercises
 * the rules end to end (moves, captures, scoring) and prints the record. It
 * plays no strong move, and says so. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/game_desc.h"
#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/game.h"
#include "engine/rng.h"

static const char demo_about[] =
	"Plays one game between two players that pick uniformly random legal\n"
	"moves, printing the board as it goes, then the result. No network and no\n"
	"search are involved: it demonstrates the rules, not strength.\n";

int cli_demo(int argc, char **argv)
{
	game_params p = game_desc_by_name("connect4")->defaults;
	long size = 9, seed = 1;
	double komi = 7.5;
	bool quiet = false;
	const cli_opt opts[] = {
		CLI_OPT_CALL("--game", NULL, &p.kind, cli_opt_game, "go|connect4", "which game",
			     .def = "connect4"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board size"),
		CLI_OPT_REAL("--komi", NULL, &komi, -INFINITY, INFINITY, "K", "Go komi"),
		CLI_OPT_INT("--seed", NULL, &seed, 1, 0x7fffffffL, "N", "random seed"),
		CLI_OPT_FLAG("--quiet", NULL, &quiet, "print only the final position and result"),
	};
	const cli_spec spec = { .cmd = "demo", .usage = "[options]", .about = demo_about,
				.opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	p = game_params_sized(p.kind, (int)size, komi);
	const game_desc *d = game_desc_by_kind(p.kind);
	static game g; /* a Go game with its history is large */
	if (game_init(&g, &p) != GAME_OK)
		return cli_usage_error("demo", "komi must be a multiple of 0.5, got %g", komi);

	fprintf(stderr, "sente demo: %s, two random players (no network, no search yet)\n",
		game_kind_name(p.kind));
	uint64_t rng = (uint64_t)seed;
	int moves[GAME_MAX_ACTIONS];
	char board[8192], text[8];
	int pass = game_pass_move(&g);
	while (!game_is_over(&g)) {
		int n = game_legal_moves(&g, moves);
		/* Random Go players would fill their own eyes forever; pass
		 * sometimes once the board is crowded so the demo ends. */
		int m = moves[rng_next(&rng) % (uint64_t)n];
		if (d->has_pass && n <= p.size && rng_next(&rng) % 4 == 0)
			m = pass;
		if (game_play(&g, m) != GAME_OK)
			break;
		if (!quiet) {
			game_print(&g, board, sizeof(board));
			printf("move %d: %s\n%s\n", game_move_count(&g),
			       game_move_to_text(&g, m, text), board);
		}
	}
	if (quiet) {
		game_print(&g, board, sizeof(board));
		printf("%s\n", board);
	}
	int r = game_result(&g);
	if (d->has_komi) {
		double s = game_score(&g);
		if (s == 0)
			printf("result: 0 (a draw on area score, komi %.1f) after %d moves\n",
			       p.komi, game_move_count(&g));
		else
			printf("result: %s+%.1f (area score, komi %.1f) after %d moves\n",
			       s > 0 ? "B" : "W", s > 0 ? s : -s, p.komi, game_move_count(&g));
	} else {
		printf("result: %s after %d moves\n",
		       r > 0 ? "first player wins" : r < 0 ? "second player wins" : "draw",
		       game_move_count(&g));
	}
	return 0;
}
