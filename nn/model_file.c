/* model_file.c: .sente model files (format in net.h) and format sniffing. */
#include "engine/fileio.h"
#include "nn/net.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model files are written as the host's floats: a big-endian port needs byte swaps"
#endif

#define MF_MAGIC "SENTENET"
#define MF_MAGIC_LEN 8
#define MF_N_U32 14 /* u32 fields at the start of the header */
/* Fixed part of the header: u32 fields, step, time, parent, name. */
#define MF_FIXED (MF_N_U32 * 4 + 8 + 8 + 2 * NN_ID_LEN)

/* A growing byte buffer for the header. */
typedef struct mf_buf {
	uint8_t *p;  /* bytes */
	size_t n;    /* used */
	size_t cap;  /* allocated */
} mf_buf;

static int mf_put(mf_buf *b, const void *src, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->cap + n) * 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, src, n);
	b->n += n;
	return 0;
}

static int mf_put_u32(mf_buf *b, uint32_t v)
{
	return mf_put(b, &v, 4);
}

static int mf_header(const nn_net *net, mf_buf *b)
{
	const nn_arch *a = &net->arch;
	uint32_t f[MF_N_U32] = {
		(uint32_t)a->game, (uint32_t)a->board_w, (uint32_t)a->board_h,
		(uint32_t)a->encoding, (uint32_t)a->in_planes, (uint32_t)a->blocks,
		(uint32_t)a->channels, (uint32_t)a->se_channels, (uint32_t)a->policy_channels,
		(uint32_t)a->policy_outputs, (uint32_t)a->value_channels,
		(uint32_t)a->value_hidden, (uint32_t)a->value_outputs,
		nn_net_flags(net),
	};
	char id[NN_ID_LEN];
	int rc = 0;
	for (int i = 0; i < MF_N_U32; i++)
		rc |= mf_put_u32(b, f[i]);
	rc |= mf_put(b, &net->meta.train_step, 8);
	rc |= mf_put(b, &net->meta.created, 8);
	/* NUL-padded, so equal ids give equal bytes (and checksums). */
	memset(id, 0, sizeof(id));
	memcpy(id, net->meta.parent, strnlen(net->meta.parent, NN_ID_LEN - 1));
	rc |= mf_put(b, id, NN_ID_LEN);
	memset(id, 0, sizeof(id));
	memcpy(id, net->meta.name, strnlen(net->meta.name, NN_ID_LEN - 1));
	rc |= mf_put(b, id, NN_ID_LEN);
	rc |= mf_put(b, a->block_kind, (size_t)a->blocks);
	return rc ? -1 : 0;
}

int nn_net_save(const nn_net *net, const char *path, char *err, size_t errlen)
{
	mf_buf hdr = { 0 };
	for (size_t i = 0; i < net->n_floats; i++)
		if (!isfinite(net->data[i])) {
			snprintf(err, errlen, "refusing to save %s: weight %zu is %g", path, i,
				 (double)net->data[i]);
			return -1;
		}
	if (mf_header(net, &hdr) < 0) {
		snprintf(err, errlen, "out of memory");
		free(hdr.p);
		return -1;
	}
	fileio_writer w;
	if (fileio_begin(&w, path, err, errlen) < 0) {
		free(hdr.p);
		return -1;
	}
	/* The oldest version that can say what the net has: 4 for masked
	 * pooling, 3 for board sizes, 2 for a head, else 1. */
	uint32_t version = net->arch.masked_pool ? 4u
			   : net->arch.sizes     ? 3u
			   : nn_arch_heads(&net->arch) ? 2u
						       : 1u;
	uint32_t hlen = (uint32_t)hdr.n;
	uint64_t count = net->n_floats;
	fileio_put(&w, MF_MAGIC, MF_MAGIC_LEN);
	fileio_put(&w, &version, 4);
	fileio_put(&w, &hlen, 4);
	fileio_put(&w, hdr.p, hdr.n);
	fileio_put(&w, &count, 8);
	fileio_put(&w, net->data, net->n_floats * sizeof(float));
	free(hdr.p);
	return fileio_commit(&w, err, errlen);
}

/* What a file that is not ours may be, as a hint. */
static const char *mf_foreign_hint(const uint8_t *p, size_t len)
{
	if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b)
		return " (gzip data: if this is a Leela Zero network, load it with "
		       "nn_lz_import / `sente import`, or let -w detect it)";
	if (len >= 2 && (p[0] == '1' || p[0] == '2') && (p[1] == '\n' || p[1] == '\r'))
		return " (text starting with a version line: if this is a Leela Zero network, "
		       "load it with nn_lz_import / `sente import`, or let -w detect it)";
	return "";
}

