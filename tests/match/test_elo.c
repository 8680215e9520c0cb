/* Elo, interval, SPRT and Bradley-Terry arithmetic against values worked
 * out by hand (Python, the formulas written out) and synthetic tournaments. */
#include <criterion/criterion.h>
#include <math.h>

#include "engine/rng.h"
#include "match/elo.h"

Test(elo, score_and_difference)
{
	cr_assert_float_eq(elo_from_score(0.5), 0.0, 1e-12);
	cr_assert_float_eq(elo_from_score(0.75), 190.848501887865, 1e-9); /* 400 log10 3 */
	cr_assert_float_eq(elo_to_score(190.848501887865), 0.75, 1e-12);
	cr_assert_float_eq(elo_from_score(0.25), -190.848501887865, 1e-9);
	cr_assert_eq(elo_from_score(0.0), -ELO_MAX);
	cr_assert_eq(elo_from_score(1.0), ELO_MAX);
}

Test(elo, interval_and_los)
{
	/* 60-40: p 0.6, per-game variance 0.24, se 0.04899. */
	elo_estimate e = elo_estimate_wld(60, 40, 0);
	cr_assert_eq(e.games, 100);
	cr_assert_float_eq(e.score, 0.6, 1e-12);
	cr_assert_float_eq(e.elo, 70.4365036222725, 1e-6);
	cr_assert_float_eq(e.lo, 2.76687322256089, 1e-6);
	cr_assert_float_eq(e.hi, 143.909233010914, 1e-6);
	cr_assert_float_eq(e.los, 0.977249868051821, 1e-9);
	/* Draws shrink the variance. */
	e = elo_estimate_wld(30, 20, 50);
	cr_assert_float_eq(e.elo, 34.8600702875601, 1e-6);
	cr_assert_float_eq(e.lo, -12.9296934703379, 1e-6);
	cr_assert_float_eq(e.hi, 84.0107626494025, 1e-6);
	cr_assert_float_eq(e.los, 0.921350396474857, 1e-9);
	/* Symmetric when the sides swap. */
	elo_estimate f = elo_estimate_wld(20, 30, 50);
	cr_assert_float_eq(f.elo, -e.elo, 1e-9);
	cr_assert_float_eq(f.lo, -e.hi, 1e-9);
	/* Every game lost: the upper bound is the exact one, 1 - 0.025^(1/50). */
	e = elo_estimate_wld(0, 50, 0);
	cr_assert_eq(e.elo, -ELO_MAX);
	cr_assert_float_eq(e.hi, -446.382579446872, 1e-6);
	e = elo_estimate_wld(50, 0, 0);
	cr_assert_float_eq(e.lo, 446.382579446872, 1e-6);
	/* No games: no information. */
	e = elo_estimate_wld(0, 0, 0);
	cr_assert_eq(e.elo, 0);
	cr_assert_eq(e.los, 0.5);
}

Test(elo, sprt_llr_by_hand)
{
	elo_sprt t = elo_sprt_default();
	cr_assert_eq(t.elo0, 0);
	cr_assert_eq(t.elo1, 35);
	elo_sprt_result r = elo_sprt_test(&t, 30, 10, 0);
	cr_assert_float_eq(r.lower, -2.94443897916644, 1e-9);
	cr_assert_float_eq(r.upper, 2.94443897916644, 1e-9);
	/* 30 ln(p1 / 0.5) + 10 ln((1 - p1) / 0.5), p1 = 1 / (1 + 10^(-35/400)). */
	cr_assert_float_eq(r.llr, 1.81214102732529, 1e-9);
	cr_assert_eq(r.state, ELO_SPRT_CONTINUE);
	r = elo_sprt_test(&t, 10, 30, 0);
	cr_assert_float_eq(r.llr, -2.21738288541429, 1e-9);
	/* With draws: draw Elo 200 log10((1-l)/l (1-w)/w) = 311.26. */
	r = elo_sprt_test(&t, 20, 10, 70);
	cr_assert_float_eq(r.llr, 1.30287527505144, 1e-9);
	/* Bounds are reached. */
	cr_assert_eq(elo_sprt_test(&t, 60, 10, 0).state, ELO_SPRT_H1);
	cr_assert_eq(elo_sprt_test(&t, 10, 40, 0).state, ELO_SPRT_H0);
	/* Without draws a shutout is decided: 50 ln(p1 / 0.5). */
	r = elo_sprt_test(&t, 50, 0, 0);
	cr_assert_float_eq(r.llr, 4.78362872961885, 1e-9);
	cr_assert_eq(r.state, ELO_SPRT_H1);
	cr_assert_float_eq(elo_sprt_test(&t, 0, 10, 0).llr, -1.05803621044602, 1e-9);
	/* With draws nothing is decided before both sides have won. */
	r = elo_sprt_test(&t, 50, 0, 3);
	cr_assert_eq(r.llr, 0);
	cr_assert_eq(r.state, ELO_SPRT_CONTINUE);
}

