/* game_desc.c: the list of games and the lookups over it (see game_desc.h). */
#include "engine/game_desc.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <strings.h>

const game_desc *const game_descs[GAME_KIND_COUNT + 1] = {
	[GAME_KIND_GO] = &game_go,
	[GAME_KIND_CONNECT4] = &game_connect4,
	[GAME_KIND_COUNT] = NULL,
};

const game_desc *game_desc_by_kind(int kind)
{
	return kind >= 0 && kind < GAME_KIND_COUNT ? game_descs[kind] : NULL;
}

const game_desc *game_desc_by_name(const char *name)
{
	for (int k = 0; k < GAME_KIND_COUNT; k++) {
		const game_desc *d = game_descs[k];
		if (!strcasecmp(name, d->name))
			return d;
		for (const char *const *a = d->aliases; *a; a++)
			if (!strcasecmp(name, *a))
				return d;
	}
	return NULL;
}

const game_desc *game_desc_from_params(const game_params *p)
{
	const game_desc *d = game_desc_by_kind(p->kind);
	assert(d);
	return d;
}

const game_desc *game_desc_of(const game *g)
{
	return game_desc_from_params(&g->params);
}

game_numbers game_numbers_of(const game_params *p)
{
	game_numbers n;
	game_desc_from_params(p)->numbers(p, &n);
	return n;
}

game_run_defaults game_run_defaults_of(const game_params *p)
{
	game_run_defaults r;
	game_desc_from_params(p)->run_defaults(p, &r);
	return r;
}

game_params game_params_sized(int kind, int size, double komi)
{
	const game_desc *d = game_desc_by_kind(kind);
	game_params p = d->defaults;
	if (d->has_size && size > 0)
		p.size = size;
	if (d->has_komi && !isnan(komi))
		p.komi = komi;
	return p;
}
