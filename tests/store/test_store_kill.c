/* kill -9 in the middle of writing: a child adds games in a loop and is
 * killed at random moments; after each kill the database opens, passes
 * PRAGMA integrity_check, and every game row decodes (a game is in the
 * store whole or not at all). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/store.h"

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random game with every move a full search with a few visits. */
static void random_game(game_record *r, game_kind kind, uint64_t *rng)
{
	game_params p = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		p.size = 9;
	game *g = malloc(sizeof(*g));
	game_init(g, &p);
	record_init(r, &p);
	int legal[GAME_MAX_ACTIONS];
	while (!game_is_over(g) && r->n_moves < 200) {
		int n = game_legal_moves(g, legal);
		int mv = legal[xs(rng) % (uint64_t)n];
		record_visit v[8];
		int nv = 0;
		for (int k = 0; k < n && nv < 8; k += 1 + (int)(xs(rng) % 3))
			v[nv++] = (record_visit){ (int16_t)legal[k], (uint16_t)(xs(rng) % 1000) };
		if (record_add_move(r, mv, true, 0.0f, v, nv) || game_play(g, mv) != GAME_OK)
			_exit(3);
	}
	record_set_outcome(r, g);
	free(g);
}

/* The child: writes games until killed. It writes one byte to `ready`
 * once the store is open and one more once its first game is committed,
 * so the parent can time its kill from there. */
static void writer(const char *path, uint64_t seed, int ready)
{
	char err[512];
	/* The parent stops reading once it has what it waits for. */
	signal(SIGPIPE, SIG_IGN);
	store *s = store_open(path, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "writer: %s\n", err);
		_exit(1);
	}
	ssize_t w = write(ready, "o", 1);
	uint64_t rng = seed;
	for (uint64_t i = 0;; i++) {
		game_record r;
		random_game(&r, i % 3 ? GAME_KIND_CONNECT4 : GAME_KIND_GO, &rng);
		if (store_add_game(s, 0, "killme", &r, NULL)) {
			fprintf(stderr, "writer: %s\n", store_errmsg(s));
			_exit(2);
		}
		record_free(&r);
		if (i == 0)
			w = write(ready, "g", 1);
		(void)w;
		if (i % 7 == 0)
			store_add_metric(s, (int64_t)i, "games", (double)i);
	}
}

static int count_fn(void *ctx, int64_t id, const game_record *r)
{
	(void)id;
	(void)r;
	++*(int64_t *)ctx;
	return 0;
}

Test(store_kill, sigkill_leaves_whole_games, .timeout = 60)
{
	char dir[] = "/tmp/sente-kill-XXXXXX", path[64], err[512], cmd[96];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	uint64_t rng = 2024;
	int64_t last = 0;
	for (int round = 0; round < 10; round++) {
		/* No connection is open in this process across the fork. */
		int fds[2];
		cr_assert_eq(pipe(fds), 0);
		pid_t pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			writer(path, 1000 + (uint64_t)round, fds[1]);
		}
		close(fds[1]);
		/* Round 0 counts from the fork (a kill while the schema is being
		 * created), even rounds from the open, odd ones from the first
		 * commit: a slow machine (ASan) still commits games. */
		char c;
		int waits = round == 0 ? 0 : round % 2 ? 2 : 1;
		for (int k = 0; k < waits; k++)
			cr_assert_eq(read(fds[0], &c, 1), 1, "round %d: the writer died early", round);
		close(fds[0]);
		usleep((useconds_t)(5000 + xs(&rng) % 45000));
		kill(pid, SIGKILL);
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			  "round %d: the writer stopped by itself (status %d)", round, st);

		store *s = store_open(path, err, sizeof(err));
		cr_assert(s, "round %d: %s", round, err);
		char msg[256];
		cr_assert_eq(store_integrity_check(s, msg, sizeof(msg)), 0, "round %d: %s", round, msg);
		int64_t games = -1, seen = 0;
		cr_assert_eq(store_count(s, &games, NULL), 0);
		cr_assert_eq(store_recent_games(s, 0, 0, count_fn, &seen, err, sizeof(err)), games,
			     "round %d: %s", round, err);
		cr_assert_eq(store_last_skipped(s), 0, "round %d: %s", round, err);
		cr_assert_eq(seen, games);
		cr_assert(games >= last, "round %d: committed games were lost", round);
		last = games;
		store_close(s);
	}
	cr_assert(last > 0, "no game was ever committed: the kills came too early");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
