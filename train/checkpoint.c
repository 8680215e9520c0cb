/* checkpoint.c: learner checkpoints (format in trainer.h). A checkpoint is
 * read whole and checked (magic, version, sizes, CRC) before anything of
 * the trainer changes, so a bad file leaves the trainer as it was. */
#include "train/train_internal.h"
#include "train/trainer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written as the host's numbers: a big-endian port needs byte swaps"
#endif

#define CK_MAGIC "SENTECKP"
#define CK_MAGIC_LEN 8
#define CK_VERSION 1u
#define CK_N_ARCH 13 /* u32 arch fields, as in the model file */
/* Header bytes besides the block kinds. */
#define CK_FIXED (CK_N_ARCH * 4 + 4 + 8 + 8 + 2 * NN_ID_LEN + 4 + 4 + 8 + 8 + 8 + 8)

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
	const uint8_t *data;  /* weights, then moments (unaligned: memcpy) */
	const uint8_t *blob;  /* caller blob */
} ck_view;

/* Writes n bytes and folds them into crc; 0 or -1. */
static int ck_write(FILE *f, const void *p, size_t n, uLong *crc)
{
	const uint8_t *b = p;
	for (size_t done = 0; done < n;) {
		size_t k = n - done > (1u << 30) ? (1u << 30) : n - done;
		*crc = crc32(*crc, b + done, (uInt)k);
		done += k;
	}
	return n == 0 || fwrite(p, 1, n, f) == n ? 0 : -1;
}

