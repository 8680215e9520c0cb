/* train_util.c: see train_util.h. The reference is written to be plainly
 * right (plain loops, double, allocation as it likes), not fast. */
#include "tests/train/train_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/layers.h"

float tu_game_q(int i) { return 0.01f * (float)(i + 1) * (i % 2 ? -1 : 1); }

void tu_column_game(game_record *r, int shift, bool with_q)
{
	game_params p = game_params_default(GAME_KIND_CONNECT4);
	game g;
	game_init(&g, &p);
	record_init(r, &p);
	const int cols[] = { 0, 1, 0, 1, 0, 1, 0 };
	for (int i = 0; i < 7; i++) {
		int c = cols[i] + shift;
		record_visit v = { (int16_t)c, 10 };
		cr_assert_eq(record_add_move(r, c, true, with_q ? tu_game_q(i) : NAN, &v, 1), 0);
		cr_assert_eq(game_play(&g, c), GAME_OK);
	}
	cr_assert(game_is_over(&g));
	record_set_outcome(r, &g);
}

uint64_t tu_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

double tu_uniform(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(tu_rng(s) >> 11) * (1.0 / 9007199254740992.0);
}

nn_net *tu_net(game_kind kind, int size, int blocks, int channels, uint64_t seed)
{
	return tu_net_heads(kind, size, blocks, channels, 0, seed);
}

nn_net *tu_net_heads(game_kind kind, int size, int blocks, int channels, int heads, uint64_t seed)
{
	char err[256];
	game_params gp = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		gp.size = size;
	nn_arch a = nn_arch_default(&gp, blocks, channels);
	a.value_hidden = 16;
	if (heads & TU_SE)
		nn_arch_set_se(&a, channels / 2 > 0 ? channels / 2 : 1);
	nn_arch_set_heads(&a, heads & ~(TU_SE | TU_MASK));
	if (heads & TU_MASK) {
		a.sizes = 1u << 5 | 1u << size;
		a.masked_pool = 1;
	}
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	return net;
}

train_batch *tu_batch(const nn_net *net, int n, uint64_t seed, int onehot, int wdl)
{
	static game g; /* large: keep off the stack */
	const nn_arch *a = &net->arch;
	int moves[GAME_MAX_ACTIONS];
	int16_t vm[GAME_MAX_ACTIONS];
	uint16_t vc[GAME_MAX_ACTIONS];
	uint64_t s = seed * 2654435761u + 1;
	game_params gp = game_params_default(a->game);
	if (a->game == GAME_KIND_GO)
		gp.size = a->board_w;
	train_batch *b = train_batch_new(a, n, wdl);
	cr_assert(b);
	for (int i = 0; i < n; i++) {
		int k;
		/* A net of several sizes: every other position on the smallest. */
		if (a->sizes)
			gp.size = i % 2 ? a->board_w : __builtin_ctz(a->sizes);
		do {
			cr_assert_eq(game_init(&g, &gp), GAME_OK);
			int len = (int)(tu_rng(&s) % (a->game == GAME_KIND_GO ? 20 : 30));
			for (int m = 0; m < len; m++) {
				k = game_legal_moves(&g, moves);
				if (k == 0)
					break;
				int mv = moves[tu_rng(&s) % (uint64_t)k];
				if (mv == game_pass_move(&g) && k > 1)
					mv = moves[0];
				cr_assert_eq(game_play(&g, mv), GAME_OK);
			}
			k = game_legal_moves(&g, moves);
		} while (k == 0);
		int nv = 0;
		if (onehot) {
			vm[0] = (int16_t)moves[tu_rng(&s) % (uint64_t)k];
			vc[0] = 1;
			nv = 1;
		} else {
			for (int j = 0; j < k; j++) {
				vm[nv] = (int16_t)moves[j];
				vc[nv++] = (uint16_t)(tu_rng(&s) % 100 + 1);
			}
		}
		float z = (float)((int)(tu_rng(&s) % 3) - 1);
		int sym = (int)(tu_rng(&s) % (uint64_t)game_num_symmetries(&g));
		cr_assert_eq(train_batch_from_position(&g, a->encoding, sym, vm, vc, nv, z, b, i), 0);
		/* Opponent-reply targets: random distributions over all
		 * actions, none (a row of zeros) for the second position. */
		if (b->opp && i != 1) {
			float *row = b->opp + (size_t)i * a->policy_outputs;
			double tot = 0;
			for (int j = 0; j < a->policy_outputs; j++)
				tot += row[j] = (float)tu_uniform(&s, 0, 1);
			for (int j = 0; j < a->policy_outputs; j++)
				row[j] = (float)(row[j] / tot);
		}
		/* Score: a fraction of the points, none for position 3. */
		if (b->score) {
			b->score_w[i] = i == 3 ? 0.0f : 1.0f;
			b->score[i] = i == 3 ? 0.0f : (float)tu_uniform(&s, -1, 1);
		}
		/* Ownership: -1, 0 or +1 per point, none for position 2. */
		if (b->own) {
			float *row = b->own + (size_t)i * b->n_points;
			b->own_w[i] = i == 2 ? 0.0f : 1.0f;
			for (int j = 0; j < b->n_points; j++)
				row[j] = i == 2 ? 0.0f : (float)((int)(tu_rng(&s) % 3) - 1);
		}
	}
	return b;
}

