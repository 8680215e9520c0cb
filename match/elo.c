/* elo.c: Elo, SPRT and Bradley-Terry ratings (see elo.h). */
#include "match/elo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double elo_to_score(double d)
{
	return 1.0 / (1.0 + pow(10.0, -d / 400.0));
}

double elo_from_score(double p)
{
	double lo = elo_to_score(-ELO_MAX), hi = elo_to_score(ELO_MAX);
	if (!(p > lo))
		return -ELO_MAX;
	if (!(p < hi))
		return ELO_MAX;
	return -400.0 * log10(1.0 / p - 1.0);
}

elo_estimate elo_estimate_wld(int wins, int losses, int draws)
{
	elo_estimate e = { .score = 0.5, .lo = -ELO_MAX, .hi = ELO_MAX, .los = 0.5 };
	int n = wins + losses + draws;
	e.games = n;
	if (n <= 0)
		return e;
	double p = (wins + 0.5 * draws) / n;
	double var = (wins * (1 - p) * (1 - p) + losses * p * p + draws * (0.5 - p) * (0.5 - p)) / n;
	double se = sqrt(var / n);
	/* 97.5% quantile of the standard normal. */
	const double z = 1.959963984540054;
	e.score = p;
	e.elo = elo_from_score(p);
	e.lo = elo_from_score(p - z * se);
	e.hi = elo_from_score(p + z * se);
	/* Every game lost (or won): the per-game variance is 0 and the normal
	 * interval collapses; the exact (Clopper-Pearson) bound is
	 * 1 - 0.025^(1/n) on the far side. */
	if (wins + draws == 0)
		e.hi = elo_from_score(1.0 - pow(0.025, 1.0 / n));
	if (losses + draws == 0)
		e.lo = elo_from_score(pow(0.025, 1.0 / n));
	if (wins + losses > 0)
		e.los = 0.5 * (1.0 + erf((wins - losses) / sqrt(2.0 * (wins + losses))));
	return e;
}

elo_sprt elo_sprt_default(void)
{
	return (elo_sprt){ .elo0 = 0, .elo1 = 35, .alpha = 0.05, .beta = 0.05 };
}

bool elo_sprt_parse(const char *text, elo_sprt *out)
{
	elo_sprt t;
	int used = 0;
	if (sscanf(text, "%lf,%lf,%lf,%lf%n", &t.elo0, &t.elo1, &t.alpha, &t.beta, &used) != 4 ||
	    text[used] != '\0')
		return false;
	if (!(t.elo1 > t.elo0) || fabs(t.elo0) > ELO_MAX || fabs(t.elo1) > ELO_MAX ||
	    !(t.alpha > 0 && t.alpha < 0.5) || !(t.beta > 0 && t.beta < 0.5))
		return false;
	*out = t;
	return true;
}

/* BayesElo model: win, loss and draw probabilities of a difference `elo`
 * with draw Elo `draw_elo`. */
static void bayes_probs(double elo, double draw_elo, double *pw, double *pl, double *pd)
{
	*pw = 1.0 / (1.0 + pow(10.0, (draw_elo - elo) / 400.0));
	*pl = 1.0 / (1.0 + pow(10.0, (draw_elo + elo) / 400.0));
	*pd = 1.0 - *pw - *pl;
}

elo_sprt_result elo_sprt_test(const elo_sprt *t, int wins, int losses, int draws)
{
	elo_sprt_result r = { 0 };
	r.lower = log(t->beta / (1.0 - t->alpha));
	r.upper = log((1.0 - t->beta) / t->alpha);
	double n = (double)wins + losses + draws;
	if (n <= 0 || (draws > 0 && (wins <= 0 || losses <= 0)))
		return r;
	double w = wins / n, l = losses / n;
	/* With no draws w + l = 1 and this is exactly 0 (the binomial test,
	 * defined even when one side has not won yet). */
	double draw_elo = draws > 0 ? 200.0 * log10((1.0 - l) / l * (1.0 - w) / w) : 0.0;
	double w0, l0, d0, w1, l1, d1;
	bayes_probs(t->elo0, draw_elo, &w0, &l0, &d0);
	bayes_probs(t->elo1, draw_elo, &w1, &l1, &d1);
	r.llr = (wins ? wins * log(w1 / w0) : 0) + (losses ? losses * log(l1 / l0) : 0);
	if (draws > 0)
		r.llr += draws * log(d1 / d0);
	r.state = r.llr >= r.upper ? ELO_SPRT_H1 : r.llr <= r.lower ? ELO_SPRT_H0 : ELO_SPRT_CONTINUE;
	return r;
}

/* Inverts the m x m matrix a in place (Gauss-Jordan with partial pivoting).
 * -1 when it is singular. */