int trainer_checkpoint_save(trainer *t, const char *path, const void *blob, size_t blob_len,
			    char *err, size_t errlen)
{
	int rc = -1;
	const nn_net *net = trainer_net(t);
	const nn_arch *a = &net->arch;
	uLong crc = crc32(0L, Z_NULL, 0);
	FILE *f = NULL;
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	if (!tmp) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	f = fopen(tmp, "wb");
	if (!f) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	uint32_t version = CK_VERSION, hlen = (uint32_t)(CK_FIXED + a->blocks);
	uint32_t arch[CK_N_ARCH] = {
		(uint32_t)a->game, (uint32_t)a->board_w, (uint32_t)a->board_h,
		(uint32_t)a->encoding, (uint32_t)a->in_planes, (uint32_t)a->blocks,
		(uint32_t)a->channels, (uint32_t)a->se_channels, (uint32_t)a->policy_channels,
		(uint32_t)a->policy_outputs, (uint32_t)a->value_channels,
		(uint32_t)a->value_hidden, (uint32_t)a->value_outputs,
	};
	uint32_t folded = (uint32_t)net->bn_folded;
	uint32_t opt = (uint32_t)trainer_options(t)->optimizer, k = (uint32_t)trainer_n_moments(t);
	uint64_t step = (uint64_t)trainer_steps(t), rng = trainer_rng_state(t);
	uint64_t nf = net->n_floats, bl = blob_len;
	char parent[NN_ID_LEN], name[NN_ID_LEN];
	memset(parent, 0, sizeof(parent));
	memset(name, 0, sizeof(name));
	memcpy(parent, net->meta.parent, strnlen(net->meta.parent, NN_ID_LEN - 1));
	memcpy(name, net->meta.name, strnlen(net->meta.name, NN_ID_LEN - 1));
	int bad = ck_write(f, CK_MAGIC, CK_MAGIC_LEN, &crc) || ck_write(f, &version, 4, &crc) ||
		  ck_write(f, &hlen, 4, &crc) || ck_write(f, arch, sizeof(arch), &crc) ||
		  ck_write(f, &folded, 4, &crc) ||
		  ck_write(f, a->block_kind, (size_t)a->blocks, &crc) ||
		  ck_write(f, &net->meta.train_step, 8, &crc) ||
		  ck_write(f, &net->meta.created, 8, &crc) || ck_write(f, parent, NN_ID_LEN, &crc) ||
		  ck_write(f, name, NN_ID_LEN, &crc) || ck_write(f, &opt, 4, &crc) ||
		  ck_write(f, &k, 4, &crc) || ck_write(f, &step, 8, &crc) ||
		  ck_write(f, &rng, 8, &crc) || ck_write(f, &nf, 8, &crc) ||
		  ck_write(f, &bl, 8, &crc) || ck_write(f, net->data, nf * sizeof(float), &crc);
	for (uint32_t i = 0; i < k && !bad; i++)
		bad = ck_write(f, trainer_moment(t, (int)i), nf * sizeof(float), &crc);
	if (!bad)
		bad = ck_write(f, blob, blob_len, &crc);
	uint32_t c32 = (uint32_t)crc;
	if (bad || fwrite(&c32, 4, 1, f) != 1 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (fclose(f) != 0) {
		f = NULL;
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	f = NULL;
	if (rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f)
		fclose(f);
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* Reads a whole file; NULL with a message. */
static uint8_t *ck_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long sz;
	if (!f) {
		snprintf(err, errlen, "cannot open checkpoint %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "cannot read checkpoint %s: %s", path, strerror(errno));
		goto fail;
	}
	buf = malloc(sz ? (size_t)sz : 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading %s (%ld bytes)", path, sz);
		goto fail;
	}
	if (sz && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		snprintf(err, errlen, "cannot read checkpoint %s: %s", path,
			 ferror(f) ? strerror(errno) : "short read");
		goto fail;
	}
	fclose(f);
	*len = (size_t)sz;
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
}

static uint32_t ck_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t ck_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
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
	uint32_t version = ck_u32(buf + 8), hlen = ck_u32(buf + 12);
	if (version != CK_VERSION) {
		snprintf(err, errlen, "%s: checkpoint version %u, this sente reads version %u; "
			 "use the sente that wrote it, or restart from its exported model",
			 path, version, CK_VERSION);
		return -1;
	}
	size_t pos = CK_MAGIC_LEN + 8;
	if (hlen < CK_FIXED || len < pos + hlen + 4) {
		snprintf(err, errlen, "%s: truncated checkpoint header; %s", path, again);
		return -1;
	}
	uint32_t crc_file = ck_u32(buf + len - 4);
	uLong crc = crc32(0L, Z_NULL, 0);
	for (size_t done = 0; done < len - 4;) {
		size_t k = len - 4 - done > (1u << 30) ? (1u << 30) : len - 4 - done;
		crc = crc32(crc, buf + done, (uInt)k);
		done += k;
	}
	const uint8_t *h = buf + pos;
	uint32_t f[CK_N_ARCH];
	for (int i = 0; i < CK_N_ARCH; i++)
		f[i] = ck_u32(h + 4 * i);
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
	if (f[5] > NN_MAX_BLOCKS || hlen != CK_FIXED + f[5]) {
		snprintf(err, errlen, "%s: inconsistent checkpoint header; %s", path, again);
		return -1;
	}
	size_t q = CK_N_ARCH * 4;
	v->bn_folded = (int)ck_u32(h + q);
	q += 4;
	memcpy(a->block_kind, h + q, (size_t)a->blocks);
	q += (size_t)a->blocks;
	v->meta.train_step = ck_u64(h + q);
	v->meta.created = ck_u64(h + q + 8);
	q += 16;
	memcpy(v->meta.parent, h + q, NN_ID_LEN);
	v->meta.parent[NN_ID_LEN - 1] = 0;
	memcpy(v->meta.name, h + q + NN_ID_LEN, NN_ID_LEN);
	v->meta.name[NN_ID_LEN - 1] = 0;
	q += 2 * NN_ID_LEN;
	v->optimizer = ck_u32(h + q);
	v->n_mom = ck_u32(h + q + 4);
	v->step = ck_u64(h + q + 8);
	v->rng = ck_u64(h + q + 16);
	v->n_floats = ck_u64(h + q + 24);
	v->blob_len = ck_u64(h + q + 32);
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

nn_net *trainer_checkpoint_net(const char *path, char *err, size_t errlen)
{
	size_t len;
	ck_view v;
	nn_net *net = NULL;
	uint8_t *buf = ck_read_file(path, &len, err, errlen);
	if (buf && ck_parse(path, buf, len, &v, err, errlen) == 0)
		net = ck_net(path, &v, err, errlen);
	free(buf);
	return net;
}

int trainer_checkpoint_load(trainer *t, const char *path, void **blob, size_t *blob_len,
			    char *err, size_t errlen)
{
	int rc = -1;
	size_t len;
	ck_view v;
	nn_net *net = trainer_net(t);
	void *b = NULL;
	char d1[160], d2[160];
	uint8_t *buf = ck_read_file(path, &len, err, errlen);
	if (!buf || ck_parse(path, buf, len, &v, err, errlen) < 0)
		goto out;
	const nn_arch *a = &net->arch, *c = &v.arch;
	if (a->game != c->game || a->board_w != c->board_w || a->board_h != c->board_h ||
	    a->encoding != c->encoding || a->blocks != c->blocks || a->channels != c->channels ||
	    a->se_channels != c->se_channels || a->policy_channels != c->policy_channels ||
	    a->policy_outputs != c->policy_outputs || a->value_channels != c->value_channels ||
	    a->value_hidden != c->value_hidden || a->value_outputs != c->value_outputs ||
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
	if (v.optimizer != (uint32_t)trainer_options(t)->optimizer ||
	    v.n_mom != (uint32_t)trainer_n_moments(t)) {
		snprintf(err, errlen, "%s was written by the %s optimizer, the trainer uses %s; "
			 "resume with the same optimizer", path,
			 v.optimizer == TRAIN_OPTIMIZER_ADAMW ? "AdamW" : "SGD",
			 trainer_options(t)->optimizer == TRAIN_OPTIMIZER_ADAMW ? "AdamW" : "SGD");
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
	/* Nothing can fail from here: the trainer changes all at once. */
	memcpy(net->data, v.data, net->n_floats * sizeof(float));
	net->meta = v.meta;
	for (uint32_t k = 0; k < v.n_mom; k++)
		memcpy(trainer_moment(t, (int)k), v.data + (1 + k) * v.n_floats * 4,
		       net->n_floats * sizeof(float));
	trainer_restore_state(t, (int64_t)v.step, v.rng);
	if (blob) {
		*blob = b;
		b = NULL;
		if (blob_len)
			*blob_len = v.blob_len;
	}
	rc = 0;
out:
	free(b);
	free(buf);
	return rc;
}