/* Mean cross-entropy of softmax(logits) against targets, [N][na] each. */
static double ref_policy_ce(const double *logits, const float *target, int N, int na)
{
	double total = 0;
	for (int n = 0; n < N; n++) {
		const double *z = logits + (size_t)n * na;
		double m = -1e300, s = 0;
		for (int i = 0; i < na; i++)
			m = fmax(m, z[i]);
		for (int i = 0; i < na; i++)
			s += exp(z[i] - m);
		for (int i = 0; i < na; i++)
			total -= target[(size_t)n * na + i] * (z[i] - m - log(s));
	}
	return total / N;
}

/* conv (+bias) then training-mode BN over the batch; in [N][cin][hw],
 * out [N][cout][hw]. */
static void ref_conv_bn(const nn_net *net, const double *dat, const nn_conv *cv, int N, int H,
			int W, const double *in, double *out)
{
	size_t ow = cv->w - net->data, ob = cv->b - net->data, og = cv->bn_gamma - net->data,
	       obt = cv->bn_beta - net->data;
	int k = cv->k, pad = k / 2, hw = H * W;
	for (int n = 0; n < N; n++)
		for (int o = 0; o < cv->c_out; o++)
			for (int y = 0; y < H; y++)
				for (int x = 0; x < W; x++) {
					double s = dat[ob + o];
					for (int i = 0; i < cv->c_in; i++)
						for (int ky = 0; ky < k; ky++) {
							int yy = y + ky - pad;
							if (yy < 0 || yy >= H)
								continue;
							for (int kx = 0; kx < k; kx++) {
								int xx = x + kx - pad;
								if (xx < 0 || xx >= W)
									continue;
								s += dat[ow + ((size_t)(o * cv->c_in + i) * k + ky) * k + kx] *
								     in[((size_t)n * cv->c_in + i) * hw + yy * W + xx];
							}
						}
					out[((size_t)n * cv->c_out + o) * hw + y * W + x] = s;
				}
	for (int o = 0; o < cv->c_out; o++) {
		double m = 0, v = 0;
		for (int n = 0; n < N; n++)
			for (int p = 0; p < hw; p++)
				m += out[((size_t)n * cv->c_out + o) * hw + p];
		m /= (double)N * hw;
		for (int n = 0; n < N; n++)
			for (int p = 0; p < hw; p++) {
				double d = out[((size_t)n * cv->c_out + o) * hw + p] - m;
				v += d * d;
			}
		v /= (double)N * hw;
		double sc = dat[og + o] / sqrt(v + NN_BN_EPS);
		for (int n = 0; n < N; n++)
			for (int p = 0; p < hw; p++) {
				double *e = &out[((size_t)n * cv->c_out + o) * hw + p];
				*e = (*e - m) * sc + dat[obt + o];
			}
	}
}

static void ref_relu(double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] < 0)
			x[i] = 0;
}

static void ref_fc(const nn_net *net, const double *dat, const nn_fc *f, int N, const double *in,
		   double *out)
{
	size_t ow = f->w - net->data, ob = f->b - net->data;
	for (int n = 0; n < N; n++)
		for (int o = 0; o < f->n_out; o++) {
			double s = dat[ob + o];
			for (int i = 0; i < f->n_in; i++)
				s += dat[ow + (size_t)o * f->n_in + i] * in[(size_t)n * f->n_in + i];
			out[(size_t)n * f->n_out + o] = s;
		}
}

/* Squeeze-excitation (net.h) on u [N][C][hw] in place; with masked
 * pooling the means are over each position's board (its planes' on-board
 * marks), else over every point. */
