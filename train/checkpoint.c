/* checkpoint.c: learner checkpoints (format in trainer.h). A checkpoint is
 * read whole and checked (magic, version, sizes, CRC) before anything of
 * the trainer changes, so a bad file leaves the trainer as it was. */
#include "engine/fileio.h"
#include "train/checkpoint.h"
#include "train/train_internal.h"
#include "train/trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written as the host's numbers: a big-endian port needs byte swaps"
#endif

#define CK_MAGIC "SENTECKP"
#define CK_MAGIC_LEN 8
/* Version 2 added the world size at the end of the header, version 3 the
 * loss scale after it; versions 1 and 2 are still read (version 1 as
 * written by one rank, both without a loss scale). */
#define CK_VERSION TRAIN_CKPT_VERSION
#define CK_N_ARCH 13 /* u32 arch fields, as in the model file */
/* Header bytes besides the block kinds: versions 1, 2 and 3. */
#define CK_FIXED_V1 (CK_N_ARCH * 4 + 4 + 8 + 8 + 2 * NN_ID_LEN + 4 + 4 + 8 + 8 + 8 + 8)
#define CK_FIXED_V2 (CK_FIXED_V1 + 4)
#define CK_FIXED (CK_FIXED_V2 + 4)

/* A parsed checkpoint: views into the file's bytes. */
typedef struct ck_view {
	nn_arch arch;         /* architecture */
	int bn_folded;        /* the net's flag */
	nn_meta meta;         /* the net's provenance */
	uint32_t optimizer;   /* train_optimizer */
	uint32_t n_mom;       /* moment arrays */
	uint64_t step;        /* optimizer steps */
	uint64_t rng;         /* trainer RNG state */
	uint64_t n_floats;    /* floats per array */
	uint64_t blob_len;    /* caller blob bytes */
	uint32_t world;       /* ranks that wrote it (1 for version 1) */
	float loss_scale;     /* 0 before version 3 */
	const uint8_t *data;  /* weights, then moments (unaligned: memcpy) */
	const uint8_t *blob;  /* caller blob */
} ck_view;

int train_ckpt_write(const char *path, const nn_net *net, float *const *mom,
		     const train_ckpt_state *s, const void *blob, size_t blob_len, char *err,
		     size_t errlen)
{
	const nn_arch *a = &net->arch;
	fileio_writer w;
	if (fileio_begin(&w, path, err, errlen) < 0)
		return -1;
	uint32_t version = CK_VERSION, hlen = (uint32_t)(CK_FIXED + a->blocks);
	uint32_t arch[CK_N_ARCH] = {
		(uint32_t)a->game, (uint32_t)a->board_w, (uint32_t)a->board_h,
		(uint32_t)a->encoding, (uint32_t)a->in_planes, (uint32_t)a->blocks,
		(uint32_t)a->channels, (uint32_t)a->se_channels, (uint32_t)a->policy_channels,
		(uint32_t)a->policy_outputs, (uint32_t)a->value_channels,
		(uint32_t)a->value_hidden, (uint32_t)a->value_outputs,
	};
	uint32_t folded = nn_net_flags(net); /* folded, and the heads */
	uint32_t opt = s->optimizer, k = (uint32_t)s->n_mom;
	uint64_t step = (uint64_t)s->step, rng = s->rng;
	uint64_t nf = net->n_floats, bl = blob_len;
	uint32_t world = s->world;
	float scale = s->loss_scale;
	char parent[NN_ID_LEN], name[NN_ID_LEN];
	memset(parent, 0, sizeof(parent));
	memset(name, 0, sizeof(name));
	memcpy(parent, net->meta.parent, strnlen(net->meta.parent, NN_ID_LEN - 1));
	memcpy(name, net->meta.name, strnlen(net->meta.name, NN_ID_LEN - 1));
	fileio_put(&w, CK_MAGIC, CK_MAGIC_LEN);
	fileio_put(&w, &version, 4);
	fileio_put(&w, &hlen, 4);
	fileio_put(&w, arch, sizeof(arch));
	fileio_put(&w, &folded, 4);
	fileio_put(&w, a->block_kind, (size_t)a->blocks);
	fileio_put(&w, &net->meta.train_step, 8);
	fileio_put(&w, &net->meta.created, 8);
	fileio_put(&w, parent, NN_ID_LEN);
	fileio_put(&w, name, NN_ID_LEN);
	fileio_put(&w, &opt, 4);
	fileio_put(&w, &k, 4);
	fileio_put(&w, &step, 8);
	fileio_put(&w, &rng, 8);
	fileio_put(&w, &nf, 8);
	fileio_put(&w, &bl, 8);
	fileio_put(&w, &world, 4);
	fileio_put(&w, &scale, 4);
	fileio_put(&w, net->data, nf * sizeof(float));
	for (uint32_t i = 0; i < k; i++)
		fileio_put(&w, mom[i], nf * sizeof(float));
	fileio_put(&w, blob, blob_len);
	return fileio_commit(&w, err, errlen);
}