/* Whether a's board meets the expectation's (0: any): its own, or for a
 * net of several sizes any of them, square. */
static bool expected_board(const nn_arch *a, const nn_expect *e)
{
	if (e->board_w <= 0)
		return e->board_h <= 0 || e->board_h == a->board_h;
	if (!a->sizes)
		return e->board_w == a->board_w && (e->board_h <= 0 || e->board_h == a->board_h);
	return e->board_w < 32 && (a->sizes >> e->board_w & 1u) &&
	       (e->board_h <= 0 || e->board_h == e->board_w);
}

nn_net *nn_net_load_mem(const void *vbuf, size_t len, const nn_expect *expect, char *err,
			size_t errlen)
{
	const uint8_t *p = vbuf;
	nn_net *net = NULL;
	nn_arch a;
	char desc[160];
	if (len < MF_MAGIC_LEN || memcmp(p, MF_MAGIC, MF_MAGIC_LEN) != 0) {
		snprintf(err, errlen, "not a sente model: bad magic%s", mf_foreign_hint(p, len));
		goto fail;
	}
	if (len < MF_MAGIC_LEN + 8) {
		snprintf(err, errlen, "truncated model: %zu bytes, the header alone needs more", len);
		goto fail;
	}
	uint32_t version = fileio_u32(p + 8), hlen = fileio_u32(p + 12);
	if (version < 1 || version > NN_FILE_VERSION) {
		snprintf(err, errlen, "model file version %u, this build reads versions 1 to %u: %s",
			 version, NN_FILE_VERSION,
			 version > NN_FILE_VERSION ? "update sente" : "corrupt or not written by sente");
		goto fail;
	}
	size_t off = MF_MAGIC_LEN + 8;
	if (hlen < MF_FIXED || hlen > MF_FIXED + NN_MAX_BLOCKS) {
		snprintf(err, errlen, "corrupt model: header length %u out of range", hlen);
		goto fail;
	}
	if (len < off + hlen + 8 + 4) {
		snprintf(err, errlen, "truncated model: %zu bytes, header and counts need %zu", len,
			 off + hlen + 12);
		goto fail;
	}
	const uint8_t *h = p + off;
	uint32_t f[MF_N_U32];
	for (int i = 0; i < MF_N_U32; i++)
		f[i] = fileio_u32(h + 4 * i);
	memset(&a, 0, sizeof(a));
	/* Range-check before the int casts so a flipped high bit cannot turn
	 * into a plausible negative. */
	for (int i = 0; i < MF_N_U32 - 1; i++)
		if (f[i] > 1u << 20) {
			snprintf(err, errlen, "corrupt model: header field %d is %u", i, f[i]);
			goto fail;
		}
	a.game = (game_kind)f[0];
	a.board_w = (int)f[1];
	a.board_h = (int)f[2];
	a.encoding = (nn_encoding)f[3];
	a.in_planes = (int)f[4];
	a.blocks = (int)f[5];
	a.channels = (int)f[6];
	a.se_channels = (int)f[7];
	a.policy_channels = (int)f[8];
	a.policy_outputs = (int)f[9];
	a.value_channels = (int)f[10];
	a.value_hidden = (int)f[11];
	a.value_outputs = (int)f[12];
	/* The heads' flags are version 2's, the board sizes version 3's,
	 * masked pooling version 4's. */
	uint32_t flags = f[13];
	uint32_t known = version >= 4   ? NN_FLAGS_ALL
			 : version == 3 ? NN_FLAGS_ALL & ~NN_FLAG_MASKED_POOL
			 : version == 2 ? NN_FLAG_FOLDED | NN_FLAGS_HEADS
					: NN_FLAG_FOLDED;
	int folded;
	if (nn_flags_apply(flags, known, &a, &folded) < 0) {
		snprintf(err, errlen, "corrupt model: version %u header has unknown flags 0x%x",
			 version, flags & ~known);
		goto fail;
	}
	if (a.blocks > NN_MAX_BLOCKS || hlen != MF_FIXED + (uint32_t)a.blocks) {
		snprintf(err, errlen, "corrupt model: %d blocks do not match header length %u",
			 a.blocks, hlen);
		goto fail;
	}
	memcpy(a.block_kind, h + MF_FIXED, (size_t)a.blocks);
	uint64_t count = fileio_u64(p + off + hlen);
	size_t want = off + hlen + 8;
	if (count > (SIZE_MAX - want - 4) / 4) {
		snprintf(err, errlen, "corrupt model: %llu floats", (unsigned long long)count);
		goto fail;
	}
	want += (size_t)count * 4 + 4;
	if (len < want) {
		snprintf(err, errlen, "truncated model: %zu bytes of %zu", len, want);
		goto fail;
	}
	if (len > want) {
		snprintf(err, errlen, "corrupt model: %zu bytes after the checksum", len - want);
		goto fail;
	}
if (fileio_crc(p, len - 4) != fileio_u32(p + len - 4)) {
		snprintf(err, errlen, "corrupt model: checksum mismatch (file damaged or "
			 "incompletely copied)");
		goto fail;
	}
	char aerr[200];
	if (nn_arch_check(&a, aerr, sizeof(aerr)) < 0) {
		snprintf(err, errlen, "unusable model: %s", aerr);
		goto fail;
	}
	if (expect && ((expect->game >= 0 && expect->game != (int)a.game) ||
		       !expected_board(&a, expect))) {
		snprintf(err, errlen, "model is for %s, but %s %dx%d was asked for",
			 nn_arch_describe(&a, desc, sizeof(desc)),
			 expect->game >= 0 ? game_kind_name((game_kind)expect->game) : "any game",
			 expect->board_w, expect->board_h);
		goto fail;
	}
	/* The count (which the file's size matched) before the allocation: a
	 * header alone may ask for gigabytes. */
	size_t need = nn_arch_floats(&a);
	if (need != count) {
		snprintf(err, errlen, "corrupt model: %llu floats, the architecture %s needs %zu",
			 (unsigned long long)count, nn_arch_describe(&a, desc, sizeof(desc)), need);
		goto fail;
	}
	net = nn_net_new(&a, aerr, sizeof(aerr));
	if (!net) {
		snprintf(err, errlen, "%s", aerr);
		goto fail;
	}
	memcpy(net->data, p + off + hlen + 8, (size_t)count * 4);
	for (size_t i = 0; i < net->n_floats; i++)
		if (!isfinite(net->data[i])) {
			snprintf(err, errlen, "corrupt model: weight %zu is %g", i,
				 (double)net->data[i]);
			goto fail;
		}
	net->bn_folded = folded;
	h += MF_N_U32 * 4;
	net->meta.train_step = fileio_u64(h);
	net->meta.created = fileio_u64(h + 8);
	memcpy(net->meta.parent, h + 16, NN_ID_LEN);
	memcpy(net->meta.name, h + 16 + NN_ID_LEN, NN_ID_LEN);
	net->meta.parent[NN_ID_LEN - 1] = 0;
	net->meta.name[NN_ID_LEN - 1] = 0;
	return net;
fail:
	nn_net_free(net);
	return NULL;
}