static void ref_se(const nn_net *net, const double *dat, const nn_block *blk, int N, int C,
		   int hw, const float *planes, double *u)
{
	int S = blk->se1.n_out;
	double *pool = malloc(sizeof(double) * (size_t)N * C),
	       *hid = malloc(sizeof(double) * (size_t)N * S),
	       *z = malloc(sizeof(double) * (size_t)N * 2 * C);
	cr_assert(pool && hid && z);
	for (int n = 0; n < N; n++) {
		const float *pl = planes + (size_t)n * net->arch.in_planes * hw;
		int on = 0;
		for (int p = 0; p < hw; p++)
			on += !net->arch.masked_pool || pl[(size_t)26 * hw + p] == 1.0f;
		for (int c = 0; c < C; c++) {
			double s = 0;
			for (int p = 0; p < hw; p++)
				if (!net->arch.masked_pool || pl[(size_t)26 * hw + p] == 1.0f)
					s += u[((size_t)n * C + c) * hw + p];
			pool[(size_t)n * C + c] = s / on;
		}
	}
	ref_fc(net, dat, &blk->se1, N, pool, hid);
	ref_relu(hid, (size_t)N * S);
	ref_fc(net, dat, &blk->se2, N, hid, z);
	for (int n = 0; n < N; n++)
		for (int c = 0; c < C; c++) {
			double g = 1 / (1 + exp(-z[(size_t)n * 2 * C + c])), bias = z[(size_t)n * 2 * C + C + c];
			for (int p = 0; p < hw; p++) {
				double *v = &u[((size_t)n * C + c) * hw + p];
				*v = g * *v + bias;
			}
		}
	free(pool);
	free(hid);
	free(z);
}

