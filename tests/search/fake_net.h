/* fake_net.h: test backends that fill nn/backend.h's table without a
 * network, so search and the evaluation queue can be tested exactly.
 *
 * fake_c4: Connect Four (NN_ENC_C4). Logit of column a = 1 * own discs in
 *   column a + 10 * opponent discs in column a; value = (own - opp) / 42.
 *   Each answer is a function of its own input, so a waiter that got
 *   another position's answer is caught.
 * fake_go: Go (NN_ENC_LZ18): uniform logits; value = tanh((own - opp) / 4)
 *   over the stones now: a material count that makes captures visible.
 * Both sleep `delay_us` per forward call so batches have time to form, and
 * record the batch sizes they saw.
 */
#ifndef SENTE_TESTS_FAKE_NET_H
#define SENTE_TESTS_FAKE_NET_H

#include <stdatomic.h>

#include "nn/backend.h"

typedef struct fake_net {
	nn_backend be;           /* what the evaluator takes */
	int delay_us;            /* sleep per forward */
	atomic_int calls;        /* forward calls */
	atomic_int positions;    /* positions evaluated */
	atomic_int max_batch_seen;
	atomic_int fail;         /* 1: forward returns -1 */
	float full_logit;        /* fake_c4: nonzero, the logit of a full column */
} fake_net;

void fake_c4_init(fake_net *f, int max_batch, int delay_us);
void fake_go_init(fake_net *f, int size, int max_batch, int delay_us);
/* What fake_c4 answers for g (policy logits for the 7 columns, value). */
void fake_c4_expect(const game *g, float *logits, float *value);

#endif