static int invert(double *a, int m)
{
	double *b = calloc((size_t)m * (size_t)m, sizeof(double));
	if (!b)
		return -1;
	for (int i = 0; i < m; i++)
		b[i * m + i] = 1;
	int rc = -1;
	for (int c = 0; c < m; c++) {
		int piv = c;
		for (int r = c + 1; r < m; r++)
			if (fabs(a[r * m + c]) > fabs(a[piv * m + c]))
				piv = r;
		if (fabs(a[piv * m + c]) < 1e-300)
			goto out;
		for (int k = 0; k < m; k++) {
			double t = a[c * m + k];
			a[c * m + k] = a[piv * m + k];
			a[piv * m + k] = t;
			t = b[c * m + k];
			b[c * m + k] = b[piv * m + k];
			b[piv * m + k] = t;
		}
		double d = a[c * m + c];
		for (int k = 0; k < m; k++) {
			a[c * m + k] /= d;
			b[c * m + k] /= d;
		}
		for (int r = 0; r < m; r++) {
			if (r == c || a[r * m + c] == 0)
				continue;
			double f = a[r * m + c];
			for (int k = 0; k < m; k++) {
				a[r * m + k] -= f * a[c * m + k];
				b[r * m + k] -= f * b[c * m + k];
			}
		}
	}
	memcpy(a, b, sizeof(double) * (size_t)m * (size_t)m);
	rc = 0;
out:
	free(b);
	return rc;
}

int elo_ratings_fit(int n, const double *score, const double *games, double prior, int anchor,
		    elo_ratings *out, double *rating, double *stderr_)
{
	memset(out, 0, sizeof(*out));
	out->n = n;
	out->rating = rating;
	out->stderr_ = stderr_;
	if (n <= 0 || anchor < 0 || anchor >= n)
		return -1;
	int rc = -1;
	double *g = malloc(sizeof(double) * (size_t)n);
	double *wins = calloc((size_t)n, sizeof(double));
	double *info = n > 1 ? calloc((size_t)(n - 1) * (size_t)(n - 1), sizeof(double)) : NULL;
	if (!g || !wins || (n > 1 && !info))
		goto out;
	for (int i = 0; i < n; i++) {
		double played = 0;
		for (int j = 0; j < n; j++) {
			if (j == i || games[i * n + j] <= 0)
				continue;
			played += games[i * n + j];
			wins[i] += score[i * n + j] + 0.5 * prior;
		}
		if (played <= 0 && n > 1)
			goto out;
		g[i] = 1;
	}
	/* MM: gamma_i = W_i / sum_j n_ij / (gamma_i + gamma_j), then the
	 * geometric mean is brought back to 1. */
	out->converged = n == 1;
	for (int it = 0; it < 100000 && !out->converged; it++) {
		double change = 0, logsum = 0;
		for (int i = 0; i < n; i++) {
			double den = 0;
			for (int j = 0; j < n; j++)
				if (j != i && games[i * n + j] > 0)
					den += (games[i * n + j] + prior) / (g[i] + g[j]);
			/* A player with no points: let it fall, bounded below. */
			double ng = wins[i] > 0 ? wins[i] / den : g[i] * 1e-3;
			if (ng < 1e-30)
				ng = 1e-30;
			change = fmax(change, fabs(log(ng / g[i])));
			g[i] = ng;
		}
		for (int i = 0; i < n; i++)
			logsum += log(g[i]);
		double scale = exp(-logsum / n);
		for (int i = 0; i < n; i++)
			g[i] *= scale;
		out->iterations = it + 1;
		if (change < 1e-10)
			out->converged = true;
	}
	double base = 400.0 * log10(g[anchor]);
	for (int i = 0; i < n; i++) {
		rating[i] = 400.0 * log10(g[i]) - base;
		if (rating[i] > ELO_MAX)
			rating[i] = ELO_MAX;
		if (rating[i] < -ELO_MAX)
			rating[i] = -ELO_MAX;
		stderr_[i] = 0;
	}
	/* Fisher information of the ratings (Elo units) without the anchor. */
	const double k = log(10.0) / 400.0;
	int m = n - 1;
	for (int i = 0, a = 0; i < n; i++) {
		if (i == anchor)
			continue;
		for (int j = 0; j < n; j++) {
			if (j == i || games[i * n + j] <= 0)
				continue;
			double p = g[i] / (g[i] + g[j]);
			double h = k * k * (games[i * n + j] + prior) * p * (1 - p);
			info[a * m + a] += h;
			if (j != anchor) {
				int b = j < anchor ? j : j - 1;
				info[a * m + b] -= h;
			}
		}
		a++;
	}
	if (m > 0 && invert(info, m) != 0)
		goto out;
	for (int i = 0, a = 0; i < n; i++) {
		if (i == anchor)
			continue;
		stderr_[i] = sqrt(fmax(info[a * m + a], 0));
		a++;
	}
	rc = 0;
out:
	free(g);
	free(wins);
	free(info);
	return rc;
}
