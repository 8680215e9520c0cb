/* net.c: architecture checks, the weight block and its layout, random
 * initialisation, BN folding. Files are in model_file.c. */
#include "nn/net.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "engine/rng.h"

nn_arch nn_arch_lz(int size, int blocks, int channels)
{
	nn_arch a;
	memset(&a, 0, sizeof(a));
	a.encoding = NN_ENC_LZ18;
	a.game = nn_encoding_game(a.encoding);
	a.board_w = a.board_h = size;
	a.in_planes = nn_encoding_planes(a.encoding);
	a.blocks = blocks;
	a.channels = channels;
	a.se_channels = 0;
	a.policy_channels = 2;
	a.policy_outputs = size * size + 1;
	a.value_channels = 1;
	a.value_hidden = 256;
	a.value_outputs = 1;
	return a;
}

nn_arch nn_arch_default(const game_params *p, int blocks, int channels)
{
	const game_desc *d = game_desc_from_params(p);
	game_numbers n = game_numbers_of(p);
	nn_arch a;
	memset(&a, 0, sizeof(a));
	a.game = p->kind;
	a.board_w = n.width;
	a.board_h = n.height;
	a.encoding = nn_encoding_for_new_net(p);
	a.in_planes = nn_encoding_planes(a.encoding);
	a.blocks = blocks;
	a.channels = channels;
	a.policy_channels = 2;
	a.policy_outputs = n.actions;
	a.value_channels = 2;
	a.value_hidden = d->value_hidden;
	a.value_outputs = d->value_outputs;
	return a;
}

game_params nn_arch_params(const nn_arch *a)
{
	const game_desc *d = game_desc_by_kind(a->game);
	assert(d);
	game_params p = d->defaults;
	if (d->has_size)
		p.size = a->board_w;
	return p;
}

bool nn_arch_plays(const nn_arch *a, const game_params *p)
{
	if (p->kind != a->game)
		return false;
	const game_desc *d = game_desc_by_kind(a->game);
	if (!d || !d->has_size)
		return true;
	return a->sizes ? p->size >= 0 && p->size < 32 && (a->sizes >> p->size & 1u)
			: p->size == a->board_w;
}

int nn_arch_size_list(const nn_arch *a, int *out, int max)
{
	int n = 0;
	for (int s = 0; s < 32 && n < max; s++)
		if (a->sizes >> s & 1u)
			out[n++] = s;
	return n;
}

const char *nn_arch_sizes_text(const nn_arch *a, char *buf, size_t len)
{
	int sizes[32], n = nn_arch_size_list(a, sizes, 32);
	size_t at = 0;
	snprintf(buf, len, "%dx%d", a->board_w, a->board_h); /* a net of one size */
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%dx%d", i ? ", " : "", sizes[i], sizes[i]);
	return buf;
}

#define ARCH_FAIL(...)                                  \
	do {                                            \
		snprintf(err, errlen, __VA_ARGS__);     \
		return -1;                              \
	} while (0)

