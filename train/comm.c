/* comm.c: the collective layer's front (timing, errors) and its host
 * transports: single process, in-process thread ranks, and MPI when built
 * with it (SENTE_HAVE_MPI). The NCCL transport is in comm_nccl.c. */
#include "train/comm_internal.h"

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"

#ifndef SENTE_HAVE_MPI
#define SENTE_HAVE_MPI 0
#endif
#if SENTE_HAVE_MPI
#include <mpi.h>
#endif

comm *comm_alloc(const comm_ops *ops, comm_kind kind, int rank, int size)
{
	comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ops = ops;
	c->kind = kind;
	c->rank = rank;
	c->size = size;
	return c;
}

bool comm_mpi_built(void)
{
	return SENTE_HAVE_MPI ? true : false;
}

bool comm_launched_by_mpi(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

int comm_rank(const comm *c)
{
	return c->rank;
}

int comm_size(const comm *c)
{
	return c->size;
}

comm_kind comm_get_kind(const comm *c)
{
	return c->kind;
}

const char *comm_name(const comm *c)
{
	static const char *const names[] = { "single", "threads", "mpi", "nccl" };
	return names[c->kind];
}

double comm_seconds(const comm *c)
{
	return c->seconds;
}

const char *comm_error(const comm *c)
{
	return c->err;
}

int comm_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	assert(op == COMM_OP_SUM || op == COMM_OP_AVG);
	if (n == 0)
		return 0;
	double t0 = clock_now();
	int rc = c->ops->allreduce(c, buf, n, op);
	c->seconds += clock_now() - t0;
	return rc;
}

int comm_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	assert(root >= 0 && root < c->size);
	if (bytes == 0)
		return 0;
	double t0 = clock_now();
	int rc = c->ops->broadcast(c, buf, bytes, root);
	c->seconds += clock_now() - t0;
	return rc;
}

/* A comm of one rank still calls its transport: a one-GPU NCCL
 * communicator is how the NCCL path gets tested on a single device. */
int comm_barrier(comm *c)
{
	double t0 = clock_now();
	int rc = c->ops->barrier(c);
	c->seconds += clock_now() - t0;
	return rc;
}

void comm_set_stream(comm *c, void *stream)
{
	c->stream = stream;
	if (c->ops->set_stream)
		c->ops->set_stream(c, stream);
}

void *comm_get_stream(const comm *c)
{
	return c->stream;
}

void comm_hex_encode(const void *bytes, size_t n, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = bytes;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[b[i] >> 4];
		hex[2 * i + 1] = digits[b[i] & 15];
	}
	hex[2 * n] = '\0';
}

