/* train_util.h: shared pieces of the trainer tests: tiny nets, random
 * batches, and a training-mode reference loss in double precision. */
#ifndef SENTE_TESTS_TRAIN_UTIL_H
#define SENTE_TESTS_TRAIN_UTIL_H

#include <stdbool.h>

#include "data/record.h"
#include "train/trainer.h"

/* A random net: Connect Four (WDL) or Go size x size (native, tanh). */
nn_net *tu_net(game_kind kind, int size, int blocks, int channels, uint64_t seed);
/* The same with the optional heads of `heads` (TU_OPP; TU_OWN and
 * TU_SCORE: Go only). */
enum { TU_OPP = NN_HEAD_OPP, TU_OWN = NN_HEAD_OWN, TU_SCORE = NN_HEAD_SCORE };
/* Not a head: with this bit every block is squeeze-excitation, its
 * bottleneck half the channels. */
enum { TU_SE = 1 << 8 };
/* tu_net_heads: a Go net of two board sizes (5x5 and its own, the frame)
 * with masked pooling; tu_batch then draws every other position on 5x5. */
enum { TU_MASK = 1 << 9 };
nn_net *tu_net_heads(game_kind kind, int size, int blocks, int channels, int heads, uint64_t seed);
/* A batch of n random positions (random legal play) with random targets:
 * one-hot policy on a legal move when onehot, else random distributions
 * over legal moves; value in {-1, 0, 1}; WDL targets derived when wdl;
 * for a net with the opponent-reply head, random reply distributions over
 * all actions but none (zeros) for position 1; for one with the ownership
 * head, -1, 0 or +1 per point but none (own_w 0) for position 2; for one
 * with the score head, a score in [-1, 1] but none for position 3. */
train_batch *tu_batch(const nn_net *net, int n, uint64_t seed, int onehot, int wdl);
/* Total loss of the net (weights from dat, laid out as net->data) on b
 * with BN in training mode, in double; parts into pol/val/l2 (may be NULL).
 * sgd: l2 is part of the total. A net with the opponent-reply head adds
 * its cross-entropy against b->opp, one with the ownership or score head
 * its loss, each at the default options' weight. */
double tu_ref_loss(const nn_net *net, const double *dat, const train_batch *b, double wd,
		   double value_weight, int sgd, double *pol, double *val, double *l2);
/* How far two runs' updates from the same start differ, as a fraction of
 * the first's size: |(a - start) - (b - start)| / |a - start| over n
 * weights (infinity when a did not move). Ranks that share a batch must
 * take one rank's update: their sums differ in the last bits, and now and
 * then an activation at zero, or a channel of a tiny random network whose
 * batch variance is near zero, falls the other way, which moves the update
 * by up to about 1% (the worst seen in 24 runs of the session test on an
 * AVX2 machine, where most differ by about 1e-6). A wrong reduction moves
 * all of it: a rank's data dropped (one rank at half the batch) differs by
 * 0.33-0.47, a sum for a mean (twice the learning rate) by 0.57-0.65. */
double tu_update_difference(const float *start, const float *a, const float *b, size_t n);
#define TU_SAME_UPDATE 0.1 /* the largest difference two ways of one step may have */
/* A Connect Four game of 7 searched moves, one visit count each: the
 * first player wins at ply 6 down column 1 + shift (columns 1 + shift and
 * 2 + shift alternate; shift 0..5). Root value of move i: tu_game_q(i)
 * when with_q, else unknown (NAN). */
void tu_column_game(game_record *r, int shift, bool with_q);
float tu_game_q(int i);
uint64_t tu_rng(uint64_t *s);
double tu_uniform(uint64_t *s, double lo, double hi);

#endif