int nn_arch_check(const nn_arch *a, char *err, size_t errlen)
{
	const game_desc *d = game_desc_by_kind(a->game);
	if (!d)
		ARCH_FAIL("unknown game kind %d", (int)a->game);
	if ((unsigned)a->encoding >= NN_ENC_COUNT)
		ARCH_FAIL("unknown input encoding %d", (int)a->encoding);
	if (nn_encoding_game(a->encoding) != a->game)
		ARCH_FAIL("encoding %s is not for %s", nn_encoding_name(a->encoding),
			  game_kind_name(a->game));
	if (a->in_planes != nn_encoding_planes(a->encoding))
		ARCH_FAIL("encoding %s has %d planes, not %d", nn_encoding_name(a->encoding),
			  nn_encoding_planes(a->encoding), a->in_planes);
	if (d->has_size && (a->board_w != a->board_h || a->board_w < d->min_size ||
			    a->board_w > d->max_size))
		ARCH_FAIL("%s board %dx%d is not a square of %d..%d", d->title, a->board_w, a->board_h,
			  d->min_size, d->max_size);
	game_params p = nn_arch_params(a);
	game_numbers n = game_numbers_of(&p);
	if (a->board_w != n.width || a->board_h != n.height)
		ARCH_FAIL("%s is %dx%d, not %dx%d", d->title, n.width, n.height, a->board_w, a->board_h);
	if (a->policy_outputs != n.actions)
		ARCH_FAIL("%s %dx%d needs %d policy outputs, not %d", d->title, a->board_w, a->board_h,
			  n.actions, a->policy_outputs);
	if (a->blocks < 0 || a->blocks > NN_MAX_BLOCKS)
		ARCH_FAIL("%d blocks: must be 0..%d", a->blocks, NN_MAX_BLOCKS);
	if (a->channels < 1 || a->channels > NN_MAX_CHANNELS)
		ARCH_FAIL("%d channels: must be 1..%d", a->channels, NN_MAX_CHANNELS);
	int se = 0;
	for (int i = 0; i < a->blocks; i++) {
		if (a->block_kind[i] == NN_BLOCK_SE)
			se = 1;
		else if (a->block_kind[i] != NN_BLOCK_PLAIN)
			ARCH_FAIL("block %d has kind %d, which this version does not know "
				  "(only plain and SE blocks)", i, a->block_kind[i]);
	}
	if (se && (a->se_channels < 1 || a->se_channels > NN_MAX_CHANNELS))
		ARCH_FAIL("SE blocks need 1..%d SE channels, not %d", NN_MAX_CHANNELS,
			  a->se_channels);
	if (a->policy_channels < 1 || a->policy_channels > NN_MAX_CHANNELS)
		ARCH_FAIL("%d policy channels: must be 1..%d", a->policy_channels, NN_MAX_CHANNELS);
	if (a->value_channels < 1 || a->value_channels > NN_MAX_CHANNELS)
		ARCH_FAIL("%d value channels: must be 1..%d", a->value_channels, NN_MAX_CHANNELS);
	if (a->value_hidden < 1 || a->value_hidden > 4096)
		ARCH_FAIL("value hidden width %d: must be 1..4096", a->value_hidden);
	if (a->value_outputs != 1 && a->value_outputs != 3)
		ARCH_FAIL("value head has %d outputs: must be 1 (tanh) or 3 (WDL)",
			  a->value_outputs);
	if (a->opp_policy != 0 && a->opp_policy != 1)
		ARCH_FAIL("opponent-reply head flag %d: must be 0 or 1", a->opp_policy);
	if (a->ownership != 0 && a->ownership != 1)
		ARCH_FAIL("ownership head flag %d: must be 0 or 1", a->ownership);
	if (a->ownership && !d->ownership)
		ARCH_FAIL("%s has no territory: no ownership head", d->title);
	if (a->score != 0 && a->score != 1)
		ARCH_FAIL("score head flag %d: must be 0 or 1", a->score);
	if (a->score && !d->ownership)
		ARCH_FAIL("%s has no territory: no score head", d->title);
	if (a->sizes) {
		if (!d->has_size || !d->has_go_board)
			ARCH_FAIL("%s has one board: no board sizes", d->title);
		uint32_t allowed = 0;
		for (int sz = d->min_size; sz <= a->board_w; sz++)
			allowed |= 1u << sz;
		if ((a->sizes & ~allowed) || !(a->sizes >> a->board_w & 1u))
			ARCH_FAIL("board sizes 0x%x: each must be %d..%d, the frame's %d among them",
				  a->sizes, d->min_size, a->board_w, a->board_w);
	}
	if (a->masked_pool != 0 && a->masked_pool != 1)
		ARCH_FAIL("masked pooling flag %d: must be 0 or 1", a->masked_pool);
	if (a->masked_pool && !a->sizes)
		ARCH_FAIL("masked pooling is for a net of several board sizes");
	return 0;
}

/* Points the tensor pointers of `net` into `base` in file order, or only
 * counts when base is NULL; returns the float count. The single place that
 * defines the layout. */