static int hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int comm_hex_decode(const char *hex, void *bytes, size_t n)
{
	unsigned char *b = bytes;
	if (!hex || strlen(hex) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int no_p2p(comm *c)
{
	snprintf(c->err, sizeof(c->err), "the %s transport has no point-to-point messages",
		 comm_name(c));
	return -1;
}

int comm_send(comm *c, const void *buf, size_t bytes, int dest, int tag)
{
	assert(dest >= 0 && dest < c->size && tag >= 0);
	if (!c->ops->send)
		return no_p2p(c);
	double t0 = clock_now();
	int rc = c->ops->send(c, buf, bytes, dest, tag);
	c->seconds += clock_now() - t0;
	return rc;
}

int comm_probe(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out)
{
	assert(src == COMM_ANY || (src >= 0 && src < c->size));
	int s_ = 0, t_ = 0;
	size_t b_ = 0;
	if (!c->ops->probe)
		return no_p2p(c);
	int rc = c->ops->probe(c, src, tag, &s_, &t_, &b_);
	if (rc == 1) {
		if (src_out)
			*src_out = s_;
		if (tag_out)
			*tag_out = t_;
		if (bytes_out)
			*bytes_out = b_;
	}
	return rc;
}

int comm_recv(comm *c, void *buf, size_t bytes, int src, int tag)
{
	assert(src >= 0 && src < c->size && tag >= 0);
	if (!c->ops->recv)
		return no_p2p(c);
	double t0 = clock_now();
	int rc = c->ops->recv(c, buf, bytes, src, tag);
	c->seconds += clock_now() - t0;
	return rc;
}

void comm_abort(comm *c, int code)
{
	if (c->ops->abort)
		c->ops->abort(c, code);
}

void comm_free(comm *c)
{
	if (!c || c->in_group)
		return;
	if (c->ops->destroy)
		c->ops->destroy(c);
	free(c);
}

/* ---- a rank's mailbox: point to point within one process ---------------- */

typedef struct comm_msg {
	struct comm_msg *next; /* the next message, in arrival order */
	int src, tag;          /* who sent it, and what it is */
	size_t bytes;          /* payload size */
	unsigned char data[];  /* payload */
} comm_msg;

typedef struct comm_mailbox {
	pthread_mutex_t mu;     /* guards the list */
	pthread_cond_t cv;      /* wakes a receiver */
	comm_msg *head, *tail;  /* waiting messages, oldest first */
} comm_mailbox;

static void mailbox_init(comm_mailbox *mb)
{
	pthread_mutex_init(&mb->mu, NULL);
	pthread_cond_init(&mb->cv, NULL);
	mb->head = mb->tail = NULL;
}

static void mailbox_destroy(comm_mailbox *mb)
{
	for (comm_msg *m = mb->head, *next; m; m = next) {
		next = m->next;
		free(m);
	}
	pthread_mutex_destroy(&mb->mu);
	pthread_cond_destroy(&mb->cv);
}

static int mailbox_put(comm *c, comm_mailbox *mb, const void *buf, size_t bytes, int tag)
{
	comm_msg *m = malloc(sizeof(*m) + bytes);
	if (!m) {
		snprintf(c->err, sizeof(c->err), "out of memory for a %zu-byte message", bytes);
		return -1;
	}
	m->next = NULL;
	m->src = c->rank;
	m->tag = tag;
	m->bytes = bytes;
	if (bytes)
		memcpy(m->data, buf, bytes);
	pthread_mutex_lock(&mb->mu);
	if (mb->tail)
		mb->tail->next = m;
	else
		mb->head = m;
	mb->tail = m;
	pthread_cond_broadcast(&mb->cv);
	pthread_mutex_unlock(&mb->mu);
	return 0;
}

/* The oldest message matching src and tag (COMM_ANY matches all), and the
 * one before it (NULL: it is the head). Called with mb->mu held. */
static comm_msg *mailbox_find(comm_mailbox *mb, int src, int tag, comm_msg **prev)
{
	*prev = NULL;
	for (comm_msg *m = mb->head; m; *prev = m, m = m->next)
		if ((src == COMM_ANY || m->src == src) && (tag == COMM_ANY || m->tag == tag))
			return m;
	return NULL;
}

static int mailbox_probe(comm_mailbox *mb, int src, int tag, int *src_out, int *tag_out,
			 size_t *bytes_out)
{
	comm_msg *prev;
	pthread_mutex_lock(&mb->mu);
	comm_msg *m = mailbox_find(mb, src, tag, &prev);
	if (m) {
		*src_out = m->src;
		*tag_out = m->tag;
		*bytes_out = m->bytes;
	}
	pthread_mutex_unlock(&mb->mu);
	return m != NULL;
}

static int mailbox_take(comm *c, comm_mailbox *mb, void *buf, size_t bytes, int src, int tag)
{
	comm_msg *m, *prev;
	pthread_mutex_lock(&mb->mu);
	while (!(m = mailbox_find(mb, src, tag, &prev)))
		pthread_cond_wait(&mb->cv, &mb->mu);
	if (m->bytes != bytes) {
		pthread_mutex_unlock(&mb->mu);
		snprintf(c->err, sizeof(c->err), "a %zu-byte message received into %zu bytes",
			 m->bytes, bytes);
		return -1;
	}
	if (prev)
		prev->next = m->next;
	else
		mb->head = m->next;
	if (mb->tail == m)
		mb->tail = prev;
	pthread_mutex_unlock(&mb->mu);
	if (bytes)
		memcpy(buf, m->data, bytes);
	free(m);
	return 0;
}

/* ---- single process ------------------------------------------------------ */

static int single_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	return 0;
}

static int single_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	return 0;
}

static int single_barrier(comm *c)
{
	return 0;
}

/* The single comm's impl is its mailbox: messages to itself. */
static int single_send(comm *c, const void *buf, size_t bytes, int dest, int tag)
{
	return mailbox_put(c, c->impl, buf, bytes, tag);
}

static int single_probe(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out)
{
	return mailbox_probe(c->impl, src, tag, src_out, tag_out, bytes_out);
}

static int single_recv(comm *c, void *buf, size_t bytes, int src, int tag)
{
	return mailbox_take(c, c->impl, buf, bytes, src, tag);
}

