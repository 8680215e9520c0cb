/* elo.h: the arithmetic of match results: Elo difference with a 95%
 * interval, likelihood of superiority, the sequential probability ratio
 * test (as Leela Zero's validation and cutechess-cli run it), and ratings of
 * many players by maximum likelihood (Bradley-Terry, as BayesElo and Ordo).
 *
 * Elo here is the logistic scale: a difference d gives the stronger side an
 * expected score of 1 / (1 + 10^(-d / 400)). Draws count half a point.
 */
#ifndef SENTE_MATCH_ELO_H
#define SENTE_MATCH_ELO_H

#include <stdbool.h>

/* Largest |Elo| reported: a score of 0 or 1 has no finite Elo. */
#define ELO_MAX 2000.0

/* Result of a two-player match, from the first player's side. */
typedef struct elo_estimate {
	int games;      /* wins + losses + draws */
	double score;   /* (wins + draws / 2) / games; 0.5 when no games */
	double elo;     /* difference, clamped to +-ELO_MAX */
	double lo, hi;  /* 95% interval of the difference (normal on the score) */
	double los;     /* likelihood of superiority, P(first is stronger), 0..1 */
} elo_estimate;

/* Elo difference of an expected score p in [0, 1] (clamped at the ends). */
double elo_from_score(double p);
/* Expected score of a difference d. */
double elo_to_score(double d);

/* Estimate from wins, losses and draws (cutechess-cli's method: the score's
 * standard error from the per-game variance, its 95% interval mapped to
 * Elo; LOS from the normal approximation of wins minus losses). When every
 * game went one way the far bound is the exact 95% one, 1 - 0.025^(1/n). */
elo_estimate elo_estimate_wld(int wins, int losses, int draws);

/* SPRT of H0: difference elo0 against H1: elo1, with error rates alpha
 * (accepting H1 when H0 holds) and beta. */
typedef struct elo_sprt {
	double elo0, elo1;    /* hypotheses, Elo */
	double alpha, beta;   /* error rates */
} elo_sprt;

typedef enum elo_sprt_state {
	ELO_SPRT_CONTINUE = 0, /* LLR inside the bounds */
	ELO_SPRT_H0 = -1,      /* LLR at or below the lower bound: not stronger */
	ELO_SPRT_H1 = 1,       /* LLR at or above the upper bound: stronger */
} elo_sprt_state;

typedef struct elo_sprt_result {
	double llr;             /* log-likelihood ratio of H1 over H0 */
	double lower, upper;    /* bounds: ln(beta / (1 - alpha)), ln((1 - beta) / alpha) */
	elo_sprt_state state;   /* where the LLR stands */
} elo_sprt_result;

/* Leela Zero's defaults: H0 0 Elo, H1 35 Elo, alpha = beta = 0.05. */
elo_sprt elo_sprt_default(void);
/* Parses "elo0,elo1,alpha,beta"; false when malformed or out of range
 * (elo1 must exceed elo0, alpha and beta in (0, 0.5)). */
bool elo_sprt_parse(const char *text, elo_sprt *out);
/* The LLR under the BayesElo trinomial model with the draw Elo estimated
 * from the results (cutechess-cli, Leela Zero's validation); with no draws
 * it is the binomial LLR W ln(p1/p0) + L ln((1-p1)/(1-p0)), defined from
 * the first game. With draws, 0 (continue) while wins or losses are 0,
 * as the draw Elo cannot be estimated yet. */
elo_sprt_result elo_sprt_test(const elo_sprt *t, int wins, int losses, int draws);

/* ---- many players -------------------------------------------------------- */

/* Points of player i against player j: score[i * n + j] (draws as half),
 * games[i * n + j] played between them (symmetric). */
typedef struct elo_ratings {
	int n;           /* players */
	double *rating;  /* [n] Elo, player `anchor` at 0 */
	double *stderr_; /* [n] standard error of each rating relative to the anchor */
	int iterations;  /* of the fit */
	bool converged;  /* the fit reached its tolerance */
} elo_ratings;

/* Maximum-likelihood Bradley-Terry ratings (minorisation-maximisation,
 * Hunter 2004) with `prior` virtual draws added to every pair that played
 * (BayesElo's prior; keeps a player who won everything finite; 0 for none),
 * errors from the inverse Fisher information with the anchor fixed. rating
 * and stderr_ must hold n values. 0, or -1 when a player has no games or
 * memory is short. */
int elo_ratings_fit(int n, const double *score, const double *games, double prior, int anchor,
		    elo_ratings *out, double *rating, double *stderr_);

#endif