Test(elo, sprt_parse)
{
	elo_sprt t;
	cr_assert(elo_sprt_parse("0,35,0.05,0.05", &t));
	cr_assert_eq(t.elo1, 35);
	cr_assert(elo_sprt_parse("-10,10,0.1,0.2", &t));
	cr_assert_float_eq(t.beta, 0.2, 1e-12);
	cr_assert_not(elo_sprt_parse("35,0,0.05,0.05", &t));
	cr_assert_not(elo_sprt_parse("0,35,0.05", &t));
	cr_assert_not(elo_sprt_parse("0,35,0.05,0.05x", &t));
	cr_assert_not(elo_sprt_parse("0,35,0,0.05", &t));
	cr_assert_not(elo_sprt_parse("0,35,0.05,0.7", &t));
}

/* Exact expected scores: the maximum-likelihood fit must give back the
 * generating ratings (no prior, so nothing pulls them together). */
Test(elo, bradley_terry_recovers_exact_strengths)
{
	enum { N = 5 };
	const double truth[N] = { 0, 120, 250, -180, 40 };
	double score[N * N] = { 0 }, games[N * N] = { 0 }, r[N], se[N];
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			if (i != j) {
				games[i * N + j] = 100;
				score[i * N + j] = 100 * elo_to_score(truth[i] - truth[j]);
			}
	elo_ratings out;
	cr_assert_eq(elo_ratings_fit(N, score, games, 0, 0, &out, r, se), 0);
	cr_assert(out.converged);
	for (int i = 0; i < N; i++)
		cr_assert_float_eq(r[i], truth[i], 1e-4, "player %d: %f, want %f", i, r[i], truth[i]);
	cr_assert_eq(se[0], 0);
	for (int i = 1; i < N; i++)
		cr_assert(se[i] > 5 && se[i] < 60, "se %f", se[i]);
}

/* Random games (with draws) from known strengths: each fitted rating lies
 * within four standard errors of the truth, and the order is right. */
Test(elo, bradley_terry_recovers_sampled_strengths)
{
	enum { N = 5, GAMES = 400 };
	const double truth[N] = { 0, 100, 200, 300, -100 };
	double score[N * N] = { 0 }, games[N * N] = { 0 }, r[N], se[N];
	uint64_t rng = 12345;
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			for (int k = 0; k < GAMES; k++) {
				double p = elo_to_score(truth[i] - truth[j]);
				double u = rng_uniform(&rng);
				/* 10% draws, the rest split to keep the expected score p. */
				double s = u < 0.1 ? 0.5 : (rng_uniform(&rng) < (p - 0.05) / 0.9 ? 1.0 : 0.0);
				score[i * N + j] += s;
				score[j * N + i] += 1 - s;
				games[i * N + j] += 1;
				games[j * N + i] += 1;
			}
	elo_ratings out;
	cr_assert_eq(elo_ratings_fit(N, score, games, 1, 0, &out, r, se), 0);
	for (int i = 1; i < N; i++) {
		cr_assert(fabs(r[i] - truth[i]) < 4 * se[i], "player %d: %f +- %f, truth %f", i, r[i],
			  se[i], truth[i]);
		cr_assert(se[i] < 30);
	}
	cr_assert(r[4] < r[0] && r[0] < r[1] && r[1] < r[2] && r[2] < r[3]);
}

Test(elo, bradley_terry_prior_keeps_a_perfect_score_finite)
{
	/* A gauntlet: player 0 against 1 and 2; player 2 lost every game. */
	double score[9] = { 0, 6, 10, 4, 0, 0, 0, 0, 0 };
	double games[9] = { 0, 10, 10, 10, 0, 0, 10, 0, 0 };
	double r[3], se[3];
	elo_ratings out;
	cr_assert_eq(elo_ratings_fit(3, score, games, 2, 0, &out, r, se), 0);
	cr_assert(r[2] < -100 && r[2] > -ELO_MAX, "%f", r[2]);
	cr_assert(r[1] < 0 && r[1] > -150, "%f", r[1]);
	/* A player who never played cannot be rated. */
	double g2[9] = { 0, 10, 0, 10, 0, 0, 0, 0, 0 };
	cr_assert_eq(elo_ratings_fit(3, score, g2, 2, 0, &out, r, se), -1);
}
