/* tournament.c: matches between players, rated together (see tournament.h). */
#include "match/tournament.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match/elo.h"

/* The pairwise tallies the ratings are fitted on. */
typedef struct tally {
	int n;           /* players */
	double *score;   /* [n * n]: points of i against j */
	double *games;   /* [n * n]: games of i against j */
} tally;

/* Adds a finished match of i (A) against j (B). */
static void tally_add(tally *t, tournament_result *r, int i, int j, const match_summary *s)
{
	double pts = s->wins + 0.5 * s->draws;
	t->score[i * t->n + j] += pts;
	t->score[j * t->n + i] += s->games - pts;
	t->games[i * t->n + j] += s->games;
	t->games[j * t->n + i] += s->games;
	r->standings[i].games += s->games;
	r->standings[j].games += s->games;
	r->standings[i].points += pts;
	r->standings[j].points += s->games - pts;
	r->engine_faults += s->engine_faults;
	r->protocol_errors += s->protocol_errors;
	r->matches++;
}

/* Best first; equal ratings in the players' order. */
static int by_elo(const void *x, const void *y)
{
	const tournament_standing *a = x, *b = y;
	return a->elo < b->elo ? 1 : a->elo > b->elo ? -1 : a->player - b->player;
}

/* The ratings from the tallies into the standings, sorted. 0, or -1 with a
 * message. */
static int rate(const tally *t, tournament_result *r, char *err, size_t errlen)
{
	double rating[TOURNAMENT_MAX_PLAYERS], se[TOURNAMENT_MAX_PLAYERS];
	elo_ratings er;
	if (elo_ratings_fit(t->n, t->score, t->games, 1.0, 0, &er, rating, se) != 0) {
		snprintf(err, errlen, "the ratings cannot be fitted (a player without games?)");
		return -1;
	}
	for (int i = 0; i < t->n; i++) {
		r->standings[i].elo = rating[i];
		r->standings[i].se = se[i];
	}
	qsort(r->standings, (size_t)t->n, sizeof(r->standings[0]), by_elo);
	return 0;
}

/* Plays (or resumes) i against j into the tallies. A TOURNAMENT_* outcome. */
static int play_pair(store *db, const match_player *pl, int i, int j, const tournament_options *o,
		     int pair, int pairs, tally *t, tournament_result *r, char *err, size_t errlen)
{
	char why[800];
	match_summary sum;
	if (o->match.progress)
		progress_label(o->match.progress, "match %d of %d, %.30s against %.30s",
			       pair + 1, pairs, pl[i].spec, pl[j].spec);
	if (o->on_match)
		o->on_match(o->match_ctx, &pl[i], &pl[j], NULL);
	if (match_run(db, &pl[i], &pl[j], &o->match, o->progress, o->progress_ctx, &sum, why,
		      sizeof(why)) != 0) {
		snprintf(err, errlen, "%s against %s: %s", pl[i].spec, pl[j].spec, why);
		return TOURNAMENT_FAILED;
	}
	if (o->on_match)
		o->on_match(o->match_ctx, &pl[i], &pl[j], &sum);
	tally_add(t, r, i, j, &sum);
	return strcmp(sum.status, "stopped") == 0 ? TOURNAMENT_STOPPED : TOURNAMENT_DONE;
}

int tournament_run(store *db, const match_player *players, int n, const tournament_options *o,
		   tournament_result *out, char *err, size_t errlen)
{
	assert(n >= 2 && n <= TOURNAMENT_MAX_PLAYERS);
	memset(out, 0, sizeof(*out));
	out->players = n;
	for (int i = 0; i < n; i++)
		out->standings[i].player = i;
	tally t = { .n = n, .score = calloc((size_t)n * n, sizeof(double)),
		    .games = calloc((size_t)n * n, sizeof(double)) };
	int rc = TOURNAMENT_FAILED;
	/* The matches, for the progress line's label. */
	int pair = 0, pairs = o->gauntlet ? n - 1 : n * (n - 1) / 2;
	if (!t.score || !t.games) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			if (o->gauntlet && i != 0)
				continue;
			rc = play_pair(db, players, i, j, o, pair++, pairs, &t, out, err, errlen);
			if (rc != TOURNAMENT_DONE)
				goto out;
		}
	rc = rate(&t, out, err, errlen) == 0 ? TOURNAMENT_DONE : TOURNAMENT_FAILED;
out:
	free(t.score);
	free(t.games);
	return rc;
}
