/* progress.c: the progress line (see progress.h). */
#include "engine/progress.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "engine/clock.h"

void progress_init(progress *p, FILE *f, double seconds, double count)
{
	memset(p, 0, sizeof(*p));
	p->f = f;
	p->tty = f && isatty(fileno(f));
	p->seconds = seconds;
	p->count = count;
	p->t0 = clock_now();
	p->interval = PROGRESS_PIPE_INTERVAL;
}

void progress_label(progress *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->label, sizeof(p->label), fmt, ap);
	va_end(ap);
}

void progress_phase(progress *p, const char *fmt, ...)
{
	if (!p)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->label, sizeof(p->label), fmt, ap);
	va_end(ap);
	if (p->tty)
		progress_update(p, 0, true, "%s", "");
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
	if (p->seconds > 0) {
		frac = el / p->seconds;
		eta = p->seconds > el ? p->seconds - el : 0;
	}
	if (p->count > 0) {
		/* The count's share; its ETA at the rate so far (none before
		 * the first unit is done). Whichever ends first wins. */
		double f = done / p->count;
		if (f > frac)
			frac = f;
		if (done > 0) {
			double e = done < p->count ? el * (p->count - done) / done : 0;
			if (eta < 0 || e < eta)
				eta = e;
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
	bool fig = figures && *figures;
	if (n >= 0 && (size_t)n < len && (p->label[0] || fig))
		snprintf(buf + n, len - (size_t)n, "  | %s%s%s", p->label, p->label[0] && fig ? ": " : "",
			 fig ? figures : "");
	return buf;
}

void progress_update(progress *p, double done, bool force, const char *fmt, ...)
{
	if (!p || !p->f)
		return;
	double now = clock_now();
	if (!force && p->last > 0 &&
	    now - p->last < (p->tty ? PROGRESS_TTY_INTERVAL : p->interval))
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

void progress_clear(progress *p)
{
	if (!p || !p->f || !p->tty || !p->width)
		return;
	fprintf(p->f, "\r%*s\r", p->width, "");
	fflush(p->f);
	p->width = 0;
	/* Redraw at the next update, whatever the interval. */
	p->last = 0;
}

void progress_end(progress *p)
{
	if (p && p->f && p->tty && p->width) {
		fputc('\n', p->f);
		fflush(p->f);
		p->width = 0;
	}
}
