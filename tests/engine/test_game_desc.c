/* Game descriptors: every descriptor agrees with the rules on fresh games
 * of each size it allows, lookups by kind, name and alias, and the numbers
 * the layers above engine/ used to compute themselves, pinned. */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/game_desc.h"
#include "nn/encode.h"
#include "nn/net.h"

static game g; /* large: keep off the stack */

/* Checks d against game_init and the game interface for params p. */
static void check_params(const game_desc *d, const game_params *p)
{
	cr_assert_eq(game_init(&g, p), GAME_OK, "%s size %d", d->name, p->size);
	cr_assert_eq(game_desc_of(&g), d);
	game_numbers n = game_numbers_of(p);
	cr_assert_eq(n.actions, game_num_actions(&g), "%s size %d", d->name, p->size);
	cr_assert_eq(n.width, game_width(&g));
	cr_assert_eq(n.height, game_height(&g));
	cr_assert_eq(d->num_symmetries, game_num_symmetries(&g));
	cr_assert_eq(d->has_pass, game_pass_move(&g) != GAME_MOVE_NONE);
	if (d->has_pass)
		cr_assert_eq(game_pass_move(&g), n.actions - 1, "the pass is the last action");
	cr_assert_eq(game_komi(&g), d->has_komi ? p->komi : 0);
	cr_assert_eq(game_resigned(&g), -1);
	cr_assert(n.typical_length > 0 && n.typical_length <= n.max_moves);
	cr_assert(n.temperature_moves > 0 && n.temperature_moves < n.max_moves);
	cr_assert(n.opening_moves > 0 && n.opening_moves < n.typical_length);
	cr_assert(n.resign_after >= 0 && n.resign_after < n.max_moves);
	cr_assert(n.max_moves <= GO_MAX_HISTORY, "a record holds the longest game");
	game_run_defaults r = game_run_defaults_of(p);
	cr_assert(r.blocks > 0 && r.channels > 0 && r.visits > 0 && r.cheap_visits >= 0);
	cr_assert(r.parallel_games > 0 && r.window > 0 && r.positions_per_game > 0);

	/* The encodings it names exist, are for it, and a new network for
	 * it is a valid architecture of its board. */
	nn_encoding e = nn_encoding_for_game(p), ne = nn_encoding_for_new_net(p);
	cr_assert_eq(nn_encoding_game(e), d->kind);
	cr_assert_eq(nn_encoding_game(ne), d->kind);
	cr_assert_str_eq(nn_encoding_name(e), d->encoding);
	cr_assert_str_eq(nn_encoding_name(ne), d->net_encoding);
	nn_arch a = nn_arch_default(p, 2, 16);
	char err[256];
	cr_assert_eq(nn_arch_check(&a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(a.policy_outputs, n.actions);
	cr_assert_eq(a.value_outputs, d->value_outputs);
	game_params back = nn_arch_params(&a);
	cr_assert(back.kind == p->kind && back.size == p->size);
}

Test(game_desc, agrees_with_the_rules)
{
	int n = 0;
	for (const game_desc *const *it = game_descs; *it; it++, n++) {
		const game_desc *d = *it;
		cr_assert_eq(d->kind, n, "game_descs is indexed by kind");
		cr_assert_eq(game_desc_by_kind(d->kind), d);
		cr_assert_str_eq(game_kind_name(d->kind), d->name);
		game_params def = game_params_default(d->kind);
		cr_assert(def.kind == d->kind && def.size == d->defaults.size &&
			  def.komi == d->defaults.komi);
		cr_assert(d->min_size <= d->defaults.size && d->defaults.size <= d->max_size);
		cr_assert(d->has_size || d->min_size == d->max_size);
		cr_assert(d->title && d->aliases && d->numbers && d->run_defaults);
		for (int size = d->min_size; size <= d->max_size; size++) {
			game_params p = d->defaults;
			p.size = size;
			check_params(d, &p);
			if (d->has_komi) {
				p.komi = -0.5;
				check_params(d, &p);
			}
		}
		if (d->has_size) {
			game_params p = d->defaults;
			p.size = d->min_size - 1;
			cr_assert_eq(game_init(&g, &p), GAME_ERR_PARAMS);
			p.size = d->max_size + 1;
			cr_assert_eq(game_init(&g, &p), GAME_ERR_PARAMS);
		}
	}
	cr_assert_eq(n, GAME_KIND_COUNT);
}

Test(game_desc, lookups)
{
	cr_assert_eq(game_desc_by_name("go"), &game_go);
	cr_assert_eq(game_desc_by_name("GO"), &game_go);
	cr_assert_eq(game_desc_by_name("connect4"), &game_connect4);
	cr_assert_eq(game_desc_by_name("Connect4"), &game_connect4);
	cr_assert_eq(game_desc_by_name("c4"), &game_connect4);
	cr_assert_eq(game_desc_by_name("C4"), &game_connect4);
	cr_assert_null(game_desc_by_name("chess"));
	cr_assert_null(game_desc_by_name(""));
	cr_assert_null(game_desc_by_name("go "));
	cr_assert_eq(game_desc_by_kind(GAME_KIND_GO), &game_go);
	cr_assert_eq(game_desc_by_kind(GAME_KIND_CONNECT4), &game_connect4);
	cr_assert_null(game_desc_by_kind(-1));
	cr_assert_null(game_desc_by_kind(GAME_KIND_COUNT));
	game_kind k;
	cr_assert(game_kind_from_name("c4", &k) && k == GAME_KIND_CONNECT4);
	cr_assert(!game_kind_from_name("othello", &k));
	cr_assert_str_eq(game_kind_name((game_kind)7), "?");
}

/* The values self-play, matches and `sente run` had before descriptors. */
Test(game_desc, numbers_kept)
{
	game_params c4 = game_params_default(GAME_KIND_CONNECT4);
	game_numbers n = game_numbers_of(&c4);
	cr_assert(n.actions == 7 && n.width == 7 && n.height == 6);
	cr_assert(n.temperature_moves == 20 && n.resign_after == 8);
	cr_assert(n.temperature_end == 30 && n.temperature_floor == 0.3);
	cr_assert(n.selfplay_cpuct == 2.0 && n.selfplay_random_opening == 8);
	cr_assert(n.opening_moves == 2 && n.max_moves == 42 && n.typical_length == 22);
	game_run_defaults r = game_run_defaults_of(&c4);
	cr_assert(r.blocks == 4 && r.channels == 48 && r.visits == 200 && r.cheap_visits == 40);
	cr_assert(r.parallel_games == 32 && r.window == 150000 && r.positions_per_game == 4.5);
	cr_assert(!game_connect4.has_size && !game_connect4.has_komi && !game_connect4.has_pass);
	cr_assert(!strcmp(game_connect4.encoding, "c4") && game_connect4.value_outputs == 3);

	static const struct {
		int size, temperature, resign_after, opening, max_moves, blocks, channels;
		double per_game;
	} go[] = {
		{ 5, 5, 6, 2, 75, 4, 48, 6.25 },
		{ 7, 7, 12, 2, 147, 4, 48, 12.25 },
		{ 9, 9, 20, 4, 243, 4, 48, 20.25 },
		{ 13, 13, 42, 4, 507, 6, 64, 42.25 },
		{ 19, 19, 90, 4, 1083, 6, 64, 90.25 },
	};
	for (size_t i = 0; i < sizeof(go) / sizeof(go[0]); i++) {
		game_params p = { .kind = GAME_KIND_GO, .size = go[i].size, .komi = 7.5 };
		n = game_numbers_of(&p);
		cr_assert_eq(n.actions, go[i].size * go[i].size + 1);
		cr_assert_eq(n.temperature_moves, go[i].temperature, "size %d", go[i].size);
		cr_assert(n.temperature_end == n.temperature_moves && n.temperature_floor == 0);
		cr_assert(n.selfplay_cpuct == 0, "Go self-play searches with the search's cpuct");
		cr_assert_eq(n.selfplay_random_opening, 0, "size %d", go[i].size);
		cr_assert_eq(n.resign_after, go[i].resign_after, "size %d", go[i].size);
		cr_assert_eq(n.opening_moves, go[i].opening, "size %d", go[i].size);
		cr_assert_eq(n.max_moves, go[i].max_moves, "size %d", go[i].size);
		r = game_run_defaults_of(&p);
		cr_assert(r.blocks == go[i].blocks && r.channels == go[i].channels, "size %d", go[i].size);
		cr_assert(r.visits == 100 && r.cheap_visits == 25 && r.parallel_games == 64 &&
			  r.window == 100000);
		cr_assert_eq(r.positions_per_game, go[i].per_game);
	}
	cr_assert(game_go.has_size && game_go.has_komi && game_go.has_pass && game_go.has_go_board);
	cr_assert(!strcmp(game_go.encoding, "lz18") && !strcmp(game_go.net_encoding, "go_native"));
}
