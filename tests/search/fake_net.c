/* fake_net.c: see fake_net.h. */
#include "tests/search/fake_net.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nn/encode.h"

static int fake_create(const nn_net *net, int max_batch, const nn_backend_options *opt, void **ctx,
		       char *err, size_t errlen)
{
	return -1; /* fakes are built by hand, never through create */
}

static void fake_destroy(void *ctx) {}
static void fake_describe(void *ctx, char *buf, size_t len) { snprintf(buf, len, "fake"); }

static void note_batch(fake_net *f, int batch)
{
	atomic_fetch_add(&f->calls, 1);
	atomic_fetch_add(&f->positions, batch);
	int m = atomic_load(&f->max_batch_seen);
	while (batch > m && !atomic_compare_exchange_weak(&f->max_batch_seen, &m, batch))
		;
	if (f->delay_us)
		usleep((useconds_t)f->delay_us);
}

static int c4_forward(void *ctx, int batch, const float *planes, float *logits, float *value,
		      float *wdl)
{
	fake_net *f = ctx;
	note_batch(f, batch);
	if (atomic_load(&f->fail))
		return -1;
	for (int b = 0; b < batch; b++) {
		const float *p = planes + (size_t)b * 3 * 42;
		float own = 0, opp = 0;
		for (int a = 0; a < 7; a++) {
			float o = 0, q = 0;
			for (int y = 0; y < 6; y++) {
				o += p[y * 7 + a];
				q += p[42 + y * 7 + a];
			}
			logits[b * 7 + a] = o + 10 * q;
			if (f->full_logit != 0 && o + q == 6)
				logits[b * 7 + a] = f->full_logit;
			own += o;
			opp += q;
		}
		value[b] = (own - opp) / 42;
	}
	return 0;
}

static int go_forward(void *ctx, int batch, const float *planes, float *logits, float *value,
		      float *wdl)
{
	fake_net *f = ctx;
	note_batch(f, batch);
	int hw = f->be.arch.board_w * f->be.arch.board_h;
	int outs = f->be.arch.policy_outputs;
	for (int b = 0; b < batch; b++) {
		const float *p = planes + (size_t)b * 18 * (size_t)hw;
		float own = 0, opp = 0;
		for (int i = 0; i < hw; i++) {
			own += p[i];
			opp += p[8 * hw + i];
		}
		for (int a = 0; a < outs; a++)
			logits[b * outs + a] = 0;
		value[b] = tanhf((own - opp) / 4);
	}
	return 0;
}

static const nn_backend_ops fake_c4_ops = { .name = "fake-c4", .create = fake_create,
					    .forward = c4_forward, .destroy = fake_destroy,
					    .describe = fake_describe };
static const nn_backend_ops fake_go_ops = { .name = "fake-go", .create = fake_create,
					    .forward = go_forward, .destroy = fake_destroy,
					    .describe = fake_describe };

void fake_c4_init(fake_net *f, int max_batch, int delay_us)
{
	memset(f, 0, sizeof(*f));
	f->be.ops = &fake_c4_ops;
	f->be.ctx = f;
	f->be.max_batch = max_batch;
	f->be.arch.game = GAME_KIND_CONNECT4;
	f->be.arch.board_w = 7;
	f->be.arch.board_h = 6;
	f->be.arch.encoding = NN_ENC_C4;
	f->be.arch.in_planes = 3;
	f->be.arch.policy_outputs = 7;
	f->be.arch.value_outputs = 1;
	f->delay_us = delay_us;
}

void fake_go_init(fake_net *f, int size, int max_batch, int delay_us)
{
	memset(f, 0, sizeof(*f));
	f->be.ops = &fake_go_ops;
	f->be.ctx = f;
	f->be.max_batch = max_batch;
	f->be.arch.game = GAME_KIND_GO;
	f->be.arch.board_w = size;
	f->be.arch.board_h = size;
	f->be.arch.encoding = NN_ENC_LZ18;
	f->be.arch.in_planes = 18;
	f->be.arch.policy_outputs = size * size + 1;
	f->be.arch.value_outputs = 1;
	f->delay_us = delay_us;
}

void fake_c4_expect(const game *g, float *logits, float *value)
{
	float own = 0, opp = 0;
	int me = game_to_move(g);
	for (int a = 0; a < 7; a++) {
		float o = 0, q = 0;
		for (int y = 0; y < 6; y++) {
			int c = game_cell(g, a, y);
			o += c == me;
			q += c == 1 - me;
		}
		logits[a] = o + 10 * q;
		own += o;
		opp += q;
	}
	*value = (own - opp) / 42;
}
