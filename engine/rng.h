/* rng.h: the one small random number generator everything shares:
 * splitmix64 (Steele, Lea and Flood), a 64-bit state that any value seeds.
 * Fast, statistically good for simulation, deterministic for a seed. */
#ifndef SENTE_ENGINE_RNG_H
#define SENTE_ENGINE_RNG_H

#include <stdint.h>

/* The splitmix64 finaliser: a strong 64-bit mix of x (also a hash). */
static inline uint64_t rng_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The next value of the generator whose state is *s. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	*s += 0x9e3779b97f4a7c15ULL;
	return rng_mix(x);
}

/* Uniform in [0, 1), 53 bits. */
static inline double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* Marsaglia's xorshift64 on the state *s, which must be nonzero (zero
 * stays zero). Only Go's fast playouts (go_playout) draw from it: the GTP
 * goldens' dead-stone lists under a fixed seed follow its sequence, so it
 * stays as it was rather than becoming rng_next. Use rng_next elsewhere. */
static inline uint64_t rng_xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