static size_t net_carve(nn_net *net, float *base)
{
	const nn_arch *a = &net->arch;
	size_t n = 0;
	int hw = a->board_w * a->board_h;
#define TAKE(ptr, count)                                  \
	do {                                              \
		(ptr) = base ? base + n : NULL;           \
		n += (size_t)(count);                     \
	} while (0)
#define CONV(c, cin, cout, kk)                                    \
	do {                                                      \
		(c).c_in = (cin);                                 \
		(c).c_out = (cout);                               \
		(c).k = (kk);                                     \
		TAKE((c).w, (size_t)(cout) * (cin) * (kk) * (kk)); \
		TAKE((c).b, (cout));                              \
		TAKE((c).bn_mean, (cout));                        \
		TAKE((c).bn_var, (cout));                         \
		TAKE((c).bn_gamma, (cout));                       \
		TAKE((c).bn_beta, (cout));                        \
	} while (0)
#define FC(f, nin, nout)                                  \
	do {                                              \
		(f).n_in = (nin);                         \
		(f).n_out = (nout);                       \
		TAKE((f).w, (size_t)(nin) * (nout));      \
		TAKE((f).b, (nout));                      \
	} while (0)
	CONV(net->input, a->in_planes, a->channels, 3);
	for (int i = 0; i < a->blocks; i++) {
		nn_block *b = &net->block[i];
		CONV(b->conv1, a->channels, a->channels, 3);
		CONV(b->conv2, a->channels, a->channels, 3);
		if (a->block_kind[i] == NN_BLOCK_SE) {
			FC(b->se1, a->channels, a->se_channels);
			FC(b->se2, a->se_channels, 2 * a->channels);
		} else {
			memset(&b->se1, 0, sizeof(b->se1));
			memset(&b->se2, 0, sizeof(b->se2));
		}
	}
	CONV(net->policy_conv, a->channels, a->policy_channels, 1);
	FC(net->policy_fc, a->policy_channels * hw, a->policy_outputs);
	CONV(net->value_conv, a->channels, a->value_channels, 1);
	FC(net->value_fc1, a->value_channels * hw, a->value_hidden);
	FC(net->value_fc2, a->value_hidden, a->value_outputs);
	if (a->opp_policy)
		FC(net->opp_fc, a->policy_channels * hw, a->policy_outputs);
	else
		memset(&net->opp_fc, 0, sizeof(net->opp_fc));
	if (a->ownership)
		FC(net->own_fc, a->value_channels, 1);
	else
		memset(&net->own_fc, 0, sizeof(net->own_fc));
	if (a->score)
		FC(net->score_fc, a->value_hidden, 1);
	else
		memset(&net->score_fc, 0, sizeof(net->score_fc));
#undef TAKE
#undef CONV
#undef FC
	return n;
}

/* Calls fn on every conv of the net. */
static void net_each_conv(nn_net *net, void (*fn)(nn_net *, nn_conv *))
{
	fn(net, &net->input);
	for (int i = 0; i < net->arch.blocks; i++) {
		fn(net, &net->block[i].conv1);
		fn(net, &net->block[i].conv2);
	}
	fn(net, &net->policy_conv);
	fn(net, &net->value_conv);
}

static void conv_bn_identity(nn_net *net, nn_conv *c)
{
	for (int o = 0; o < c->c_out; o++) {
		c->bn_var[o] = 1.0f - NN_BN_EPS;
		c->bn_gamma[o] = 1.0f;
	}
}

int nn_arch_heads(const nn_arch *a)
{
	return (a->opp_policy ? NN_HEAD_OPP : 0) | (a->ownership ? NN_HEAD_OWN : 0) |
	       (a->score ? NN_HEAD_SCORE : 0);
}

void nn_arch_set_heads(nn_arch *a, int heads)
{
	a->opp_policy = (heads & NN_HEAD_OPP) != 0;
	a->ownership = (heads & NN_HEAD_OWN) != 0;
	a->score = (heads & NN_HEAD_SCORE) != 0;
}

void nn_arch_set_se(nn_arch *a, int se_channels)
{
	a->se_channels = se_channels > 0 ? se_channels : 0;
	for (int i = 0; i < a->blocks; i++)
		a->block_kind[i] = se_channels > 0 ? NN_BLOCK_SE : NN_BLOCK_PLAIN;
}

