/* demo.c: `sente demo`, a short game between two random players.
 *
 * This is what `make run` shows until the training loop exists: it exercises
 * the rules end to end (moves, captures, scoring) and prints the record. It
 * plays no strong move, and says so. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/game.h"

static const char demo_help[] =
	"usage: sente demo [options]\n"
	"\n"
	"Plays one game between two players that pick uniformly random legal\n"
	"moves, printing the board as it goes, then the result. No network and no\n"
	"search are involved: it demonstrates the rules, not strength.\n"
	"\n"
	"options:\n"
	"  --game go|connect4   which game (default connect4)\n"
	"  --size N             Go board size 5..19 (default 9)\n"
	"  --komi K             Go komi (default 7.5)\n"
	"  --seed N             random seed (default 1)\n"
	"  --quiet              print only the final position and result\n";

static uint64_t demo_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int cli_demo(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(demo_help, stdout);
		return 0;
	}
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	long size = 9, seed = 1;
	double komi = 7.5;
	bool quiet = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--game") && v) {
			if (!game_kind_from_name(v, &p.kind))
				return cli_usage_error("demo", "unknown game '%s' (go or connect4)", v);
			i++;
		} else if (!strcmp(a, "--size") && v) {
			if (!cli_parse_int(v, GO_MIN_SIZE, GO_MAX_SIZE, &size))
				return cli_usage_error("demo", "--size takes %d..%d, got '%s'",
						       GO_MIN_SIZE, GO_MAX_SIZE, v);
			i++;
		} else if (!strcmp(a, "--komi") && v) {
			if (!cli_parse_double(v, &komi))
				return cli_usage_error("demo", "--komi takes a number, got '%s'", v);
			i++;
		} else if (!strcmp(a, "--seed") && v) {
			if (!cli_parse_int(v, 1, 0x7fffffffL, &seed))
				return cli_usage_error("demo", "--seed takes a positive integer, got '%s'", v);
			i++;
		} else if (!strcmp(a, "--quiet")) {
			quiet = true;
		} else {
			return cli_usage_error("demo", "unknown or incomplete option '%s'", a);
		}
	}
	if (p.kind == GAME_KIND_GO) {
		p.size = (int)size;
		p.komi = komi;
	}
	static game g; /* a Go game with its history is large */
	if (game_init(&g, &p) != GAME_OK)
		return cli_usage_error("demo", "komi must be a multiple of 0.5, got %g", komi);

	fprintf(stderr, "sente demo: %s, two random players (no network, no search yet)\n",
		game_kind_name(p.kind));
	uint64_t rng = (uint64_t)seed * 0x9e3779b97f4a7c15ULL | 1;
	int moves[GAME_MAX_ACTIONS];
	char board[8192], text[8];
	int pass = game_pass_move(&g);
	while (!game_is_over(&g)) {
		int n = game_legal_moves(&g, moves);
		/* Random Go players would fill their own eyes forever; pass
		 * sometimes once the board is crowded so the demo ends. */
		int m = moves[demo_rand(&rng) % (uint64_t)n];
		if (p.kind == GAME_KIND_GO && n <= p.size && demo_rand(&rng) % 4 == 0)
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
	if (p.kind == GAME_KIND_GO) {
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
