/* strength.c: Connect Four error rates (see strength.h). */
#include "selfplay/strength.h"

#include "engine/clock.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/game_desc.h"
#include "search/mcts.h"

static const char *const set_names[] = {
	"begin-easy", "begin-medium", "begin-hard", "middle-easy", "middle-medium", "end-easy",
};
#define N_SET_NAMES (sizeof(set_names) / sizeof(set_names[0]))

static int has_sets(const char *dir)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s.tsv", dir, set_names[0]);
	return access(path, R_OK) == 0;
}

int c4bench_find(char *dir, size_t len)
{
	const char *env = getenv("SENTE_DATA");
	if (env) {
		snprintf(dir, len, "%s/connect4", env);
		if (has_sets(dir))
			return 0;
	}
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		/* bin/sente -> bin -> the installation root */
		for (int up = 0; up < 2; up++) {
			char *slash = strrchr(exe, '/');
			if (slash)
				*slash = '\0';
		}
		snprintf(dir, len, "%s/data/connect4", exe);
		if (has_sets(dir))
			return 0;
	}
	snprintf(dir, len, "data/connect4");
	return has_sets(dir) ? 0 : -1;
}

void c4bench_free(c4bench *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->n_sets; i++)
		free(b->set[i].pos);
	memset(b, 0, sizeof(*b));
}

static int load_set(const char *path, c4bench_set *s, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open", path);
		return -1;
	}
	char line[256];
	int cap = 0, lineno = 0, rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char moves[64], cls[7][4];
		int score;
		if (sscanf(line, "%63s %d %3s %3s %3s %3s %3s %3s %3s", moves, &score, cls[0], cls[1],
			   cls[2], cls[3], cls[4], cls[5], cls[6]) != 9 || strlen(moves) > 42) {
			snprintf(err, errlen, "%s:%d: not 'moves score 7 classes'", path, lineno);
			rc = -1;
			break;
		}
		if (s->n == cap) {
			cap = cap ? cap * 2 : 512;
			c4bench_position *p = realloc(s->pos, sizeof(*p) * (size_t)cap);
			if (!p) {
				snprintf(err, errlen, "out of memory");
				rc = -1;
				break;
			}
			s->pos = p;
		}
		c4bench_position *p = &s->pos[s->n++];
		snprintf(p->moves, sizeof(p->moves), "%s", moves);
		for (int c = 0; c < 7; c++)
			p->classes[c] = cls[c][0];
	}
	fclose(f);
	return rc;
}

int c4bench_load(const char *dir, c4bench *b, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i < N_SET_NAMES && b->n_sets < C4BENCH_MAX_SETS; i++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/%s.tsv", dir, set_names[i]);
		if (access(path, R_OK) != 0)
			continue;
		c4bench_set *s = &b->set[b->n_sets];
		snprintf(s->name, sizeof(s->name), "%s", set_names[i]);
		if (load_set(path, s, err, errlen) != 0) {
			b->n_sets++;
			c4bench_free(b);
			return -1;
		}
		b->n_sets++;
	}
	if (b->n_sets == 0) {
		snprintf(err, errlen, "no Connect Four position sets in %s", dir);
		return -1;
	}
	return 0;
}

static int class_rank(char c) { return c == 'W' ? 2 : c == 'D' ? 1 : c == 'L' ? 0 : -1; }

/* Sets up the position; false when a move is illegal or the game over. */
static bool setup(const c4bench_position *p, game *g)
{
	game_init(g, &game_connect4.defaults); /* the positions are Connect Four's */
	for (const char *c = p->moves; *c; c++)
		if (*c < '1' || *c > '7' || game_play(g, *c - '1') != GAME_OK)
			return false;
	return !game_is_over(g);
}

static bool is_error(const c4bench_position *p, int move)
{
	int best = -1;
	for (int c = 0; c < 7; c++)
		if (class_rank(p->classes[c]) > best)
			best = class_rank(p->classes[c]);
	return move < 0 || move > 6 || class_rank(p->classes[move]) < best;
}

static int count(const c4bench_set *s, int max_per_set)
{
	return max_per_set > 0 && max_per_set < s->n ? max_per_set : s->n;
}

/* Position k of n spread evenly over the set, so a sample covers it. */
static const c4bench_position *pick(const c4bench_set *s, int k, int n)
{
	return &s->pos[(int)((long)k * s->n / n)];
}

int c4bench_network(const c4bench *b, evaluator *ev, int max_per_set,
		    const volatile sig_atomic_t *stop, c4bench_result *out)
{
	static _Thread_local game g;
	float policy[GAME_MAX_ACTIONS], v;
	for (int i = 0; i < b->n_sets; i++) {
		const c4bench_set *s = &b->set[i];
		c4bench_result *r = &out[i];
		snprintf(r->name, sizeof(r->name), "%s", s->name);
		r->n = r->errors = 0;
		int n = count(s, max_per_set);
		for (int k = 0; k < n; k++) {
			if (stop && *stop)
				return C4BENCH_CUT_SHORT;
			const c4bench_position *p = pick(s, k, n);
			if (!setup(p, &g))
				continue;
			eval_raw(ev, &g, 0, policy, &v);
			int best = -1;
			for (int c = 0; c < 7; c++)
				if (game_is_legal(&g, c) && (best < 0 || policy[c] > policy[best]))
					best = c;
			r->n++;
			r->errors += is_error(p, best);
		}
	}
	return b->n_sets;
}

int c4bench_search(const c4bench *b, evaluator *ev, int visits, int threads, int max_per_set,
		   double deadline, const volatile sig_atomic_t *stop, c4bench_result *out)
{
	static _Thread_local game g;
	mcts_options o = mcts_options_default();
	o.threads = threads > 0 ? threads : 1;
	o.gather = 4;
	o.max_visits = visits;
	o.max_memory = (size_t)32 << 20;
	char err[128];
	mcts *m = mcts_new(ev, &o, err, sizeof(err));
	if (!m)
		return -1;
	for (int i = 0; i < b->n_sets; i++) {
		const c4bench_set *s = &b->set[i];
		c4bench_result *r = &out[i];
		snprintf(r->name, sizeof(r->name), "%s", s->name);
		r->n = r->errors = 0;
		int n = count(s, max_per_set);
		for (int k = 0; k < n; k++) {
			if ((deadline > 0 && clock_now() >= deadline) || (stop && *stop)) {
				mcts_free(m);
				return C4BENCH_CUT_SHORT;
			}
			const c4bench_position *p = pick(s, k, n);
			if (!setup(p, &g))
				continue;
			mcts_clear(m);
			mcts_set_position(m, &g);
			mcts_search(m);
			r->n++;
			r->errors += is_error(p, mcts_choose_move(m, 0, false));
		}
	}
	mcts_free(m);
	return b->n_sets;
}
