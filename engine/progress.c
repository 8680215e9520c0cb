/* progress.c: the progress line (see progress.h). */
#include "engine/progress.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"

void progress_init(progress *p, FILE *f, double total, bool by_time)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->tty = f && isatty(fileno(f));
	p->by_time = by_time;
	p->total = total;
	p->t0 = clock_now();
	p->interval = 10;
}

/* h:mm:ss, or m:ss under an hour. */
static void hms(double s, char *buf, size_t len)
{
	long t = s > 0 ? (long)(s + 0.5) : 0;
	if (t >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

const char *progress_format(const progress *p, double done, double now, const char *figures,
			    char *buf, size_t len)
{
	double el = now - p->t0, frac = -1, eta = -1;
	if (p->total > 0) {
		if (p->by_time) {
			frac = el / p->total;
			eta = p->total > el ? p->total - el : 0;
		} else if (done > 0) {
			frac = done / p->total;
			eta = done < p->total ? el * (p->total - done) / done : 0;
		} else {
			frac = 0;
		}
	}
	if (frac > 1)
		frac = 1;
	char e[32], r[32];
	hms(el, e, sizeof(e));
	int n;
	if (frac >= 0 && eta >= 0) {
		hms(eta, r, sizeof(r));
		n = snprintf(buf, len, "%s  %3.0f%%  ETA %s", e, 100 * frac, r);
	} else if (frac >= 0) {
		n = snprintf(buf, len, "%s  %3.0f%%", e, 100 * frac);
	} else {
		n = snprintf(buf, len, "%s", e);
	}
	if (figures && *figures && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "  | %s", figures);
	return buf;
}

void progress_update(progress *p, double done, bool force, const char *fmt, ...)
{
	if (!p->f)
		return;
	double now = clock_now();
	if (!force && now - p->last < (p->tty ? 0.5 : p->interval))
		return;
	p->last = now;
	char fig[512], line[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fig, sizeof(fig), fmt, ap);
	va_end(ap);
	progress_format(p, done, now, fig, line, sizeof(line));
	if (p->tty) {
		int w = (int)strlen(line);
		/* Blanks over what a longer previous line left. */
		fprintf(p->f, "\r%s%*s", line, p->width > w ? p->width - w : 0, "");
		p->width = w;
	} else {
		fprintf(p->f, "%s\n", line);
	}
	fflush(p->f);
}

void progress_end(progress *p)
{
	if (p->f && p->tty && p->width) {
		fputc('\n', p->f);
		fflush(p->f);
		p->width = 0;
	}
}