static void single_destroy(comm *c)
{
	if (c->impl)
		mailbox_destroy(c->impl);
	free(c->impl);
}

static const comm_ops single_ops = { single_allreduce, single_broadcast, single_barrier, NULL,
				     NULL, single_destroy, single_send, single_probe, single_recv };

comm *comm_new_single(void)
{
	comm *c = comm_alloc(&single_ops, COMM_KIND_SINGLE, 0, 1);
	comm_mailbox *mb = malloc(sizeof(*mb));
	if (!c || !mb) {
		free(c);
		free(mb);
		return NULL;
	}
	mailbox_init(mb);
	c->impl = mb;
	return c;
}

/* ---- ranks as threads of one process ------------------------------------- */

struct comm_group {
	int n;                 /* ranks */
	comm **ranks;          /* one comm per rank */
	pthread_mutex_t mu;    /* guards the barrier */
	pthread_cond_t cv;     /* wakes the barrier's waiters */
	int waiting;           /* ranks inside the current barrier */
	uint64_t generation;   /* barriers completed */
	void **posted;         /* [n] each rank's buffer for the current collective */
	comm_mailbox *boxes;   /* [n] each rank's incoming messages */
};

static void group_wait(comm_group *g)
{
	pthread_mutex_lock(&g->mu);
	uint64_t gen = g->generation;
	if (++g->waiting == g->n) {
		g->waiting = 0;
		g->generation++;
		pthread_cond_broadcast(&g->cv);
	} else {
		while (gen == g->generation)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	pthread_mutex_unlock(&g->mu);
}

/* Every rank sums all posted buffers in rank order into its own copy, so
 * the results are bit-identical; buffers are overwritten only after every
 * rank has read them. */
static int threads_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	comm_group *g = c->impl;
	float *sum = malloc(n * sizeof(float));
	int ok = sum != NULL, rc = 0;
	g->posted[c->rank] = buf;
	group_wait(g);
	if (ok) {
		const float *b0 = g->posted[0];
		memcpy(sum, b0, n * sizeof(float));
		for (int r = 1; r < g->n; r++) {
			const float *br = g->posted[r];
			for (size_t i = 0; i < n; i++)
				sum[i] += br[i];
		}
		if (op == COMM_OP_AVG) {
			float inv = 1.0f / (float)g->n;
			for (size_t i = 0; i < n; i++)
				sum[i] *= inv;
		}
	}
	group_wait(g);
	if (ok)
		memcpy(buf, sum, n * sizeof(float));
	else {
		snprintf(c->err, sizeof(c->err), "out of memory for a %zu-float all-reduce", n);
		rc = -1;
	}
	free(sum);
	return rc;
}

static int threads_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	comm_group *g = c->impl;
	g->posted[c->rank] = buf;
	group_wait(g);
	if (c->rank != root)
		memcpy(buf, g->posted[root], bytes);
	group_wait(g);
	return 0;
}

static int threads_barrier(comm *c)
{
	group_wait(c->impl);
	return 0;
}

static int threads_send(comm *c, const void *buf, size_t bytes, int dest, int tag)
{
	comm_group *g = c->impl;
	return mailbox_put(c, &g->boxes[dest], buf, bytes, tag);
}

static int threads_probe(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out)
{
	comm_group *g = c->impl;
	return mailbox_probe(&g->boxes[c->rank], src, tag, src_out, tag_out, bytes_out);
}

static int threads_recv(comm *c, void *buf, size_t bytes, int src, int tag)
{
	comm_group *g = c->impl;
	return mailbox_take(c, &g->boxes[c->rank], buf, bytes, src, tag);
}

static const comm_ops threads_ops = { threads_allreduce, threads_broadcast, threads_barrier, NULL,
				      NULL, NULL, threads_send, threads_probe, threads_recv };

comm_group *comm_group_new(int n)
{
	if (n < 1)
		return NULL;
	comm_group *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->n = n;
	g->ranks = calloc((size_t)n, sizeof(*g->ranks));
	g->posted = calloc((size_t)n, sizeof(*g->posted));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	if (!g->ranks || !g->posted)
		goto fail;
	g->boxes = calloc((size_t)n, sizeof(*g->boxes));
	if (!g->boxes)
		goto fail;
	for (int r = 0; r < n; r++)
		mailbox_init(&g->boxes[r]);
	for (int r = 0; r < n; r++) {
		g->ranks[r] = comm_alloc(&threads_ops, COMM_KIND_THREADS, r, n);
		if (!g->ranks[r])
			goto fail;
		g->ranks[r]->impl = g;
		g->ranks[r]->in_group = true;
	}
	return g;
fail:
	comm_group_free(g);
	return NULL;
}

