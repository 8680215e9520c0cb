/* reference.c: the forward pass in plain loops and double precision. It is
 * the yardstick the fast backends are tested against, so it is written to
 * be obviously right, not fast; it allocates freely. */
#include "nn/net.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out[c_out][h][w] = conv(in[c_in][h][w]) + bias, zero padding, then BN
 * unless the net is folded. */
static void ref_conv(const nn_net *net, const nn_conv *c, int h, int w, const double *in,
		     double *out)
{
	int pad = c->k / 2;
	for (int o = 0; o < c->c_out; o++) {
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				double s = c->b[o];
				for (int i = 0; i < c->c_in; i++)
					for (int ky = 0; ky < c->k; ky++) {
						int yy = y + ky - pad;
						if (yy < 0 || yy >= h)
							continue;
						for (int kx = 0; kx < c->k; kx++) {
							int xx = x + kx - pad;
							if (xx < 0 || xx >= w)
								continue;
							s += (double)c->w[((o * c->c_in + i) * c->k + ky) * c->k + kx] *
							     in[(i * h + yy) * w + xx];
						}
					}
				if (!net->bn_folded)
					s = c->bn_gamma[o] * (s - c->bn_mean[o]) /
						    sqrt((double)c->bn_var[o] + NN_BN_EPS) +
					    c->bn_beta[o];
				out[(o * h + y) * w + x] = s;
			}
	}
}

static void ref_relu(double *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (x[i] < 0)
			x[i] = 0;
}

static void ref_fc(const nn_fc *f, const double *in, double *out)
{
	for (int o = 0; o < f->n_out; o++) {
		double s = f->b[o];
		for (int i = 0; i < f->n_in; i++)
			s += (double)f->w[(size_t)o * f->n_in + i] * in[i];
		out[o] = s;
	}
}

/* Squeeze-excitation on x[c][hw] (see net.h); the means weighted by pw
 * (nn_board_pool_weights) for a net with masked pooling, else plain. */
static void ref_se(const nn_block *b, int c, int hw, const float *pw, double *x)
{
	double *pool = calloc((size_t)c, sizeof(double));
	double *hid = calloc((size_t)b->se1.n_out, sizeof(double));
	double *z = calloc((size_t)2 * c, sizeof(double));
	assert(pool && hid && z);
	for (int i = 0; i < c; i++) {
		for (int j = 0; j < hw; j++)
			pool[i] += x[i * hw + j] * (pw ? (double)pw[j] : 1.0 / hw);
	}
	ref_fc(&b->se1, pool, hid);
	ref_relu(hid, (size_t)b->se1.n_out);
	ref_fc(&b->se2, hid, z);
	for (int i = 0; i < c; i++) {
		double g = 1.0 / (1.0 + exp(-z[i]));
		for (int j = 0; j < hw; j++)
			x[i * hw + j] = g * x[i * hw + j] + z[c + i];
	}
	free(pool);
	free(hid);
	free(z);
}

void nn_reference_forward(const nn_net *net, int batch, const float *planes,
			  float *policy_logits, float *value, float *wdl)
{
	nn_reference_forward_heads(net, batch, planes, policy_logits, value, wdl, NULL, NULL);
}

void nn_reference_forward_heads(const nn_net *net, int batch, const float *planes,
				float *policy_logits, float *value, float *wdl, float *ownership,
				float *score)
{
	const nn_arch *a = &net->arch;
	int h = a->board_h, w = a->board_w, hw = h * w, c = a->channels;
	size_t in_n = (size_t)a->in_planes * hw;
	int wide = c;
	if (a->in_planes > wide)
		wide = a->in_planes;
	if (a->policy_channels > wide)
		wide = a->policy_channels;
	if (a->value_channels > wide)
		wide = a->value_channels;
	double *x = malloc(sizeof(double) * (size_t)wide * hw);
	double *t = malloc(sizeof(double) * (size_t)wide * hw);
	double *u = malloc(sizeof(double) * (size_t)wide * hw);
	double *hid = malloc(sizeof(double) * (size_t)a->value_hidden);
	double *out = malloc(sizeof(double) * (size_t)(a->policy_outputs + 3));
	float *pw = a->masked_pool ? malloc(sizeof(float) * (size_t)hw) : NULL;
	assert(x && t && u && hid && out && (pw || !a->masked_pool));
	for (int n = 0; n < batch; n++) {
		for (size_t i = 0; i < in_n; i++)
			t[i] = planes[(size_t)n * in_n + i];
		if (pw)
			nn_board_pool_weights(a->encoding, planes + (size_t)n * in_n, hw, pw);
		ref_conv(net, &net->input, h, w, t, x);
		ref_relu(x, (size_t)c * hw);
		for (int bi = 0; bi < a->blocks; bi++) {
			const nn_block *b = &net->block[bi];
			ref_conv(net, &b->conv1, h, w, x, t);
			ref_relu(t, (size_t)c * hw);
			ref_conv(net, &b->conv2, h, w, t, u);
			if (b->se1.w)
				ref_se(b, c, hw, pw, u);
			for (size_t i = 0; i < (size_t)c * hw; i++)
				x[i] += u[i];
			ref_relu(x, (size_t)c * hw);
		}
		/* Policy head. */
		ref_conv(net, &net->policy_conv, h, w, x, t);
		ref_relu(t, (size_t)a->policy_channels * hw);
		ref_fc(&net->policy_fc, t, out);
		for (int i = 0; i < a->policy_outputs; i++)
			policy_logits[(size_t)n * a->policy_outputs + i] = (float)out[i];
		/* Value head. */
		ref_conv(net, &net->value_conv, h, w, x, t);
		ref_relu(t, (size_t)a->value_channels * hw);
		/* Ownership: tanh(b + w . v) at every point, v the value conv's
		 * channels there. */
		if (ownership && net->own_fc.w)
			for (int p = 0; p < hw; p++) {
				double z = net->own_fc.b[0];
				for (int ch = 0; ch < a->value_channels; ch++)
					z += (double)net->own_fc.w[ch] * t[(size_t)ch * hw + p];
				ownership[(size_t)n * hw + p] = (float)tanh(z);
			}
		ref_fc(&net->value_fc1, t, hid);
		ref_relu(hid, (size_t)a->value_hidden);
		if (score && net->score_fc.w) {
			ref_fc(&net->score_fc, hid, out);
			score[n] = (float)out[0];
		}
		ref_fc(&net->value_fc2, hid, out);
		if (a->value_outputs == 1) {
			value[n] = (float)tanh(out[0]);
			continue;
		}
		double m = fmax(out[0], fmax(out[1], out[2])), e[3], sum = 0;
		for (int i = 0; i < 3; i++)
			sum += e[i] = exp(out[i] - m);
		value[n] = (float)((e[0] - e[2]) / sum);
		if (wdl)
			for (int i = 0; i < 3; i++)
				wdl[n * 3 + i] = (float)(e[i] / sum);
	}
	free(x);
	free(t);
	free(u);
	free(hid);
	free(out);
	free(pw);
}
