/* clock.h: the one clock. Every duration, deadline and rate in sente is
 * measured on CLOCK_MONOTONIC (never the wall clock, which jumps), in
 * seconds as a double; condition variables that wait with a deadline are
 * set to the same clock (see clock_deadline). */
#ifndef SENTE_ENGINE_CLOCK_H
#define SENTE_ENGINE_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Seconds on the monotonic clock since an arbitrary fixed point. */
static inline double clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds this process has used, all its threads together
 * (CLOCK_PROCESS_CPUTIME_ID): what a phase cost on a machine it shares. */
static inline double clock_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The monotonic instant `seconds` from now, for pthread_cond_timedwait on
 * a condition variable whose clock is CLOCK_MONOTONIC. */
static inline struct timespec clock_deadline(double seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	long long ns = (long long)ts.tv_nsec + (long long)(seconds * 1e9);
	ts.tv_sec += (time_t)(ns / 1000000000LL);
	ts.tv_nsec = (long)(ns % 1000000000LL);
	if (ts.tv_nsec < 0) {
		ts.tv_nsec += 1000000000L;
		ts.tv_sec--;
	}
	return ts;
}

/* Initialises cv to wait on CLOCK_MONOTONIC, so that clock_deadline's
 * instants can be given to pthread_cond_timedwait. 0, or pthread's error. */
static inline int clock_cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);
	if (rc == 0) {
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		rc = pthread_cond_init(cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	return rc;
}

#endif
