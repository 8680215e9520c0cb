/* batch.c: minibatches for the trainer, and the one place that turns a
 * recorded position (moves replayed into a game, sparse visits, result)
 * into input planes and targets. */
#include "train/trainer.h"

#include <math.h>
#include <stdbool.h>
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
	b->frame_w = a->board_w;
	b->frame_h = a->board_h;
	b->planes = calloc((size_t)cap * b->in_size, sizeof(float));
	b->policy = calloc((size_t)cap * b->n_actions, sizeof(float));
	b->value = calloc((size_t)cap, sizeof(float));
	if (wdl)
		b->wdl = calloc((size_t)cap * 3, sizeof(float));
	if (a->opp_policy)
		b->opp = calloc((size_t)cap * b->n_actions, sizeof(float));
	b->n_points = a->board_w * a->board_h;
	if (a->ownership) {
		b->own = calloc((size_t)cap * b->n_points, sizeof(float));
		b->own_w = calloc((size_t)cap, sizeof(float));
	}
	if (a->score) {
		b->score = calloc((size_t)cap, sizeof(float));
		b->score_w = calloc((size_t)cap, sizeof(float));
	}
	if (!b->planes || !b->policy || !b->value || (wdl && !b->wdl) ||
	    (a->opp_policy && !b->opp) || (a->ownership && (!b->own || !b->own_w)) ||
	    (a->score && (!b->score || !b->score_w))) {
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
	free(b->opp);
	free(b->own);
	free(b->own_w);
	free(b->score);
	free(b->score_w);
	free(b);
}

/* The sum of n counts, or -1 when a move is outside the game's na
 * actions. */
static int64_t count_total(const int16_t *moves, const uint16_t *counts, int n, int na)
{
	int64_t total = 0;
	for (int i = 0; i < n; i++) {
		if (moves[i] < 0 || moves[i] >= na)
			return -1;
		total += counts[i];
	}
	return total;
}

/* Where b's net has action a of g under symmetry sym: the planes of the
 * transformed position put point a at game_symmetry_move(g, sym, a), and
 * the frame puts that where nn_frame_action says. */
static int frame_action(const game *g, int sym, int a, const train_batch *b)
{
	return nn_frame_action(g, game_symmetry_move(g, sym, a), b->frame_w, b->frame_h);
}

/* Row `row` (b's n_actions) set to the counts normalised by total, each
 * move where symmetry sym of g and the frame take it. */
static void put_distribution(const game *g, int sym, const int16_t *moves, const uint16_t *counts,
			     int n, int64_t total, float *row, const train_batch *b)
{
	memset(row, 0, sizeof(float) * (size_t)b->n_actions);
	for (int i = 0; total > 0 && i < n; i++)
		row[frame_action(g, sym, moves[i], b)] += (float)((double)counts[i] / total);
}

/* True when g's board fits b's frame (a board of several sizes' net). */
static bool fits(const game *g, const train_batch *b)
{
	return game_width(g) <= b->frame_w && game_height(g) <= b->frame_h;
}

int train_batch_from_position(const game *g, nn_encoding enc, int sym, const int16_t *visit_moves,
			      const uint16_t *visit_counts, int n_visits, float value_target,
			      train_batch *b, int slot)
{
	int na = game_num_actions(g);
	int in_size = nn_encoding_planes(enc) * b->frame_w * b->frame_h;
	if (slot < 0 || slot >= b->cap || !fits(g, b) || in_size != b->in_size || sym < 0 ||
	    sym >= game_num_symmetries(g) || nn_encoding_game(enc) != g->params.kind ||
	    (na != b->n_actions && game_width(g) == b->frame_w))
		return -1;
	int64_t total = count_total(visit_moves, visit_counts, n_visits, na);
	if (total <= 0)
		return -1;
	if (nn_encode_frame(g, enc, sym, b->frame_w, b->frame_h,
			    b->planes + (size_t)slot * b->in_size) < 0)
		return -1;
	put_distribution(g, sym, visit_moves, visit_counts, n_visits, total,
			 b->policy + (size_t)slot * b->n_actions, b);
	b->value[slot] = value_target;
	if (b->wdl) {
		float *w = b->wdl + 3 * (size_t)slot, z = value_target;
		w[0] = z > 0 ? z : 0.0f;
		w[2] = z < 0 ? -z : 0.0f;
		w[1] = 1.0f - (z < 0 ? -z : z);
	}
	return 0;
}

int train_batch_opp_target(const game *g, int sym, const int16_t *moves, const uint16_t *counts,
			   int n, train_batch *b, int slot)
{
	int na = game_num_actions(g);
	if (!b->opp || slot < 0 || slot >= b->cap || !fits(g, b) || n < 0 || sym < 0 ||
	    sym >= game_num_symmetries(g))
		return -1;
	int64_t total = count_total(moves, counts, n, na);
	if (total < 0)
		return -1;
	/* No reply (total 0): the row stays 0, which the loss skips. */
	put_distribution(g, sym, moves, counts, n, total, b->opp + (size_t)slot * b->n_actions, b);
	return 0;
}

int train_batch_own_target(const game *g, int sym, const float *owner, train_batch *b, int slot)
{
	int np = game_width(g) * game_height(g);
	if (!b->own || slot < 0 || slot >= b->cap || !fits(g, b) || sym < 0 ||
	    sym >= game_num_symmetries(g))
		return -1;
	/* Points outside a smaller board keep target 0. */
	float *row = b->own + (size_t)slot * b->n_points;
	memset(row, 0, sizeof(float) * (size_t)b->n_points);
	b->own_w[slot] = owner ? 1.0f : 0.0f;
	if (!owner)
		return 0;
	float side = game_to_move(g) == GAME_BLACK ? 1.0f : -1.0f;
	for (int a = 0; a < np; a++)
		row[frame_action(g, sym, a, b)] = side * owner[a];
	return 0;
}

int train_batch_score_target(const game *g, double score, train_batch *b, int slot)
{
	if (!b->score || slot < 0 || slot >= b->cap)
		return -1;
	/* Over the frame's points, as the evaluator scales the head's answer
	 * back (the board's own points for a net of one size). */
	int np = b->n_points;
	b->score_w[slot] = isnan(score) ? 0.0f : 1.0f;
	b->score[slot] = isnan(score) ? 0.0f
			 : (float)((game_to_move(g) == GAME_BLACK ? score : -score) / np);
	return 0;
}