uint32_t nn_net_flags(const nn_net *net)
{
	return (net->bn_folded ? NN_FLAG_FOLDED : 0u) | (uint32_t)nn_arch_heads(&net->arch) << 1 |
	       (net->arch.masked_pool ? NN_FLAG_MASKED_POOL : 0u) |
	       (net->arch.sizes >> 5 << NN_FLAGS_SIZES_SHIFT & NN_FLAGS_SIZES);
}

int nn_flags_apply(uint32_t flags, uint32_t known, nn_arch *a, int *folded)
{
	if (flags & ~known)
		return -1;
	*folded = (flags & NN_FLAG_FOLDED) != 0;
	nn_arch_set_heads(a, (int)(flags >> 1 & NN_HEADS_ALL));
	a->sizes = (flags & NN_FLAGS_SIZES) >> NN_FLAGS_SIZES_SHIFT << 5;
	a->masked_pool = (flags & NN_FLAG_MASKED_POOL) != 0;
	return 0;
}

size_t nn_arch_floats(const nn_arch *a)
{
	nn_net *n = calloc(1, sizeof(*n)); /* about 13 KB: not on the stack */
	if (!n)
		return 0;
	n->arch = *a;
	size_t count = net_carve(n, NULL);
	free(n);
	return count;
}

nn_net *nn_net_new(const nn_arch *a, char *err, size_t errlen)
{
	if (nn_arch_check(a, err, errlen) < 0)
		return NULL;
	nn_net *net = calloc(1, sizeof(*net));
	if (!net)
		goto oom;
	net->arch = *a;
	net->n_floats = net_carve(net, NULL);
	net->data = calloc(net->n_floats, sizeof(float));
	if (!net->data)
		goto oom;
	net_carve(net, net->data);
	net_each_conv(net, conv_bn_identity);
	return net;
oom:
	snprintf(err, errlen, "out of memory for a network");
	nn_net_free(net);
	return NULL;
}

void nn_net_free(nn_net *net)
{
	if (!net)
		return;
	free(net->data);
	free(net);
}

nn_net *nn_net_clone(const nn_net *net)
{
	char err[256];
	nn_net *c = nn_net_new(&net->arch, err, sizeof(err));
	if (!c)
		return NULL;
	memcpy(c->data, net->data, net->n_floats * sizeof(float));
	c->meta = net->meta;
	c->bn_folded = net->bn_folded;
	return c;
}

/* Uniform in [lo, hi). */
static float net_rng_uniform(uint64_t *s, float lo, float hi)
{
	return (float)(lo + (hi - lo) * rng_uniform(s));
}

/* Uniform weights with variance 1/fan_in keep activations of order one. */
static void rng_fill(uint64_t *s, float *p, size_t n, int fan_in)
{
	float a = sqrtf(3.0f / (float)fan_in);
	for (size_t i = 0; i < n; i++)
		p[i] = net_rng_uniform(s, -a, a);
}

static void rng_conv(uint64_t *s, nn_conv *c)
{
	rng_fill(s, c->w, (size_t)c->c_out * c->c_in * c->k * c->k, c->c_in * c->k * c->k);
	for (int o = 0; o < c->c_out; o++) {
		c->b[o] = net_rng_uniform(s, -0.1f, 0.1f);
		c->bn_mean[o] = net_rng_uniform(s, -0.2f, 0.2f);
		c->bn_var[o] = net_rng_uniform(s, 0.5f, 1.5f);
		c->bn_gamma[o] = net_rng_uniform(s, 0.7f, 1.2f);
		c->bn_beta[o] = net_rng_uniform(s, -0.1f, 0.2f);
	}
}

static void rng_fc(uint64_t *s, nn_fc *f)
{
	rng_fill(s, f->w, (size_t)f->n_in * f->n_out, f->n_in);
	for (int o = 0; o < f->n_out; o++)
		f->b[o] = net_rng_uniform(s, -0.1f, 0.1f);
}