comm *comm_group_rank(comm_group *g, int rank)
{
	assert(rank >= 0 && rank < g->n);
	return g->ranks[rank];
}

void comm_group_free(comm_group *g)
{
	if (!g)
		return;
	if (g->ranks)
		for (int r = 0; r < g->n; r++)
			free(g->ranks[r]);
	free(g->ranks);
	free(g->posted);
	if (g->boxes)
		for (int r = 0; r < g->n; r++)
			mailbox_destroy(&g->boxes[r]);
	free(g->boxes);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	free(g);
}

/* ---- MPI ----------------------------------------------------------------- */

#if SENTE_HAVE_MPI
/* MPI counts are ints: larger buffers go in chunks. */
#define MPI_CHUNK ((size_t)1 << 30)

/* A comm's MPI communicator: the world, or a part of it (comm_split). */
typedef struct mpi_impl {
	MPI_Comm mc; /* MPI_COMM_WORLD, or one of MPI_Comm_split's */
	bool ours;   /* this comm initialised MPI (and finalises it) */
} mpi_impl;
#define MC(c) (((mpi_impl *)(c)->impl)->mc)

static int mpi_fail(comm *c, const char *what, int code)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof(msg), "error %d", code);
	snprintf(c->err, sizeof(c->err), "%s: %.200s", what, msg);
	return -1;
}

static int mpi_allreduce(comm *c, float *buf, size_t n, comm_op op)
{
	for (size_t off = 0; off < n; off += MPI_CHUNK) {
		int cnt = (int)(n - off < MPI_CHUNK ? n - off : MPI_CHUNK);
		int e = MPI_Allreduce(MPI_IN_PLACE, buf + off, cnt, MPI_FLOAT, MPI_SUM, MC(c));
		if (e != MPI_SUCCESS)
			return mpi_fail(c, "MPI_Allreduce", e);
	}
	if (op == COMM_OP_AVG) {
		float inv = 1.0f / (float)c->size;
		for (size_t i = 0; i < n; i++)
			buf[i] *= inv;
	}
	return 0;
}

static int mpi_broadcast(comm *c, void *buf, size_t bytes, int root)
{
	for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
		int cnt = (int)(bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK);
		int e = MPI_Bcast((char *)buf + off, cnt, MPI_BYTE, root, MC(c));
		if (e != MPI_SUCCESS)
			return mpi_fail(c, "MPI_Bcast", e);
	}
	return 0;
}

static int mpi_barrier(comm *c)
{
	int e = MPI_Barrier(MC(c));
	return e == MPI_SUCCESS ? 0 : mpi_fail(c, "MPI_Barrier", e);
}

static void mpi_destroy(comm *c)
{
	mpi_impl *m = c->impl;
	int done = 0;
	if (!m)
		return;
	if (MPI_Finalized(&done) == MPI_SUCCESS && !done) {
		if (m->mc != MPI_COMM_WORLD)
			MPI_Comm_free(&m->mc);
		if (m->ours)
			MPI_Finalize();
	}
	free(m);
}

static void mpi_abort(comm *c, int code)
{
	MPI_Abort(MC(c), code);
}

/* Point to point: one message of at most INT_MAX bytes (a model or a
 * game record is far smaller). */
static int mpi_size_ok(comm *c, size_t bytes)
{
	if (bytes <= INT_MAX)
		return 1;
	snprintf(c->err, sizeof(c->err), "a %zu-byte message is over MPI's %d", bytes, INT_MAX);
	return 0;
}

static int mpi_send(comm *c, const void *buf, size_t bytes, int dest, int tag)
{
	if (!mpi_size_ok(c, bytes))
		return -1;
	int e = MPI_Send(buf, (int)bytes, MPI_BYTE, dest, tag, MC(c));
	return e == MPI_SUCCESS ? 0 : mpi_fail(c, "MPI_Send", e);
}