double tu_ref_loss(const nn_net *net, const double *dat, const train_batch *b, double wd,
		   double value_weight, int sgd, double *pol, double *val, double *l2out)
{
	const nn_arch *a = &net->arch;
	int N = b->n, hw = a->board_w * a->board_h, H = a->board_h, W = a->board_w, C = a->channels;
	size_t big = (size_t)N * hw * (C > a->in_planes ? C : a->in_planes);
	double *x = malloc(sizeof(double) * big), *t = malloc(sizeof(double) * big),
	       *u = malloc(sizeof(double) * big), *hid = malloc(sizeof(double) * N * a->value_hidden),
	       *out = malloc(sizeof(double) * N * (a->policy_outputs + 3));
	cr_assert(x && t && u && hid && out);
	for (size_t i = 0; i < (size_t)N * b->in_size; i++)
		t[i] = b->planes[i];
	ref_conv_bn(net, dat, &net->input, N, H, W, t, x);
	size_t tower = (size_t)N * C * hw;
	ref_relu(x, tower);
	for (int bi = 0; bi < a->blocks; bi++) {
		ref_conv_bn(net, dat, &net->block[bi].conv1, N, H, W, x, t);
		ref_relu(t, tower);
		ref_conv_bn(net, dat, &net->block[bi].conv2, N, H, W, t, u);
		if (net->block[bi].se1.w)
			ref_se(net, dat, &net->block[bi], N, C, hw, b->planes, u);
		for (size_t i = 0; i < tower; i++)
			x[i] += u[i];
		ref_relu(x, tower);
	}
	/* Policy. */
	ref_conv_bn(net, dat, &net->policy_conv, N, H, W, x, t);
	ref_relu(t, (size_t)N * a->policy_channels * hw);
	ref_fc(net, dat, &net->policy_fc, N, t, out);
	double pl = ref_policy_ce(out, b->policy, N, a->policy_outputs), ol = 0;
	if (net->opp_fc.w) {
		ref_fc(net, dat, &net->opp_fc, N, t, out);
		ol = ref_policy_ce(out, b->opp, N, a->policy_outputs);
	}
	double wl = 0;
	/* Value. */
	ref_conv_bn(net, dat, &net->value_conv, N, H, W, x, t);
	ref_relu(t, (size_t)N * a->value_channels * hw);
	if (net->own_fc.w) {
		/* Ownership: per point tanh(b + w . v), v the value conv's
		 * output; -[a log q + (1 - a) log(1 - q)], q = (1 + tanh) / 2,
		 * a = (1 + target) / 2, mean over points and positions. */
		size_t ow = net->own_fc.w - net->data, ob = net->own_fc.b - net->data;
		for (int n = 0; n < N; n++)
			for (int p = 0; p < hw; p++) {
				double z = dat[ob];
				for (int c = 0; c < a->value_channels; c++)
					z += dat[ow + c] * t[((size_t)n * a->value_channels + c) * hw + p];
				double q = (1 + tanh(z)) / 2, tg = (1 + b->own[(size_t)n * hw + p]) / 2;
				wl -= b->own_w[n] * (tg * log(q) + (1 - tg) * log(1 - q));
			}
		wl /= (double)N * hw;
	}
	ref_fc(net, dat, &net->value_fc1, N, t, hid);
	ref_relu(hid, (size_t)N * a->value_hidden);
	double sl = 0;
	if (net->score_fc.w) {
		size_t sw = net->score_fc.w - net->data, sb = net->score_fc.b - net->data;
		for (int n = 0; n < N; n++) {
			double y = dat[sb];
			for (int j = 0; j < a->value_hidden; j++)
				y += dat[sw + j] * hid[(size_t)n * a->value_hidden + j];
			sl += b->score_w[n] * (y - b->score[n]) * (y - b->score[n]);
		}
		sl /= N;
	}
	ref_fc(net, dat, &net->value_fc2, N, hid, out);
	double vl = 0;
	for (int n = 0; n < N; n++) {
		if (a->value_outputs == 1) {
			double e = tanh(out[n]) - b->value[n];
			vl += e * e;
			continue;
		}
		const double *z = out + 3 * n;
		double tg[3], zv = b->value[n];
		if (b->wdl)
			for (int k = 0; k < 3; k++)
				tg[k] = b->wdl[3 * n + k];
		else {
			tg[0] = fmax(zv, 0);
			tg[2] = fmax(-zv, 0);
			tg[1] = 1 - fabs(zv);
		}
		double m = fmax(z[0], fmax(z[1], z[2])), s = 0;
		for (int k = 0; k < 3; k++)
			s += exp(z[k] - m);
		for (int k = 0; k < 3; k++)
			vl -= tg[k] * (z[k] - m - log(s));
	}
	vl /= N;
	/* L2 over conv and FC weights. */
	double l2 = 0;
	const nn_conv *convs[NN_MAX_BLOCKS * 2 + 3];
	int nc = 0;
	convs[nc++] = &net->input;
	for (int bi = 0; bi < a->blocks; bi++) {
		convs[nc++] = &net->block[bi].conv1;
		convs[nc++] = &net->block[bi].conv2;
	}
	convs[nc++] = &net->policy_conv;
	convs[nc++] = &net->value_conv;
	for (int i = 0; i < nc; i++) {
		size_t o = convs[i]->w - net->data;
		size_t cnt = (size_t)convs[i]->c_out * convs[i]->c_in * convs[i]->k * convs[i]->k;
		for (size_t j = 0; j < cnt; j++)
			l2 += dat[o + j] * dat[o + j];
	}
	const nn_fc *fcs[6 + 2 * NN_MAX_BLOCKS] = { &net->policy_fc, &net->value_fc1,
						    &net->value_fc2, &net->opp_fc, &net->own_fc,
						    &net->score_fc };
	int nf = 6;
	for (int bi = 0; bi < a->blocks; bi++) {
		fcs[nf++] = &net->block[bi].se1;
		fcs[nf++] = &net->block[bi].se2;
	}
	for (int i = 0; i < nf; i++) {
		if (!fcs[i]->w)
			continue;
		size_t o = fcs[i]->w - net->data, cnt = (size_t)fcs[i]->n_in * fcs[i]->n_out;
		for (size_t j = 0; j < cnt; j++)
			l2 += dat[o + j] * dat[o + j];
	}
	l2 *= wd;
	free(x);
	free(t);
	free(u);
	free(hid);
	free(out);
	if (pol)
		*pol = pl;
	if (val)
		*val = vl;
	if (l2out)
		*l2out = l2;
	train_options d = train_options_default();
	return pl + value_weight * vl + d.opp_weight * ol + d.own_weight * wl + d.score_weight * sl +
	       (sgd ? l2 : 0);
}

double tu_update_difference(const float *start, const float *a, const float *b, size_t n)
{
	double diff = 0, size = 0;
	for (size_t i = 0; i < n; i++) {
		double da = (double)a[i] - start[i], db = (double)b[i] - start[i];
		diff += (da - db) * (da - db);
		size += da * da;
	}
	return size > 0 ? sqrt(diff / size) : INFINITY;
}