int trainer_checkpoint_save(trainer *t, const char *path, const void *blob, size_t blob_len,
			    char *err, size_t errlen)
{
	float *mom[2] = { NULL, NULL };
	train_ckpt_state s = {
		.optimizer = (uint32_t)trainer_options(t)->optimizer,
		.n_mom = trainer_n_moments(t),
		.step = trainer_steps(t),
		.rng = trainer_rng_state(t),
		.world = (uint32_t)trainer_world(t),
		.loss_scale = 1.0f, /* fp32: no scaling */
	};
	for (int k = 0; k < s.n_mom; k++)
		mom[k] = trainer_moment(t, k);
	return train_ckpt_write(path, trainer_net(t), mom, &s, blob, blob_len, err, errlen);
}

/* Checks and parses a checkpoint held in buf; 0, or -1 with a message. */
static int ck_parse(const char *path, const uint8_t *buf, size_t len, ck_view *v, char *err,
		    size_t errlen)
{
	const char *again = "the file is damaged or was cut short; resume from an earlier "
			    "checkpoint";
	memset(v, 0, sizeof(*v));
	if (len < CK_MAGIC_LEN + 8 || memcmp(buf, CK_MAGIC, CK_MAGIC_LEN) != 0) {
		snprintf(err, errlen, "%s is not a sente checkpoint (no SENTECKP magic)%s", path,
			 len >= 8 && memcmp(buf, "SENTENET", 8) == 0
				 ? ": it is a model file; start a fresh run from it instead"
				 : "");
		return -1;
	}
	uint32_t version = fileio_u32(buf + 8), hlen = fileio_u32(buf + 12);
	if (version != CK_VERSION && version != 1 && version != 2) {
		snprintf(err, errlen, "%s: checkpoint version %u, this sente reads version %u; "
			 "use the sente that wrote it, or restart from its exported model",
			 path, version, CK_VERSION);
		return -1;
	}
	size_t pos = CK_MAGIC_LEN + 8;
	size_t fixed = version == 1 ? CK_FIXED_V1 : version == 2 ? CK_FIXED_V2 : CK_FIXED;
	if (hlen < fixed || len < pos + hlen + 4) {
		snprintf(err, errlen, "%s: truncated checkpoint header; %s", path, again);
		return -1;
	}
	uint32_t crc_file = fileio_u32(buf + len - 4);
	uint32_t crc = fileio_crc(buf, len - 4);
	const uint8_t *h = buf + pos;
	uint32_t f[CK_N_ARCH];
	for (int i = 0; i < CK_N_ARCH; i++)
		f[i] = fileio_u32(h + 4 * i);
	nn_arch *a = &v->arch;
	memset(a, 0, sizeof(*a));
	a->game = (game_kind)f[0];
	a->board_w = (int)f[1];
	a->board_h = (int)f[2];
	a->encoding = (nn_encoding)f[3];
	a->in_planes = (int)f[4];
	a->blocks = (int)f[5];
	a->channels = (int)f[6];
	a->se_channels = (int)f[7];
	a->policy_channels = (int)f[8];
	a->policy_outputs = (int)f[9];
	a->value_channels = (int)f[10];
	a->value_hidden = (int)f[11];
	a->value_outputs = (int)f[12];
	if (f[5] > NN_MAX_BLOCKS || hlen != fixed + f[5]) {
		snprintf(err, errlen, "%s: inconsistent checkpoint header; %s", path, again);
		return -1;
	}
	size_t q = CK_N_ARCH * 4;
	uint32_t flags = fileio_u32(h + q);
	if (nn_flags_apply(flags, NN_FLAGS_ALL, a, &v->bn_folded) < 0) {
		snprintf(err, errlen, "%s: checkpoint header has unknown flags 0x%x; %s", path, flags,
			 again);
		return -1;
	}
	q += 4;
	memcpy(a->block_kind, h + q, (size_t)a->blocks);
	q += (size_t)a->blocks;
	v->meta.train_step = fileio_u64(h + q);
	v->meta.created = fileio_u64(h + q + 8);
	q += 16;
	memcpy(v->meta.parent, h + q, NN_ID_LEN);
	v->meta.parent[NN_ID_LEN - 1] = 0;
	memcpy(v->meta.name, h + q + NN_ID_LEN, NN_ID_LEN);
	v->meta.name[NN_ID_LEN - 1] = 0;
	q += 2 * NN_ID_LEN;
	v->optimizer = fileio_u32(h + q);
	v->n_mom = fileio_u32(h + q + 4);
	v->step = fileio_u64(h + q + 8);
	v->rng = fileio_u64(h + q + 16);
	v->n_floats = fileio_u64(h + q + 24);
	v->blob_len = fileio_u64(h + q + 32);
	v->world = version == 1 ? 1 : fileio_u32(h + q + 40);
	if (version >= 3) {
		uint32_t u = fileio_u32(h + q + 44);
		memcpy(&v->loss_scale, &u, 4);
		if (!(v->loss_scale > 0) || !isfinite(v->loss_scale)) {
			snprintf(err, errlen, "%s: checkpoint records a loss scale of %g; %s", path,
				 (double)v->loss_scale, again);
			return -1;
		}
	}
	if (v->world < 1) {
		snprintf(err, errlen, "%s: checkpoint records a world size of 0; %s", path, again);
		return -1;
	}
	pos += hlen;
	/* Sizes before the CRC so that a cut file says "truncated", which is
	 * more useful than "bad CRC". Guard the products against overflow. */
	int sane = v->n_mom <= 2 && v->n_floats <= ((uint64_t)1 << 40) &&
		   v->blob_len <= ((uint64_t)1 << 40);
	uint64_t promised = sane ? pos + (1 + v->n_mom) * v->n_floats * 4 + v->blob_len + 4 : 0;
	if (!sane || len != promised) {
		snprintf(err, errlen, "%s: checkpoint is %zu bytes, its header promises %llu%s; %s",
			 path, len, (unsigned long long)promised, sane ? "" : " (impossible sizes)",
			 again);
		return -1;
	}
	if ((uint32_t)crc != crc_file) {
		snprintf(err, errlen, "%s: checkpoint CRC mismatch (stored %08x, computed %08x); %s",
			 path, crc_file, (uint32_t)crc, again);
		return -1;
	}
	char why[200];
	if (nn_arch_check(a, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: checkpoint holds an invalid network: %s", path, why);
		return -1;
	}
	/* Before anyone allocates the architecture: a header may ask for GBs. */
	size_t need = nn_arch_floats(a);
	if (v->n_floats != need) {
		snprintf(err, errlen, "%s: checkpoint has %llu weights, its architecture %zu; %s",
			 path, (unsigned long long)v->n_floats, need, again);
		return -1;
	}
	v->data = buf + pos;
	v->blob = buf + pos + (1 + v->n_mom) * v->n_floats * 4;
	return 0;
}

/* The net of a parsed checkpoint; NULL with a message. */
static nn_net *ck_net(const char *path, const ck_view *v, char *err, size_t errlen)
{
	nn_net *net = nn_net_new(&v->arch, err, errlen);
	if (!net)
		return NULL;
	if (net->n_floats != v->n_floats) {
		snprintf(err, errlen, "%s: checkpoint has %llu weights, its architecture %zu", path,
			 (unsigned long long)v->n_floats, net->n_floats);
		nn_net_free(net);
		return NULL;
	}
	memcpy(net->data, v->data, net->n_floats * sizeof(float));
	net->meta = v->meta;
	net->bn_folded = v->bn_folded;
	return net;
}

nn_net *train_ckpt_net_mem(const void *buf, size_t len, const char *name, char *err,
			   size_t errlen)
{
	ck_view v;
	if (ck_parse(name, buf, len, &v, err, errlen) < 0)
		return NULL;
	return ck_net(name, &v, err, errlen);
}

nn_net *trainer_checkpoint_net(const char *path, char *err, size_t errlen)
{
	size_t len;
	nn_net *net = NULL;
	uint8_t *buf = fileio_slurp(path, "checkpoint", &len, err, errlen);
	if (buf)
		net = train_ckpt_net_mem(buf, len, path, err, errlen);
	free(buf);
	return net;
}

int train_ckpt_read(const char *path, nn_net *net, float *const *mom, train_ckpt_state *s,
		    void **blob, size_t *blob_len, char *err, size_t errlen)
{
	size_t len;
	uint8_t *buf = fileio_slurp(path, "checkpoint", &len, err, errlen);
	int rc = buf ? train_ckpt_read_mem(buf, len, path, net, mom, s, blob, blob_len, err, errlen)
		     : -1;
	free(buf);
	return rc;
}

int train_ckpt_read_mem(const void *buf, size_t len, const char *path, nn_net *net,
			float *const *mom, train_ckpt_state *s, void **blob, size_t *blob_len,
			char *err, size_t errlen)
{
	int rc = -1;
	ck_view v;
	void *b = NULL;
	char d1[160], d2[160];
	if (ck_parse(path, buf, len, &v, err, errlen) < 0)
		goto out;
	const nn_arch *a = &net->arch, *c = &v.arch;
	if (a->game != c->game || a->board_w != c->board_w || a->board_h != c->board_h ||
	    a->encoding != c->encoding || a->blocks != c->blocks || a->channels != c->channels ||
	    a->se_channels != c->se_channels || a->policy_channels != c->policy_channels ||
	    a->policy_outputs != c->policy_outputs || a->value_channels != c->value_channels ||
	    a->value_hidden != c->value_hidden || a->value_outputs != c->value_outputs ||
	    nn_arch_heads(a) != nn_arch_heads(c) || a->sizes != c->sizes ||
	    a->masked_pool != c->masked_pool ||
	    memcmp(a->block_kind, c->block_kind, (size_t)a->blocks) != 0 ||
	    v.n_floats != net->n_floats) {
		snprintf(err, errlen, "%s holds a %s net, the trainer has a %s one; build the trainer "
			 "from trainer_checkpoint_net()", path, nn_arch_describe(c, d1, sizeof(d1)),
			 nn_arch_describe(a, d2, sizeof(d2)));
		goto out;
	}
	if (v.bn_folded) {
		snprintf(err, errlen, "%s: the checkpoint's net has folded batch norms", path);
		goto out;
	}
	if (v.optimizer != s->optimizer || v.n_mom != (uint32_t)s->n_mom) {
		snprintf(err, errlen, "%s was written by the %s optimizer, the trainer uses %s; "
			 "resume with the same optimizer", path,
			 v.optimizer == TRAIN_OPTIMIZER_ADAMW ? "AdamW" : "SGD",
			 s->optimizer == TRAIN_OPTIMIZER_ADAMW ? "AdamW" : "SGD");
		goto out;
	}
	if (blob) {
		b = malloc(v.blob_len ? v.blob_len : 1);
		if (!b) {
			snprintf(err, errlen, "out of memory for a %llu-byte checkpoint blob",
				 (unsigned long long)v.blob_len);
			goto out;
		}
		memcpy(b, v.blob, v.blob_len);
	}
	/* Nothing can fail from here: the destination changes all at once. */
	memcpy(net->data, v.data, net->n_floats * sizeof(float));
	net->meta = v.meta;
	for (uint32_t k = 0; k < v.n_mom; k++)
		memcpy(mom[k], v.data + (1 + k) * v.n_floats * 4, net->n_floats * sizeof(float));
	s->step = (int64_t)v.step;
	s->rng = v.rng;
	s->world = v.world;
	s->loss_scale = v.loss_scale;
	if (blob) {
		*blob = b;
		b = NULL;
		if (blob_len)
			*blob_len = v.blob_len;
	}
	rc = 0;
out:
	free(b);
	return rc;
}

int trainer_checkpoint_load(trainer *t, const char *path, void **blob, size_t *blob_len,
			    char *err, size_t errlen)
{
	float *mom[2] = { NULL, NULL };
	train_ckpt_state s = {
		.optimizer = (uint32_t)trainer_options(t)->optimizer,
		.n_mom = trainer_n_moments(t),
	};
	for (int k = 0; k < s.n_mom; k++)
		mom[k] = trainer_moment(t, k);
	if (train_ckpt_read(path, trainer_net(t), mom, &s, blob, blob_len, err, errlen) < 0)
		return -1;
	trainer_restore_state(t, s.step, s.rng);
	trainer_set_checkpoint_world(t, (int)s.world);
	return 0;
}