void nn_net_init_random(nn_net *net, uint64_t seed)
{
	uint64_t s = seed ^ 0x5e47e5e47ull;
	rng_conv(&s, &net->input);
	for (int i = 0; i < net->arch.blocks; i++) {
		nn_block *b = &net->block[i];
		rng_conv(&s, &b->conv1);
		rng_conv(&s, &b->conv2);
		/* Shrink the second conv so the residual sum stays of order
		 * one over deep towers. */
		for (int o = 0; o < b->conv2.c_out; o++)
			b->conv2.bn_gamma[o] *= 0.5f;
		if (b->se1.w) {
			rng_fc(&s, &b->se1);
			rng_fc(&s, &b->se2);
		}
	}
	rng_conv(&s, &net->policy_conv);
	rng_fc(&s, &net->policy_fc);
	rng_conv(&s, &net->value_conv);
	rng_fc(&s, &net->value_fc1);
	rng_fc(&s, &net->value_fc2);
	if (net->opp_fc.w)
		rng_fc(&s, &net->opp_fc);
	if (net->own_fc.w)
		rng_fc(&s, &net->own_fc);
	if (net->score_fc.w)
		rng_fc(&s, &net->score_fc);
	net->bn_folded = 0;
}

void nn_conv_folded(const nn_net *net, const nn_conv *c, float *w, float *b)
{
	size_t per_out = (size_t)c->c_in * c->k * c->k;
	for (int o = 0; o < c->c_out; o++) {
		double scale = 1.0, shift = c->b[o];
		if (!net->bn_folded) {
			scale = c->bn_gamma[o] / sqrt((double)c->bn_var[o] + NN_BN_EPS);
			shift = (c->b[o] - (double)c->bn_mean[o]) * scale + c->bn_beta[o];
		}
		for (size_t i = 0; i < per_out; i++)
			w[o * per_out + i] = (float)(c->w[o * per_out + i] * scale);
		b[o] = (float)shift;
	}
}

static void conv_fold(nn_net *net, nn_conv *c)
{
	/* In place is safe: each output element depends only on its own
	 * input element and per-channel scalars. */
	nn_conv_folded(net, c, c->w, c->b);
	for (int o = 0; o < c->c_out; o++) {
		c->bn_mean[o] = 0.0f;
		c->bn_beta[o] = 0.0f;
		c->bn_gamma[o] = 1.0f;
		c->bn_var[o] = 1.0f - NN_BN_EPS;
	}
}

void nn_net_fold_bn(nn_net *net)
{
	if (net->bn_folded)
		return;
	net_each_conv(net, conv_fold);
	net->bn_folded = 1;
}

double nn_net_flops(const nn_net *net)
{
	/* Inference's: the opponent-reply head is never computed there. */
	const nn_arch *a = &net->arch;
	double hw = (double)a->board_w * a->board_h, macs = 0;
	macs += hw * 9.0 * a->in_planes * a->channels;
	macs += a->blocks * 2.0 * hw * 9.0 * a->channels * a->channels;
	for (int i = 0; i < a->blocks; i++)
		if (a->block_kind[i] == NN_BLOCK_SE)
			macs += 3.0 * (double)a->channels * a->se_channels;
	macs += hw * a->channels * (a->policy_channels + a->value_channels);
	macs += hw * a->policy_channels * a->policy_outputs;
	macs += hw * a->value_channels * a->value_hidden;
	macs += (double)a->value_hidden * a->value_outputs;
	return 2.0 * macs;
}

const char *nn_arch_describe(const nn_arch *a, char *buf, size_t len)
{
	int se = 0;
	for (int i = 0; i < a->blocks; i++)
		se += a->block_kind[i] == NN_BLOCK_SE;
	char sizes[160] = "";
	if (a->sizes) {
		char list[128];
		snprintf(sizes, sizeof(sizes), ", boards %s%s", nn_arch_sizes_text(a, list, sizeof(list)),
			 se && a->masked_pool ? ", se means masked to the board" : "");
	}
	snprintf(buf, len, "%s %dx%d %s %dx%d (se blocks %d, value outputs %d%s%s%s%s)",
		 game_kind_name(a->game), a->board_w, a->board_h, nn_encoding_name(a->encoding),
		 a->blocks, a->channels, se, a->value_outputs,
		 a->opp_policy ? ", opponent-reply head" : "", a->ownership ? ", ownership head" : "",
		 a->score ? ", score head" : "", sizes);
	return buf;
}