static int mpi_probe(comm *c, int src, int tag, int *src_out, int *tag_out, size_t *bytes_out)
{
	int flag = 0, count = 0;
	MPI_Status st;
	int e = MPI_Iprobe(src == COMM_ANY ? MPI_ANY_SOURCE : src, tag == COMM_ANY ? MPI_ANY_TAG : tag,
			   MC(c), &flag, &st);
	if (e != MPI_SUCCESS)
		return mpi_fail(c, "MPI_Iprobe", e);
	if (!flag)
		return 0;
	MPI_Get_count(&st, MPI_BYTE, &count);
	*src_out = st.MPI_SOURCE;
	*tag_out = st.MPI_TAG;
	*bytes_out = (size_t)count;
	return 1;
}

static int mpi_recv(comm *c, void *buf, size_t bytes, int src, int tag)
{
	if (!mpi_size_ok(c, bytes))
		return -1;
	MPI_Status st;
	int count = 0;
	int e = MPI_Recv(buf, (int)bytes, MPI_BYTE, src, tag, MC(c), &st);
	if (e != MPI_SUCCESS)
		return mpi_fail(c, "MPI_Recv", e);
	MPI_Get_count(&st, MPI_BYTE, &count);
	if ((size_t)count != bytes) {
		snprintf(c->err, sizeof(c->err), "a %d-byte message received into %zu bytes", count,
			 bytes);
		return -1;
	}
	return 0;
}

static const comm_ops mpi_ops = { mpi_allreduce, mpi_broadcast, mpi_barrier, NULL, mpi_abort,
				  mpi_destroy, mpi_send, mpi_probe, mpi_recv };

static comm *comm_new_mpi(char *err, size_t errlen)
{
	int inited = 0, provided = 0, rank = 0, size = 1;
	bool ours = false;
	MPI_Initialized(&inited);
	if (!inited) {
		/* One thread at a time calls MPI, not always the main one: a
		 * self-play worker sends each game from the thread that finished
		 * it (selfplay's game callback, never two at once). */
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
			snprintf(err, errlen, "MPI_Init_thread failed");
			return NULL;
		}
		ours = true;
	}
	/* Failures come back as codes, not as an abort of every rank. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	comm *c = comm_alloc(&mpi_ops, COMM_KIND_MPI, rank, size);
	mpi_impl *m = calloc(1, sizeof(*m));
	if (!c || !m) {
		snprintf(err, errlen, "out of memory");
		free(c);
		free(m);
		if (ours)
			MPI_Finalize();
		return NULL;
	}
	m->mc = MPI_COMM_WORLD;
	m->ours = ours;
	c->impl = m;
	return c;
}

static comm *mpi_split(comm *c, int color, int key, char *err, size_t errlen)
{
	MPI_Comm nc;
	int rank = 0, size = 1;
	int e = MPI_Comm_split(MC(c), color, key, &nc);
	if (e != MPI_SUCCESS) {
		mpi_fail(c, "MPI_Comm_split", e);
		snprintf(err, errlen, "%s", c->err);
		return NULL;
	}
	MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
	MPI_Comm_rank(nc, &rank);
	MPI_Comm_size(nc, &size);
	comm *s = comm_alloc(&mpi_ops, COMM_KIND_MPI, rank, size);
	mpi_impl *m = calloc(1, sizeof(*m));
	if (!s || !m) {
		snprintf(err, errlen, "out of memory");
		free(s);
		free(m);
		MPI_Comm_free(&nc);
		return NULL;
	}
	m->mc = nc;
	s->impl = m;
	return s;
}

#endif

comm *comm_new_world(char *err, size_t errlen)
{
	comm *c = NULL;
	if (!comm_launched_by_mpi()) {
		c = comm_new_single();
		if (!c)
			snprintf(err, errlen, "out of memory");
		return c;
	}
#if SENTE_HAVE_MPI
	c = comm_new_mpi(err, errlen);
#else
	snprintf(err, errlen, "started by an MPI launcher, but this sente was built without MPI "
		 "(install libopenmpi-dev and rebuild: the Makefile says 'sente: MPI found')");
#endif
	return c;
}

comm *comm_split(comm *c, int color, int key, char *err, size_t errlen)
{
	if (c->kind == COMM_KIND_SINGLE) {
		comm *s = comm_new_single();
		if (!s)
			snprintf(err, errlen, "out of memory");
		return s;
	}
#if SENTE_HAVE_MPI
	if (c->kind == COMM_KIND_MPI)
		return mpi_split(c, color, key, err, errlen);
#endif
	snprintf(err, errlen, "a %s comm cannot be split (make the ranks' comms directly)",
		 comm_name(c));
	(void)color;
	(void)key;
	return NULL;
}
