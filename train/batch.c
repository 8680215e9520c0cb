/* batch.c: minibatches for the trainer, and the one place that turns a
 * recorded position (moves replayed into a game, sparse visits, result)
 * into input planes and targets. */
#include "train/trainer.h"

#include <stdlib.h>
#include <string.h>

train_batch *train_batch_new(const nn_arch *a, int cap, int wdl)
{
	if (cap < 1)
		return NULL;
	train_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->cap = cap;
	b->n = cap;
	b->in_size = a->in_planes * a->board_w * a->board_h;
	b->n_actions = a->policy_outputs;
	b->planes = calloc((size_t)cap * b->in_size, sizeof(float));
	b->policy = calloc((size_t)cap * b->n_actions, sizeof(float));
	b->value = calloc((size_t)cap, sizeof(float));
	if (wdl)
		b->wdl = calloc((size_t)cap * 3, sizeof(float));
	if (!b->planes || !b->policy || !b->value || (wdl && !b->wdl)) {
		train_batch_free(b);
		return NULL;
	}
	return b;
}

void train_batch_free(train_batch *b)
{
	if (!b)
		return;
	free(b->planes);
	free(b->policy);
	free(b->value);
	free(b->wdl);
	free(b);
}

int train_batch_from_position(const game *g, nn_encoding enc, int sym, const int16_t *visit_moves,
			      const uint16_t *visit_counts, int n_visits, float value_target,
			      train_batch *b, int slot)
{
	int na = game_num_actions(g);
	int in_size = nn_encoding_planes(enc) * game_width(g) * game_height(g);
	if (slot < 0 || slot >= b->cap || na != b->n_actions || in_size != b->in_size ||
	    sym < 0 || sym >= game_num_symmetries(g) || nn_encoding_game(enc) != g->params.kind)
		return -1;
	uint64_t total = 0;
	for (int i = 0; i < n_visits; i++) {
		if (visit_moves[i] < 0 || visit_moves[i] >= na)
			return -1;
		total += visit_counts[i];
	}
	if (total == 0)
		return -1;
	if (nn_encode_sym(g, enc, sym, b->planes + (size_t)slot * b->in_size) < 0)
		return -1;
	float *p = b->policy + (size_t)slot * na;
	memset(p, 0, sizeof(float) * (size_t)na);
	/* The planes of the transformed position put point a at
	 * game_symmetry_move(g, sym, a): the target goes along. */
	for (int i = 0; i < n_visits; i++)
		p[game_symmetry_move(g, sym, visit_moves[i])] += (float)((double)visit_counts[i] / total);
	b->value[slot] = value_target;
	if (b->wdl) {
		float *w = b->wdl + 3 * (size_t)slot, z = value_target;
		w[0] = z > 0 ? z : 0.0f;
		w[2] = z < 0 ? -z : 0.0f;
		w[1] = 1.0f - (z < 0 ? -z : z);
	}
	return 0;
}