nn_net *nn_net_load(const char *path, const nn_expect *expect, char *err, size_t errlen)
{
	size_t len;
	char e[400];
	uint8_t *buf = fileio_slurp(path, "model", &len, err, errlen);
	if (!buf)
		return NULL;
	nn_net *net = nn_net_load_mem(buf, len, expect, e, sizeof(e));
	if (!net)
		snprintf(err, errlen, "%s: %s", path, e);
	free(buf);
	return net;
}

nn_net *nn_net_load_any(const char *path, const nn_expect *expect, char *err, size_t errlen)
{
	uint8_t head[8] = { 0 };
	int fd = fileio_open_regular(path, "network", err, errlen);
	if (fd < 0)
		return NULL;
	ssize_t got = read(fd, head, sizeof(head));
	close(fd);
	size_t n = got > 0 ? (size_t)got : 0;
	if (n == sizeof(head) && memcmp(head, MF_MAGIC, MF_MAGIC_LEN) == 0)
		return nn_net_load(path, expect, err, errlen);
	if (*mf_foreign_hint(head, n) == 0) {
		snprintf(err, errlen, "%s: neither a sente model nor a Leela Zero network", path);
		return NULL;
	}
	nn_net *net = nn_lz_import(path, err, errlen);
	if (net && expect &&
	    ((expect->game >= 0 && expect->game != (int)net->arch.game) ||
	     (expect->board_w > 0 && expect->board_w != net->arch.board_w) ||
	     (expect->board_h > 0 && expect->board_h != net->arch.board_h))) {
		snprintf(err, errlen, "%s: a Leela Zero network plays Go 19x19 only", path);
		nn_net_free(net);
		return NULL;
	}
	return net;
}
