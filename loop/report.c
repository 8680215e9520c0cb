/* report.c: the run report (see report.h). */
#include "loop/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"

void report_chart(FILE *f, const char *title, const char *xlabel, const report_series *s, int n,
		  bool percent)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
	int points = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < s[i].n; k++) {
			x0 = fmin(x0, s[i].x[k]);
			x1 = fmax(x1, s[i].x[k]);
			y0 = fmin(y0, s[i].y[k]);
			y1 = fmax(y1, s[i].y[k]);
			points++;
		}
	fprintf(f, "<h2>%s</h2>\n", title);
	if (points == 0) {
		fprintf(f, "<p>No data yet.</p>\n");
		return;
	}
	if (percent)
		y0 = 0;
	if (x1 <= x0)
		x1 = x0 + 1;
	if (y1 <= y0)
		y1 = y0 + 1e-9 + fabs(y0) * 0.1;
	const double W = 640, H = 280, L = 60, R = 20, T = 10, B = 40;
	fprintf(f, "<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n", W, H);
	fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n",
		L, T, W - L - R, H - T - B);
	for (int k = 0; k <= 4; k++) {
		double yv = y0 + (y1 - y0) * k / 4, py = H - B - (H - T - B) * k / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.3g%s</text>\n",
			L - 4, py + 4, percent ? yv * 100 : yv, percent ? "%" : "");
		double xv = x0 + (x1 - x0) * k / 4, px = L + (W - L - R) * k / 4;
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">%.4g</text>\n",
			px, H - B + 16, xv);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
		(L + W - R) / 2, H - 6, xlabel);
	for (int i = 0; i < n; i++) {
		if (s[i].n == 0)
			continue;
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", s[i].color);
		for (int k = 0; k < s[i].n; k++)
			fprintf(f, "%.1f,%.1f ", L + (W - L - R) * (s[i].x[k] - x0) / (x1 - x0),
				H - B - (H - T - B) * (s[i].y[k] - y0) / (y1 - y0));
		fprintf(f, "\"/>\n");
	}
	fprintf(f, "</svg>\n<p>");
	for (int i = 0; i < n; i++)
		if (s[i].n)
			fprintf(f, "<span style=\"color:%s\">&#9632;</span> %s (last %.4g%s) &nbsp; ",
				s[i].color, s[i].label, percent ? s[i].y[s[i].n - 1] * 100 : s[i].y[s[i].n - 1],
				percent ? "%" : "");
	fprintf(f, "</p>\n");
}

int report_write(store *db, const char *path, const char *game_name, char *err, size_t errlen)
{
	/* The dashboard of `sente serve`, its data embedded: one page. */
	(void)game_name;
	return serve_page_save(db, path, err, errlen);
}
