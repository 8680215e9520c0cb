/* mcts.c: tree-parallel PUCT search (see mcts.h). */
#include "search/mcts.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/clock.h"
#include "engine/game_desc.h"
#include "engine/go.h"
#include "engine/rng.h"

#define MCTS_MAX_DEPTH 2048
#define MCTS_MAX_THREADS 256
#define MCTS_NONE UINT32_MAX
/* Children a node keeps first, in order of prior (see expand). */
#define MCTS_SORTED 8

enum { NODE_LEAF = 0, NODE_EXPANDING = 1, NODE_EXPANDED = 2, NODE_TERMINAL = 3 };

typedef struct mcts_node {
	_Atomic int32_t visits;       /* completed playouts through the node */
	_Atomic int32_t vloss;        /* descents in flight through the node */
	_Atomic uint64_t wsum;        /* double bits: sum of values, mover's view */
	_Atomic uint64_t w2sum;       /* double bits: sum of squared values */
	float prior;                  /* policy prior of the move into the node */
	float value;                  /* mover's view: the game's value when
				       * NODE_TERMINAL, else the network's value
				       * once evaluated (Gumbel's mixed value) */
	uint32_t first_child;         /* pool index of the first child */
	uint16_t n_children;          /* children, contiguous from first_child */
	int16_t move;                 /* the move into the node */
	_Atomic uint8_t state;        /* NODE_* */
	_Atomic uint32_t ssum;        /* float bits: sum of the score head's answers,
				       * mover's view (networks with the head) */
} mcts_node;
/* The score sum is a float so that it fits the padding of the node's 48
 * bytes: a tree's memory is its nodes. */
_Static_assert(sizeof(mcts_node) == 48, "mcts_node grew");

/* One arena of nodes; the tree lives in one, the other takes the subtree
 * kept on tree reuse. */
typedef struct mcts_arena {
	mcts_node *nodes;             /* [capacity] */
	_Atomic uint32_t used;        /* bump pointer */
} mcts_arena;

/* A leaf claimed for expansion, waiting for its evaluation. */
typedef struct mcts_leaf {
	game game;                     /* position at the leaf */
	float policy[GAME_MAX_ACTIONS]; /* network answer */
	int legal[GAME_MAX_ACTIONS];   /* its legal moves, when the evaluation gave them */
	int depth;                     /* nodes on the path */
	uint32_t path[MCTS_MAX_DEPTH]; /* root .. leaf */
} mcts_leaf;

typedef struct mcts_thread {
	struct mcts *m;               /* owner */
	pthread_t thread;             /* the search thread */
	mcts_leaf *leaves;            /* [gather] leaves of the current round */
	int gather;                   /* room in leaves[] */
	eval_scratch *scratch;        /* for evaluating the leaves as one batch */
	const game **games;           /* [gather] pointers handed to eval_batch */
	float **policies;             /* [gather] */
	float *values;                /* [gather] */
	float *scores;                /* [gather] score head answers, NAN without */
	int **legals;                 /* [gather] each leaf's legal[] */
	int *n_legal;                 /* [gather] their counts, -1 until evaluated */
	int round_done;               /* round_gather: playouts ended in a finished game */
	int round_collisions;         /* round_gather: descents that collided */
} mcts_thread;

/* Gumbel root search: the considered moves and the phase of sequential
 * halving the search is in. Set up once the root is expanded (by the
 * caller's thread), read and advanced by descents under `mu`. */
typedef struct mcts_gumbel {
	bool ready;                       /* set up for this search */
	float score[GAME_MAX_ACTIONS];    /* per root child: Gumbel noise + log prior */
	uint16_t rem[GAME_MAX_ACTIONS];   /* root children still considered (child index) */
	int n_rem;                        /* their count */
	int phases;                       /* ceil(log2(moves considered at first)), >= 1 */
	int64_t sims;                     /* the search's playouts when set up */
	int target;                       /* visits each considered child reaches this phase */
	pthread_mutex_t mu;
} mcts_gumbel;

struct mcts {
	evaluator *ev;                /* leaf evaluation (not owned) */
	bool scores;                  /* the network has a score head: nodes sum it */
	mcts_options opt;             /* limits and parameters */
	mcts_arena arena[2];          /* the tree and the spare */
	int cur;                      /* arena holding the tree */
	uint32_t capacity;            /* nodes per arena */
	uint32_t root;                /* root node index, MCTS_NONE when empty */
	game root_game;               /* position at the root */
	bool have_root_game;          /* root_game is set */
	bool root_noised;             /* noise already mixed into the root */
	bool solo;                    /* one thread descends this search (opt.threads
				       * is 1): node counters need no locked updates */
	bool banned_tree;             /* the tree was searched with bans: below the
				       * root its visits need not follow the priors'
				       * order, so select_child reads every child */
	mcts_thread *threads;         /* [n_threads] */
	int n_threads;                /* allocated thread contexts */
	int running_threads;          /* started by mcts_start */
	atomic_int stop;              /* threads must stop */
	atomic_int interrupted;       /* mcts_interrupt: stop every search until mcts_clear */
	atomic_int pool_full;         /* an expansion found no room */
	_Atomic int64_t started;      /* playouts begun this search */
	int64_t budget;               /* playouts allowed this search */
	atomic_uint_fast64_t completed, collisions; /* this search */
	double t_start, deadline;     /* monotonic seconds; deadline 0 = none */
	double t_end;                 /* when the last search ended */
	uint64_t rng;                 /* noise and move choice (caller's thread) */
	pthread_mutex_t expand_mu;    /* with `expanded`: */
	pthread_cond_t expanded;      /* signalled when a round's leaves are expanded */
	mcts_avoid *avoid;            /* banned moves, NULL when none */
	mcts_gumbel gumbel;           /* the root's sequential halving */
};

/* ---- small helpers -------------------------------------------------------- */


static double rng_normal(uint64_t *s)
{
	double u1 = rng_uniform(s), u2 = rng_uniform(s);
	if (u1 < 1e-300)
		u1 = 1e-300;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Gamma(alpha, 1) by Marsaglia and Tsang; alpha < 1 through the boost. */
static double rng_gamma(uint64_t *s, double alpha)
{
	if (alpha < 1) {
		double u = rng_uniform(s);
		return rng_gamma(s, alpha + 1) * pow(u > 1e-300 ? u : 1e-300, 1 / alpha);
	}
	double d = alpha - 1.0 / 3, c = 1 / sqrt(9 * d);
	for (;;) {
		double x = rng_normal(s), v = 1 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = rng_uniform(s);
		if (log(u > 1e-300 ? u : 1e-300) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v;
	}
}

static double load_d(_Atomic uint64_t *a)
{
	uint64_t bits = atomic_load_explicit(a, memory_order_relaxed);
	double d;
	memcpy(&d, &bits, sizeof(d));
	return d;
}

static void store_d(_Atomic uint64_t *a, double x)
{
	uint64_t bits;
	memcpy(&bits, &x, sizeof(bits));
	atomic_store_explicit(a, bits, memory_order_relaxed);
}

/* The node counters' updates. A tree that one thread descends (`solo`:
 * self-play's and every single-threaded search) takes a load and a store,
 * not a locked read-modify-write: no other thread writes the node, and
 * readers (analysis output) see the old or the new value either way. */
static void add_d(bool solo, _Atomic uint64_t *a, double x)
{
	if (solo) {
		store_d(a, load_d(a) + x);
		return;
	}
	uint64_t old = atomic_load_explicit(a, memory_order_relaxed), new;
	do {
		double d;
		memcpy(&d, &old, sizeof(d));
		d += x;
		memcpy(&new, &d, sizeof(d));
	} while (!atomic_compare_exchange_weak_explicit(a, &old, new, memory_order_relaxed,
							memory_order_relaxed));
}

static float load_f(_Atomic uint32_t *a)
{
	uint32_t bits = atomic_load_explicit(a, memory_order_relaxed);
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static void add_f(bool solo, _Atomic uint32_t *a, float x)
{
	uint32_t old, new;
	if (solo) {
		float f = load_f(a) + x;
		memcpy(&new, &f, sizeof(f));
		atomic_store_explicit(a, new, memory_order_relaxed);
		return;
	}
	old = atomic_load_explicit(a, memory_order_relaxed);
	do {
		float f;
		memcpy(&f, &old, sizeof(f));
		f += x;
		memcpy(&new, &f, sizeof(f));
	} while (!atomic_compare_exchange_weak_explicit(a, &old, new, memory_order_relaxed,
							memory_order_relaxed));
}

/* Adds d to a node's visit or descent count; the store releases (see
 * backup). */
static void add_i(bool solo, _Atomic int32_t *a, int32_t d)
{
	if (solo)
		atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + d,
				      memory_order_release);
	else
		atomic_fetch_add_explicit(a, d, memory_order_release);
}

static inline mcts_node *node_at(mcts *m, uint32_t i) { return &m->arena[m->cur].nodes[i]; }

/* A fresh node: one not yet published to other threads (a new child, or
 * the root before a search), so it is written as a whole, not a field at
 * a time through atomic stores. */
static void node_reset(mcts_node *n, int move, float prior)
{
	*n = (mcts_node){ .prior = prior, .move = (int16_t)move, .state = NODE_LEAF };
}

/* Takes k contiguous nodes from the current arena; MCTS_NONE when full. */
static uint32_t alloc_nodes(mcts *m, uint32_t k)
{
	mcts_arena *a = &m->arena[m->cur];
	uint32_t at = atomic_fetch_add(&a->used, k);
	if (at > m->capacity - k || k > m->capacity) {
		atomic_store(&m->pool_full, 1);
		return MCTS_NONE;
	}
	return at;
}

/* ---- options -------------------------------------------------------------- */

mcts_options mcts_options_default(void)
{
	mcts_options o = {
		.threads = 2,
		.max_visits = 800,
		.cpuct = 1.1f,
		.cpuct_base = 19652.0f,
		.cpuct_log = 0.45f,
		.fpu_reduction = 0.25f,
		.fpu_root = 0.25f,
		.fpu_root_noise = 0.0f,
		.virtual_loss = 1,
		.gather = 1,
		.noise = false,
		.noise_alpha_sum = 10.83f,
		.noise_eps = 0.25f,
		.gumbel_m = 16,
		.max_memory = (size_t)512 << 20,
		.seed = 1,
	};
	return o;
}

/* ---- lifetime ------------------------------------------------------------- */

static void thread_free(mcts_thread *t)
{
	free(t->leaves);
	eval_scratch_free(t->scratch);
	free(t->games);
	free(t->policies);
	free(t->values);
	free(t->scores);
	free(t->legals);
	free(t->n_legal);
	memset(t, 0, sizeof(*t));
}

/* Makes n thread contexts, each with room for `gather` leaves. */
static int ensure_threads(mcts *m, int n, int gather)
{
	if (gather < 1)
		gather = 1;
	if (n <= m->n_threads && (n == 0 || m->threads[0].gather == gather))
		return 0;
	for (int i = 0; i < m->n_threads; i++)
		thread_free(&m->threads[i]);
	free(m->threads);
	m->n_threads = 0;
	m->threads = calloc((size_t)n, sizeof(mcts_thread));
	if (!m->threads)
		return -1;
	m->n_threads = n;
	for (int i = 0; i < n; i++) {
		mcts_thread *t = &m->threads[i];
		t->m = m;
		t->gather = gather;
		t->leaves = malloc(sizeof(mcts_leaf) * (size_t)gather);
		t->scratch = eval_scratch_new(m->ev, gather);
		t->games = malloc(sizeof(game *) * (size_t)gather);
		t->policies = malloc(sizeof(float *) * (size_t)gather);
		t->values = malloc(sizeof(float) * (size_t)gather);
		t->scores = malloc(sizeof(float) * (size_t)gather);
		t->legals = malloc(sizeof(int *) * (size_t)gather);
		t->n_legal = malloc(sizeof(int) * (size_t)gather);
		if (!t->leaves || !t->scratch || !t->games || !t->policies || !t->values ||
		    !t->scores || !t->legals || !t->n_legal)
			return -1;
		for (int k = 0; k < gather; k++) {
			t->games[k] = &t->leaves[k].game;
			t->policies[k] = t->leaves[k].policy;
			t->legals[k] = t->leaves[k].legal;
		}
	}
	return 0;
}

size_t mcts_memory_for(int visits, int actions)
{
	return 2 * sizeof(mcts_node) * ((size_t)(visits > 0 ? visits : 0) + 1) *
	       (size_t)(actions > 0 ? actions : 1);
}

mcts *mcts_new(evaluator *ev, const mcts_options *opt, char *err, size_t errlen)
{
	mcts *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->ev = ev;
	m->scores = (eval_heads(ev) & NN_HEAD_SCORE) != 0;
	m->opt = opt ? *opt : mcts_options_default();
	pthread_mutex_init(&m->expand_mu, NULL);
	pthread_mutex_init(&m->gumbel.mu, NULL);
	clock_cond_init(&m->expanded); /* waits use clock_deadline */
	if (m->opt.threads < 1)
		m->opt.threads = 1;
	if (m->opt.threads > MCTS_MAX_THREADS)
		m->opt.threads = MCTS_MAX_THREADS;
	size_t cap = m->opt.max_memory / 2 / sizeof(mcts_node);
	if (cap < 1024)
		cap = 1024;
	if (cap > UINT32_MAX - 1024)
		cap = UINT32_MAX - 1024;
	m->capacity = (uint32_t)cap;
	/* calloc of a large block maps zero pages lazily: memory is touched
	 * only as the tree grows. */
	for (int i = 0; i < 2; i++) {
		m->arena[i].nodes = calloc(cap, sizeof(mcts_node));
		if (!m->arena[i].nodes) {
			snprintf(err, errlen, "cannot allocate %zu MB for the search tree",
				 cap * sizeof(mcts_node) >> 20);
			mcts_free(m);
			return NULL;
		}
	}
	m->root = MCTS_NONE;
	m->rng = m->opt.seed * 0x2545f4914f6cdd1dULL + 1;
	if (ensure_threads(m, m->opt.threads, m->opt.gather) != 0) {
		snprintf(err, errlen, "out of memory");
		mcts_free(m);
		return NULL;
	}
	return m;
}

void mcts_free(mcts *m)
{
	if (!m)
		return;
	mcts_stop(m);
	free(m->arena[0].nodes);
	free(m->arena[1].nodes);
	for (int i = 0; i < m->n_threads; i++)
		thread_free(&m->threads[i]);
	free(m->threads);
	free(m->avoid);
	pthread_cond_destroy(&m->expanded);
	pthread_mutex_destroy(&m->expand_mu);
	pthread_mutex_destroy(&m->gumbel.mu);
	free(m);
}

void mcts_set_options(mcts *m, const mcts_options *opt)
{
	mcts_stop(m);
	size_t old_mem = m->opt.max_memory;
	m->opt = *opt;
	m->opt.max_memory = old_mem; /* the pool keeps its size */
	if (m->opt.threads < 1)
		m->opt.threads = 1;
	if (m->opt.threads > MCTS_MAX_THREADS)
		m->opt.threads = MCTS_MAX_THREADS;
	if (ensure_threads(m, m->opt.threads, m->opt.gather) != 0) {
		/* Out of memory: fall back to one plain thread. */
		m->opt.threads = 1;
		m->opt.gather = 1;
		ensure_threads(m, 1, 1);
	}
}

void mcts_set_evaluator(mcts *m, evaluator *ev)
{
	mcts_clear(m);
	if (ev == m->ev)
		return;
	/* Each thread's scratch is sized for its evaluator's inputs. */
	int threads = m->n_threads, gather = threads > 0 ? m->threads[0].gather : 1;
	for (int i = 0; i < m->n_threads; i++)
		thread_free(&m->threads[i]);
	free(m->threads);
	m->threads = NULL;
	m->n_threads = 0;
	m->ev = ev;
	m->scores = (eval_heads(ev) & NN_HEAD_SCORE) != 0;
	if (ensure_threads(m, threads > 0 ? threads : 1, gather) != 0) {
		m->opt.threads = 1;
		m->opt.gather = 1;
		ensure_threads(m, 1, 1);
	}
}

void mcts_reset(mcts *m, evaluator *ev, const mcts_options *opt)
{
	mcts_set_evaluator(m, ev); /* drops the tree */
	mcts_set_options(m, opt);
	mcts_set_avoid(m, NULL);
	m->have_root_game = false;
	m->rng = m->opt.seed * 0x2545f4914f6cdd1dULL + 1;
}

void mcts_clear(mcts *m)
{
	mcts_stop(m);
	atomic_store(&m->arena[m->cur].used, 0);
	atomic_store(&m->pool_full, 0);
	atomic_store(&m->interrupted, 0);
	m->root = MCTS_NONE;
	m->root_noised = false;
	m->gumbel.ready = false;
}

void mcts_interrupt(mcts *m)
{
	atomic_store(&m->interrupted, 1);
	atomic_store(&m->stop, 1);
}

/* ---- tree reuse ----------------------------------------------------------- */

/* Copies the subtree at `from` (current arena) into the other arena and
 * makes it the tree. Children stay contiguous. */
static void keep_subtree(mcts *m, uint32_t from)
{
	mcts_arena *src = &m->arena[m->cur], *dst = &m->arena[1 - m->cur];
	uint32_t used = 0;
	/* Breadth-first: each copied node's children are copied as one block
	 * when the node is visited; dst itself serves as the queue. */
	dst->nodes[used++] = src->nodes[from];
	for (uint32_t q = 0; q < used; q++) {
		mcts_node *n = &dst->nodes[q];
		uint8_t st = atomic_load(&n->state);
		if (st != NODE_EXPANDED || n->n_children == 0) {
			if (st == NODE_EXPANDING)
				atomic_store(&n->state, NODE_LEAF);
			n->n_children = 0;
			continue;
		}
		uint32_t first = used;
		memcpy(&dst->nodes[first], &src->nodes[n->first_child],
		       sizeof(mcts_node) * n->n_children);
		n->first_child = first;
		used += n->n_children;
	}
	atomic_store(&dst->used, used);
	atomic_store(&src->used, 0);
	m->cur = 1 - m->cur;
	m->root = 0;
}

static bool same_setup(const game *a, const game *b)
{
	return a->params.kind == b->params.kind && a->params.size == b->params.size &&
	       game_komi(a) == game_komi(b);
}

void mcts_set_position(mcts *m, const game *g)
{
	mcts_stop(m);
	uint32_t keep = MCTS_NONE;
	if (m->have_root_game && m->root != MCTS_NONE && same_setup(&m->root_game, g)) {
		int n0 = game_move_count(&m->root_game), n1 = game_move_count(g);
		bool prefix = n1 >= n0;
		for (int i = 0; prefix && i < n0; i++)
			prefix = game_history_move(&m->root_game, i) == game_history_move(g, i);
		if (prefix) {
			/* Walk the tree along the new moves, checking that playing
			 * them reproduces g. */
			game *tmp = &m->threads[0].leaves[0].game;
			game_copy(tmp, &m->root_game);
			uint32_t at = m->root;
			for (int i = n0; i < n1 && at != MCTS_NONE; i++) {
				int mv = game_history_move(g, i);
				mcts_node *n = node_at(m, at);
				uint32_t next = MCTS_NONE;
				if (atomic_load(&n->state) == NODE_EXPANDED)
					for (uint32_t c = 0; c < n->n_children; c++)
						if (node_at(m, n->first_child + c)->move == mv)
							next = n->first_child + c;
				if (game_play(tmp, mv) != GAME_OK)
					next = MCTS_NONE;
				at = next;
			}
			if (at != MCTS_NONE && game_hash(tmp) == game_hash(g) &&
			    game_to_move(tmp) == game_to_move(g))
				keep = at;
		}
	}
	game_copy(&m->root_game, g);
	m->have_root_game = true;
	m->root_noised = false;
	m->gumbel.ready = false;
	atomic_store(&m->pool_full, 0);
	if (keep != MCTS_NONE && keep != m->root) {
		keep_subtree(m, keep);
	} else if (keep == MCTS_NONE) {
		atomic_store(&m->arena[m->cur].used, 0);
		m->root = MCTS_NONE;
	}
	/* The root's prior is meaningless; its statistics stay. */
}

/* ---- selection, expansion, backup ---------------------------------------- */

/* Mean value of a node for the player who moved into it, with `vl`
 * in-flight descents counted as losses. */
static inline double node_q(mcts_node *n, int vl_weight, double fpu, int *n_eff)
{
	int v = atomic_load_explicit(&n->visits, memory_order_relaxed);
	int vl = atomic_load_explicit(&n->vloss, memory_order_relaxed) * vl_weight;
	*n_eff = v + vl;
	if (v + vl == 0)
		return fpu;
	return (load_d(&n->wsum) - vl) / (double)(v + vl);
}

/* PUCT's exploration factor for a parent of `total` visits: the cpuct that
 * grows with log(total) (KataGo's), times sqrt(total). */
static double puct_explore(const mcts_options *o, double total)
{
	double c = o->cpuct + o->cpuct_log * log((total + o->cpuct_base + 1) / o->cpuct_base);
	return c * sqrt(total > 1 ? total : 1);
}

/* ban: plies up to which each move is banned for the player to move here
 * (NULL: none); ply: this node's depth, 1 at the root. */
static uint32_t select_child(mcts *m, uint32_t parent_idx, bool is_root, const uint16_t *ban,
			     int ply)
{
	mcts_node *p = node_at(m, parent_idx);
	int pv = atomic_load_explicit(&p->visits, memory_order_relaxed);
	int pvl = atomic_load_explicit(&p->vloss, memory_order_relaxed);
	/* The parent's value for the player to move there is minus its own
	 * (which is kept for the player who moved into it). */
	double parent_q = pv > 0 ? -load_d(&p->wsum) / pv : 0;
	bool forced = is_root && m->opt.noise && m->opt.forced_k > 0;
	float red = !is_root	   ? m->opt.fpu_reduction
		    : m->opt.noise ? m->opt.fpu_root_noise
				   : m->opt.fpu_root;
	double total = (double)pv + pvl;
	double explore = puct_explore(&m->opt, total);
	double best = -1e300;
	uint32_t best_i = MCTS_NONE;
	if (forced) {
		/* The root under noise: forced playouts need the children's
		 * visits first, then the scores. */
		double visited_prior = 0;
		int children_visits = 0;
		for (uint32_t c = 0; c < p->n_children; c++) {
			mcts_node *ch = node_at(m, p->first_child + c);
			int v = atomic_load_explicit(&ch->visits, memory_order_relaxed);
			if (v > 0)
				visited_prior += ch->prior;
			children_visits += v;
		}
		double fpu = parent_q - red * sqrt(visited_prior);
		for (uint32_t k = 0; k < p->n_children; k++) {
			mcts_node *ch = node_at(m, p->first_child + k);
			if (ban && ban[ch->move] >= ply)
				continue;
			int n_eff;
			double q = node_q(ch, m->opt.virtual_loss, fpu, &n_eff);
			double s = q + explore * ch->prior / (1.0 + n_eff);
			/* A root child short of its forced playouts goes first. */
			if (n_eff < mcts_forced_playouts(m->opt.forced_k, ch->prior, children_visits))
				s += 1e9;
			if (s > best) {
				best = s;
				best_i = p->first_child + k;
			}
		}
	} else {
		/* One pass: a child without visits or descents scores
		 * fpu + explore * prior, with the fpu that the visited
		 * children's priors give once all are seen, so of those only
		 * the first of the largest prior can be chosen; it is weighed
		 * against the best of the others at the end (the earlier of
		 * two equal scores, as in a pass over the scores in order).
		 *
		 * Below the root, without bans, the pass ends at the first such
		 * child among the first MCTS_SORTED: expand() put the largest
		 * priors there in order, so none after it has a larger one, and
		 * none after it has been chosen (a child is chosen over a fresh
		 * one of a larger prior only once that one has a descent, and
		 * priors below the root never change). Not in a tree that any
		 * search with bans has grown (a banned child of a large prior
		 * stays fresh while others are chosen), and a child's descents
		 * in flight are read before its visits (backup adds the visit
		 * before it takes the descent off), so that a child just backed
		 * up is never seen fresh. Most nodes of a tree have had few
		 * descents: their pass reads a few children, not every legal
		 * move's. */
		uint32_t sorted = !is_root && !m->banned_tree
					  ? (p->n_children < MCTS_SORTED ? p->n_children : MCTS_SORTED)
					  : 0;
		double visited_prior = 0;
		float fresh_prior = -1.0f;
		uint32_t fresh_i = MCTS_NONE;
		for (uint32_t k = 0; k < p->n_children; k++) {
			mcts_node *ch = node_at(m, p->first_child + k);
			int vl = atomic_load_explicit(&ch->vloss, memory_order_acquire) *
				 m->opt.virtual_loss;
			int v = atomic_load_explicit(&ch->visits, memory_order_relaxed);
			if (v > 0)
				visited_prior += ch->prior;
			if (ban && ban[ch->move] >= ply)
				continue;
			int n_eff = v + vl;
			if (n_eff == 0) {
				if (ch->prior > fresh_prior) {
					fresh_prior = ch->prior;
					fresh_i = p->first_child + k;
				}
				if (k < sorted)
					break;
				continue;
			}
			double q = (load_d(&ch->wsum) - vl) / (double)n_eff;
			double s = q + explore * ch->prior / (1.0 + n_eff);
			if (s > best) {
				best = s;
				best_i = p->first_child + k;
			}
		}
		if (fresh_i != MCTS_NONE) {
			double fpu = parent_q - red * sqrt(visited_prior);
			double s = fpu + explore * fresh_prior / (1.0 + 0);
			if (s > best || (s == best && fresh_i < best_i)) {
				best = s;
				best_i = fresh_i;
			}
		}
	}
	if (best_i == MCTS_NONE && ban)
		return select_child(m, parent_idx, is_root, NULL, ply); /* all banned */
	return best_i;
}

/* ---- Gumbel root search --------------------------------------------------- */

/* sigma(q) of the paper, for q in [-1, 1]: (c_visit + the largest child
 * visits) * c_scale * q mapped to [0, 1], with its c_visit 50 and
 * c_scale 1. */
#define GUMBEL_C_VISIT 50.0
#define GUMBEL_C_SCALE 1.0

static double gumbel_sigma(double q, int max_visits)
{
	return (GUMBEL_C_VISIT + max_visits) * GUMBEL_C_SCALE * (q + 1) / 2;
}

static double log_prior(float p)
{
	return log(p > 1e-12f ? p : 1e-12f);
}

/* Completed Q of every root child, for the player to move at the root,
 * into cq[]: a visited child's mean value, an unvisited one the root's
 * mixed value (the paper's appendix D): the network's value of the root
 * averaged with the prior-weighted Q of the visited children, weighted by
 * their visits. Returns the largest child visits. */
static int gumbel_completed_q(mcts *m, double *cq)
{
	mcts_node *r = node_at(m, m->root);
	int max_n = 0;
	bool visited[GAME_MAX_ACTIONS];
	double sum_n = 0, sum_p = 0, sum_pq = 0;
	for (uint32_t c = 0; c < r->n_children; c++) {
		mcts_node *ch = node_at(m, r->first_child + c);
		int v = atomic_load_explicit(&ch->visits, memory_order_relaxed);
		visited[c] = v > 0;
		cq[c] = v > 0 ? load_d(&ch->wsum) / v : 0;
		if (v > 0) {
			sum_n += v;
			sum_p += ch->prior;
			sum_pq += ch->prior * cq[c];
		}
		if (v > max_n)
			max_n = v;
	}
	double raw = -r->value; /* the root's own network value, its mover's view */
	double mixed = sum_p > 0 ? (raw + sum_n * sum_pq / sum_p) / (1 + sum_n) : raw;
	for (uint32_t c = 0; c < r->n_children; c++)
		if (!visited[c])
			cq[c] = mixed;
	return max_n;
}

/* The improved policy over the root's children: softmax(log prior +
 * sigma(completed Q)) into pi[] (by child index); returns its expected
 * completed Q. */
static double gumbel_improved(mcts *m, double *pi)
{
	mcts_node *r = node_at(m, m->root);
	double cq[GAME_MAX_ACTIONS];
	int max_n = gumbel_completed_q(m, cq);
	double top = -1e300, sum = 0, value = 0;
	for (uint32_t c = 0; c < r->n_children; c++) {
		pi[c] = log_prior(node_at(m, r->first_child + c)->prior) + gumbel_sigma(cq[c], max_n);
		if (pi[c] > top)
			top = pi[c];
	}
	for (uint32_t c = 0; c < r->n_children; c++)
		sum += pi[c] = exp(pi[c] - top);
	for (uint32_t c = 0; c < r->n_children; c++) {
		pi[c] /= sum;
		value += pi[c] * cq[c];
	}
	return value;
}

/* Orders the considered children best first by Gumbel + log prior +
 * sigma(completed Q) (insertion sort: at most gumbel_m of them). */
static void gumbel_rank(mcts *m)
{
	mcts_gumbel *gb = &m->gumbel;
	double cq[GAME_MAX_ACTIONS], key[GAME_MAX_ACTIONS];
	int max_n = gumbel_completed_q(m, cq);
	for (int i = 0; i < gb->n_rem; i++)
		key[gb->rem[i]] = gb->score[gb->rem[i]] + gumbel_sigma(cq[gb->rem[i]], max_n);
	for (int i = 1; i < gb->n_rem; i++) {
		uint16_t x = gb->rem[i];
		int j = i;
		for (; j > 0 && key[gb->rem[j - 1]] < key[x]; j--)
			gb->rem[j] = gb->rem[j - 1];
		gb->rem[j] = x;
	}
}

/* Visits each considered child gets in a phase that considers r. */
static int gumbel_phase_visits(const mcts_gumbel *gb, int r)
{
	int64_t k = gb->sims / ((int64_t)gb->phases * r);
	return k < 1 ? 1 : k > INT32_MAX / 4 ? INT32_MAX / 4 : (int)k;
}

/* Sets the search's sequential halving up at an expanded root: Gumbel
 * noise per child, the gumbel_m best of noise + log prior considered
 * (Gumbel-top-k: a sample without replacement from the priors), and the
 * first phase's visits. */
static void gumbel_init(mcts *m)
{
	mcts_gumbel *gb = &m->gumbel;
	mcts_node *r = node_at(m, m->root);
	int n = r->n_children;
	if (n < 1)
		return;
	for (int c = 0; c < n; c++) {
		double u = rng_uniform(&m->rng);
		if (u < 1e-300)
			u = 1e-300;
		gb->score[c] = (float)(-log(-log(u)) +
				       log_prior(node_at(m, r->first_child + (uint32_t)c)->prior));
		gb->rem[c] = (uint16_t)c;
	}
	int k = m->opt.gumbel_m < 1 ? 1 : m->opt.gumbel_m > n ? n : m->opt.gumbel_m;
	/* The k best of noise + log prior, in order (a partial selection
	 * sort: k and n are small). */
	for (int i = 0; i < k; i++) {
		int best = i;
		for (int j = i + 1; j < n; j++)
			if (gb->score[gb->rem[j]] > gb->score[gb->rem[best]])
				best = j;
		uint16_t t = gb->rem[i];
		gb->rem[i] = gb->rem[best];
		gb->rem[best] = t;
	}
	gb->n_rem = k;
	gb->phases = 1;
	while ((1 << gb->phases) < k)
		gb->phases++;
	/* A search without a playout budget gets the schedule of the
	 * default's 800. */
	int64_t left = m->budget - atomic_load(&m->started);
	gb->sims = m->budget == INT64_MAX || left < 1 ? 800 : left;
	gb->target = gumbel_phase_visits(gb, k);
	gb->ready = true;
}

/* The root child a descent takes: the considered one furthest from this
 * phase's visits (in flight counted); when every one has them, the phase
 * ends: the better half by noise + log prior + sigma(completed Q) goes on
 * (at least two), and the next phase's visits are added. */
static uint32_t gumbel_select(mcts *m)
{
	mcts_gumbel *gb = &m->gumbel;
	mcts_node *r = node_at(m, m->root);
	pthread_mutex_lock(&gb->mu);
	uint32_t pick;
	for (;;) {
		int best = -1, best_n = INT32_MAX;
		for (int i = 0; i < gb->n_rem; i++) {
			mcts_node *ch = node_at(m, r->first_child + gb->rem[i]);
			int n_eff = atomic_load_explicit(&ch->visits, memory_order_relaxed) +
				    atomic_load_explicit(&ch->vloss, memory_order_relaxed);
			if (n_eff < best_n) {
				best_n = n_eff;
				best = i;
			}
		}
		if (best_n < gb->target) {
			pick = r->first_child + gb->rem[best];
			break;
		}
		if (gb->n_rem > 2) {
			gumbel_rank(m);
			gb->n_rem = (gb->n_rem + 1) / 2;
			if (gb->n_rem < 2)
				gb->n_rem = 2;
		}
		gb->target += gumbel_phase_visits(gb, gb->n_rem);
	}
	pthread_mutex_unlock(&gb->mu);
	return pick;
}

/* The legal moves of the MCTS_SORTED largest priors, largest first (of
 * equal ones the earlier legal move first), as indices into legal[] in
 * top[]; returns their count. One pass with a short insertion list: a
 * move enters only above the list's last prior. */
static int top_priors(const float *policy, const int *legal, int n, int *top)
{
	float tv[MCTS_SORTED];
	int k = 0;
	for (int i = 0; i < n; i++) {
		float p = policy[legal[i]];
		if (k == MCTS_SORTED && !(p > tv[k - 1]))
			continue;
		int j = k < MCTS_SORTED ? k++ : k - 1;
		for (; j > 0 && p > tv[j - 1]; j--) {
			top[j] = top[j - 1];
			tv[j] = tv[j - 1];
		}
		top[j] = i;
		tv[j] = p;
	}
	return k;
}

/* Creates the children of node `idx` at position g from the network's
 * policy, and publishes them: one per legal move, from g's n_legal legal
 * moves when the evaluation gave them (else n_legal < 0), the moves of the
 * MCTS_SORTED largest priors first, in order (select_child's early stop),
 * then the rest in legal order. Without room in the pool the node stays a
 * leaf (its value still counts). */
static void expand(mcts *m, uint32_t idx, const game *g, const float *policy, const int *given,
		   int n_legal)
{
	int own[GAME_MAX_ACTIONS];
	const int *legal = given;
	int n = n_legal;
	if (n < 0) {
		n = game_legal_moves(g, own);
		legal = own;
	}
	mcts_node *node = node_at(m, idx);
	uint32_t first = n > 0 ? alloc_nodes(m, (uint32_t)n) : MCTS_NONE;
	if (first == MCTS_NONE) {
		atomic_store_explicit(&node->state, NODE_LEAF, memory_order_release);
		return;
	}
	int top[MCTS_SORTED], skip[MCTS_SORTED + 1];
	int k = top_priors(policy, legal, n, top);
	mcts_node *ch = node_at(m, first);
	for (int i = 0; i < k; i++)
		node_reset(ch++, legal[top[i]], policy[legal[top[i]]]);
	/* The rest in legal order: the sorted ones' indices, ascending, are
	 * skipped on the way. */
	for (int i = 0; i < k; i++) {
		int j = i, x = top[i];
		for (; j > 0 && skip[j - 1] > x; j--)
			skip[j] = skip[j - 1];
		skip[j] = x;
	}
	skip[k] = n;
	for (int i = 0, s = 0; i < n; i++) {
		if (i == skip[s]) {
			s++;
			continue;
		}
		node_reset(ch++, legal[i], policy[legal[i]]);
	}
	node->first_child = first;
	node->n_children = (uint16_t)n;
	atomic_store_explicit(&node->state, NODE_EXPANDED, memory_order_release);
}

/* The value of a finished game for the player who made its last move. */
static float terminal_value(const game *g)
{
	int r = game_result(g); /* +1: Black won */
	int mover = 1 - game_to_move(g);
	return (float)(mover == GAME_BLACK ? r : -r);
}

/* The final score of a finished game for the player who made its last
 * move (Go's area count, komi counted); NAN for a game without one. */
static float terminal_score(const game *g)
{
	if (!game_desc_of(g)->has_go_board)
		return NAN;
	double s = go_score(&g->u.go); /* Black's view */
	int mover = 1 - game_to_move(g);
	return (float)(mover == GAME_BLACK ? s : -s);
}

/* Adds value v and score s (NAN: none; for the player who moved into the
 * last node of the path) up the path, flipping sides at each step, and
 * removes the virtual loss. */
static void backup(mcts *m, const uint32_t *path, int depth, float v, float s)
{
	bool scored = !isnan(s);
	for (int i = depth - 1; i >= 0; i--) {
		mcts_node *n = node_at(m, path[i]);
		add_d(m->solo, &n->wsum, v);
		add_d(m->solo, &n->w2sum, (double)v * v);
		if (scored)
			add_f(m->solo, &n->ssum, s);
		add_i(m->solo, &n->visits, 1);
		/* Release: a reader that sees the descent gone sees the visit
		 * (select_child). */
		add_i(m->solo, &n->vloss, -1);
		v = -v;
		s = -s;
	}
}

enum { DESCENT_TERMINAL, DESCENT_LEAF, DESCENT_COLLISION };

/* One descent from the root with virtual loss, into leaf->path and
 * leaf->game. DESCENT_TERMINAL: *v holds the value (for the player who
 * moved into the last node); DESCENT_LEAF: this thread now expands the
 * leaf; DESCENT_COLLISION: another descent is expanding the node met, the
 * virtual losses are taken back. */
static int descend(mcts *m, mcts_leaf *leaf, float *v)
{
	game *g = &leaf->game;
	game_copy(g, &m->root_game);
	int depth = 0;
	uint32_t idx = m->root;
	leaf->path[depth++] = idx;
	add_i(m->solo, &node_at(m, idx)->vloss, 1);
	for (;;) {
		mcts_node *n = node_at(m, idx);
		uint8_t st = atomic_load_explicit(&n->state, memory_order_acquire);
		if (st == NODE_TERMINAL) {
			*v = n->value;
			leaf->depth = depth;
			return DESCENT_TERMINAL;
		}
		if (st == NODE_LEAF) {
			uint8_t expect = NODE_LEAF;
			if (atomic_compare_exchange_strong(&n->state, &expect, NODE_EXPANDING)) {
				leaf->depth = depth;
				return DESCENT_LEAF;
			}
			st = expect;
		}
		if (st != NODE_EXPANDED || depth == MCTS_MAX_DEPTH) {
			for (int i = 0; i < depth; i++)
				add_i(m->solo, &node_at(m, leaf->path[i])->vloss, -1);
			return DESCENT_COLLISION;
		}
		uint32_t c = depth == 1 && m->gumbel.ready
				     ? gumbel_select(m)
				     : select_child(m, idx, depth == 1,
						    m->avoid ? m->avoid->until_ply[game_to_move(g)] : NULL,
						    depth);
		mcts_node *ch = node_at(m, c);
		game_play(g, ch->move);
		if (game_is_over(g) &&
		    atomic_load_explicit(&ch->state, memory_order_acquire) == NODE_LEAF) {
			uint8_t expect = NODE_LEAF;
			float tv = terminal_value(g);
			/* Only the thread that wins the exchange writes the value;
			 * others read it after seeing NODE_TERMINAL. */
			if (atomic_compare_exchange_strong(&ch->state, &expect, NODE_EXPANDING)) {
				ch->value = tv;
				atomic_store_explicit(&ch->state, NODE_TERMINAL, memory_order_release);
			}
		}
		idx = c;
		leaf->path[depth++] = idx;
		add_i(m->solo, &ch->vloss, 1);
	}
}

/* Waits a little for some expansion to finish, instead of spinning while
 * the network works (spinning threads steal its cores). */
static void wait_expansion(mcts *m)
{
	pthread_mutex_lock(&m->expand_mu);
	struct timespec ts = clock_deadline(0.002);
	pthread_cond_timedwait(&m->expanded, &m->expand_mu, &ts);
	pthread_mutex_unlock(&m->expand_mu);
}

/* The gather phase of a round: up to `gather` descents (each holding a
 * ticket of the playout budget); playouts that ended in a finished game
 * are backed up at once. The new leaves, t->leaves[0..return), wait for
 * their evaluation with their virtual losses in place; t->round_done and
 * t->round_collisions say what else the round did. */
static int round_gather(mcts *m, mcts_thread *t, int gather)
{
	int n_leaves = 0;
	t->round_done = t->round_collisions = 0;
	for (int k = 0; k < gather; k++) {
		if (atomic_load_explicit(&m->stop, memory_order_relaxed))
			break;
		if (atomic_fetch_add(&m->started, 1) >= m->budget) {
			atomic_fetch_sub(&m->started, 1);
			break;
		}
		mcts_leaf *leaf = &t->leaves[n_leaves];
		float v;
		int r = descend(m, leaf, &v);
		if (r == DESCENT_TERMINAL) {
			backup(m, leaf->path, leaf->depth, v,
			       m->scores ? terminal_score(&leaf->game) : NAN);
			t->round_done++;
		} else if (r == DESCENT_LEAF) {
			t->scores[n_leaves] = NAN; /* until the score head answers */
			t->n_legal[n_leaves] = -1; /* until the evaluation lists them */
			n_leaves++;
		} else {
			/* The tree is too narrow for more leaves this round. */
			atomic_fetch_sub(&m->started, 1);
			atomic_fetch_add(&m->collisions, 1);
			t->round_collisions++;
			break;
		}
	}
	return n_leaves;
}

/* The apply phase: the n_leaves evaluated leaves (answers in
 * t->leaves[i].policy and t->values[i]) expanded and backed up. Returns
 * the playouts the round completed. */
static int round_apply(mcts *m, mcts_thread *t, int n_leaves)
{
	int done = t->round_done;
	if (n_leaves > 0) {
		for (int i = 0; i < n_leaves; i++) {
			mcts_leaf *leaf = &t->leaves[i];
			node_at(m, leaf->path[leaf->depth - 1])->value = -t->values[i];
			expand(m, leaf->path[leaf->depth - 1], &leaf->game, leaf->policy, leaf->legal,
			       t->n_legal[i]);
			backup(m, leaf->path, leaf->depth, -t->values[i], -t->scores[i]);
		}
		done += n_leaves;
		if (!m->solo) { /* no other thread waits in wait_expansion */
			pthread_mutex_lock(&m->expand_mu);
			pthread_cond_broadcast(&m->expanded);
			pthread_mutex_unlock(&m->expand_mu);
		}
	} else if (t->round_collisions && done == 0) {
		wait_expansion(m);
	}
	return done;
}

/* One round of a search thread: gather, the new leaves evaluated as one
 * batch, apply. Returns the playouts completed. */
static int search_round(mcts *m, mcts_thread *t, int gather)
{
	int n_leaves = round_gather(m, t, gather);
	if (n_leaves > 0)
		eval_batch_legal(m->ev, t->scratch, n_leaves, t->games, t->policies, t->values,
				 t->scores, t->legals, t->n_legal);
	return round_apply(m, t, n_leaves);
}

/* Stops the search when the pool is full or the deadline passed. */
static void stop_at_limits(mcts *m)
{
	if (atomic_load_explicit(&m->pool_full, memory_order_relaxed) ||
	    (m->deadline > 0 && clock_now() >= m->deadline))
		atomic_store(&m->stop, 1);
}

static void *search_main(void *arg)
{
	mcts_thread *t = arg;
	mcts *m = t->m;
	eval_client_enter(m->ev);
	while (!atomic_load_explicit(&m->stop, memory_order_relaxed) &&
	       atomic_load_explicit(&m->started, memory_order_relaxed) < m->budget) {
		int done = search_round(m, t, t->gather);
		atomic_fetch_add(&m->completed, (uint64_t)done);
		stop_at_limits(m);
	}
	eval_client_leave(m->ev);
	return NULL;
}

/* Mixes Dirichlet noise into the root's priors. */
static void add_noise(mcts *m)
{
	mcts_node *r = node_at(m, m->root);
	int n = r->n_children;
	if (n < 1)
		return;
	double alpha = m->opt.noise_alpha_sum / n, sum = 0;
	double eta[GAME_MAX_ACTIONS];
	for (int i = 0; i < n; i++)
		sum += eta[i] = rng_gamma(&m->rng, alpha);
	if (!(sum > 0))
		return;
	for (int i = 0; i < n; i++) {
		mcts_node *c = node_at(m, r->first_child + (uint32_t)i);
		c->prior = (float)((1 - m->opt.noise_eps) * c->prior + m->opt.noise_eps * eta[i] / sum);
	}
	m->root_noised = true;
}

/* Once the root is expanded: sets Gumbel search up, or mixes the noise
 * in, when the search asks for it. */
static void root_ready(mcts *m)
{
	if (atomic_load(&node_at(m, m->root)->state) != NODE_EXPANDED)
		return;
	if (m->opt.gumbel && !m->avoid) {
		if (!m->gumbel.ready)
			gumbel_init(m);
	} else if (m->opt.noise && !m->root_noised) {
		add_noise(m);
	}
}

/* Sets a search up: root node, limits, and noise when the root is
 * already expanded. Returns false when there is nothing to search (game
 * over or no position). */
static bool setup(mcts *m)
{
	if (!m->have_root_game || game_is_over(&m->root_game))
		return false;
	if (m->root == MCTS_NONE) {
		uint32_t r = alloc_nodes(m, 1);
		if (r == MCTS_NONE)
			return false;
		node_reset(node_at(m, r), GAME_MOVE_NONE, 1);
		m->root = r;
		m->banned_tree = false;
	}
	if (m->avoid)
		m->banned_tree = true;
	m->solo = m->opt.threads == 1;
	/* An interrupt that came before the search began still ends it. */
	atomic_store(&m->stop, atomic_load(&m->interrupted));
	atomic_store(&m->started, 0);
	atomic_store(&m->completed, 0);
	atomic_store(&m->collisions, 0);
	m->t_start = clock_now();
	m->deadline = m->opt.max_seconds > 0 ? m->t_start + m->opt.max_seconds : 0;
	int64_t budget = INT64_MAX;
	if (m->opt.max_playouts > 0)
		budget = m->opt.max_playouts;
	if (m->opt.max_visits > 0) {
		int64_t left = (int64_t)m->opt.max_visits - mcts_root_visits(m);
		if (left < budget)
			budget = left > 0 ? left : 0;
	}
	m->budget = budget;
	m->gumbel.ready = false; /* fresh noise each search */
	root_ready(m);
	return true;
}

/* Prepares a search for its threads: setup, and the root expanded (one
 * round of one leaf) so that the noise can be mixed in before they start. */
static bool prepare(mcts *m)
{
	if (!setup(m))
		return false;
	mcts_node *r = node_at(m, m->root);
	if (atomic_load(&r->state) != NODE_EXPANDED && m->budget > 0) {
		atomic_fetch_add(&m->completed, (uint64_t)search_round(m, &m->threads[0], 1));
		root_ready(m);
	}
	return true;
}

/* ---- a search driven one round at a time --------------------------------- */

bool mcts_begin(mcts *m)
{
	mcts_stop(m);
	return setup(m);
}

bool mcts_done(mcts *m)
{
	return m->root == MCTS_NONE || atomic_load_explicit(&m->stop, memory_order_relaxed) ||
	       atomic_load_explicit(&m->started, memory_order_relaxed) >= m->budget;
}

int mcts_gather(mcts *m, mcts_round *out)
{
	mcts_thread *t = &m->threads[0];
	/* An unexpanded root goes alone, so that the noise is mixed in
	 * before any other descent (as prepare() does). */
	bool root_open = atomic_load(&node_at(m, m->root)->state) == NODE_EXPANDED;
	int n = round_gather(m, t, root_open ? t->gather : 1);
	out->games = t->games;
	out->policies = t->policies;
	out->values = t->values;
	out->scores = t->scores;
	out->legal = t->legals;
	out->n_legal = t->n_legal;
	return n;
}

void mcts_apply(mcts *m, int n_leaves)
{
	int done = round_apply(m, &m->threads[0], n_leaves);
	atomic_fetch_add(&m->completed, (uint64_t)done);
	root_ready(m);
	stop_at_limits(m);
}

void mcts_end(mcts *m)
{
	m->t_end = clock_now();
}

void mcts_start(mcts *m)
{
	mcts_stop(m);
	if (!prepare(m))
		return;
	int started = 0;
	for (int i = 0; i < m->opt.threads; i++) {
		if (pthread_create(&m->threads[i].thread, NULL, search_main, &m->threads[i]) != 0)
			break;
		started++;
	}
	if (started == 0) /* no thread could start: search on this one */
		search_main(&m->threads[0]);
	m->running_threads = started;
}

void mcts_stop(mcts *m)
{
	if (m->running_threads == 0)
		return;
	atomic_store(&m->stop, 1);
	for (int i = 0; i < m->running_threads; i++)
		pthread_join(m->threads[i].thread, NULL);
	m->running_threads = 0;
	m->t_end = clock_now();
}

bool mcts_running(const mcts *m)
{
	if (m->running_threads == 0)
		return false;
	/* Threads exit by themselves at a limit; report running until then. */
	mcts *mm = (mcts *)m;
	return !atomic_load(&mm->stop) && atomic_load(&mm->started) < m->budget;
}

void mcts_search(mcts *m)
{
	if (m->opt.threads == 1) {
		/* The round API, driven here: the one code path for a
		 * single-threaded search. */
		if (!mcts_begin(m))
			return;
		mcts_thread *t = &m->threads[0];
		eval_client_enter(m->ev);
		while (!mcts_done(m)) {
			mcts_round r;
			int n = mcts_gather(m, &r);
			if (n > 0)
				eval_batch_legal(m->ev, t->scratch, n, r.games, r.policies, r.values,
						 r.scores, r.legal, r.n_legal);
			mcts_apply(m, n);
		}
		eval_client_leave(m->ev);
		mcts_end(m);
		return;
	}
	mcts_stop(m);
	if (!prepare(m))
		return;
	mcts_start(m);
	for (int i = 0; i < m->running_threads; i++)
		pthread_join(m->threads[i].thread, NULL);
	m->running_threads = 0;
	m->t_end = clock_now();
}

/* ---- results -------------------------------------------------------------- */

int mcts_root_visits(mcts *m)
{
	if (m->root == MCTS_NONE)
		return 0;
	return atomic_load(&node_at(m, m->root)->visits);
}

float mcts_root_value(mcts *m)
{
	if (m->root == MCTS_NONE)
		return 0;
	mcts_node *r = node_at(m, m->root);
	int v = atomic_load(&r->visits);
	return v > 0 ? (float)(-load_d(&r->wsum) / v) : 0;
}

float mcts_root_score(mcts *m)
{
	if (m->root == MCTS_NONE || !m->scores)
		return NAN;
	mcts_node *r = node_at(m, m->root);
	int v = atomic_load(&r->visits);
	return v > 0 ? -load_f(&r->ssum) / (float)v : NAN;
}

static int cmp_info(const void *a, const void *b)
{
	const mcts_child_info *x = a, *y = b;
	if (x->visits != y->visits)
		return x->visits > y->visits ? -1 : 1;
	if (x->prior != y->prior)
		return x->prior > y->prior ? -1 : 1;
	return x->move - y->move;
}

int mcts_root_children(mcts *m, mcts_child_info *out, int max)
{
	if (m->root == MCTS_NONE)
		return 0;
	mcts_node *r = node_at(m, m->root);
	if (atomic_load(&r->state) != NODE_EXPANDED)
		return 0;
	int n = 0;
	for (uint32_t c = 0; c < r->n_children && n < max; c++) {
		mcts_node *ch = node_at(m, r->first_child + c);
		int v = atomic_load(&ch->visits);
		mcts_child_info *ci = &out[n++];
		ci->move = ch->move;
		ci->visits = v;
		ci->prior = ch->prior;
		ci->score = m->scores && v > 0 ? load_f(&ch->ssum) / (float)v : NAN;
		if (v > 0) {
			double q = load_d(&ch->wsum) / v;
			double var = load_d(&ch->w2sum) / v - q * q;
			if (var < 0)
				var = 0;
			/* A prior variance keeps few-visit children from looking
			 * certain. */
			double se = sqrt((var * v + 1.0) / (v + 1.0) / v);
			ci->q = (float)q;
			ci->lcb = (float)(q - 1.96 * se);
		} else {
			ci->q = 0;
			ci->lcb = -2;
		}
	}
	qsort(out, (size_t)n, sizeof(*out), cmp_info);
	return n;
}

double mcts_forced_playouts(float k, float prior, int total)
{
	double x = (double)k * prior * total;
	return x > 0 ? sqrt(x) : 0;
}

/* True after a Gumbel search of the root now held. */
static bool gumbel_done(mcts *m)
{
	return m->opt.gumbel && m->gumbel.ready && m->root != MCTS_NONE &&
	       atomic_load(&node_at(m, m->root)->state) == NODE_EXPANDED;
}

/* mcts_policy_target after a Gumbel search: the improved policy in
 * 1/MCTS_GUMBEL_TARGET_SCALE. */
static int gumbel_target(mcts *m, mcts_child_info *out, int max)
{
	mcts_node *r = node_at(m, m->root);
	double pi[GAME_MAX_ACTIONS], by_move[GAME_MAX_ACTIONS];
	gumbel_improved(m, pi);
	for (uint32_t c = 0; c < r->n_children; c++)
		by_move[node_at(m, r->first_child + c)->move] = pi[c];
	int n = mcts_root_children(m, out, max);
	for (int i = 0; i < n; i++)
		out[i].visits = (int)lround(by_move[out[i].move] * MCTS_GUMBEL_TARGET_SCALE);
	qsort(out, (size_t)n, sizeof(*out), cmp_info);
	return n;
}

float mcts_search_value(mcts *m)
{
	if (!gumbel_done(m))
		return mcts_root_value(m);
	double pi[GAME_MAX_ACTIONS];
	return (float)gumbel_improved(m, pi);
}

int mcts_policy_target(mcts *m, mcts_child_info *out, int max)
{
	if (gumbel_done(m))
		return gumbel_target(m, out, max);
	int n = mcts_root_children(m, out, max);
	if (n < 2 || !m->opt.noise || !(m->opt.forced_k > 0) || out[0].visits == 0)
		return n;
	int total = 0;
	for (int i = 0; i < n; i++)
		total += out[i].visits;
	/* PUCT as selection saw it at the end (no virtual loss: the search is
	 * over), for the player to move at the root. */
	double explore = puct_explore(&m->opt, total);
	const mcts_child_info *best = &out[0]; /* the most visited */
	double best_puct = best->q + explore * best->prior / (1.0 + best->visits);
	for (int i = 1; i < n; i++) {
		mcts_child_info *ci = &out[i];
		if (ci->visits == 0)
			continue;
		int floor_v = ci->visits - (int)mcts_forced_playouts(m->opt.forced_k, ci->prior,
								     total);
		int v = ci->visits;
		while (v - 1 >= floor_v && v - 1 >= 0 &&
		       ci->q + explore * ci->prior / (1.0 + (v - 1)) < best_puct)
			v--;
		ci->visits = v <= 1 ? 0 : v;
	}
	qsort(out, (size_t)n, sizeof(*out), cmp_info);
	return n;
}

void mcts_avoid_ban(mcts_avoid *a, int color, const bool *listed, int n, bool allow, int depth)
{
	uint16_t until = depth > 65535 ? 65535 : depth < 0 ? 0 : (uint16_t)depth;
	uint16_t *ban = a->until_ply[color];
	for (int m = 0; m < n; m++)
		if (listed[m] != allow && ban[m] < until)
			ban[m] = until;
}

void mcts_set_avoid(mcts *m, const mcts_avoid *avoid)
{
	if (!avoid) {
		free(m->avoid);
		m->avoid = NULL;
		return;
	}
	if (!m->avoid && !(m->avoid = malloc(sizeof(*m->avoid))))
		return; /* out of memory: search without the ban */
	*m->avoid = *avoid;
}

int mcts_pv(mcts *m, int move, int *pv, int max)
{
	return mcts_pv_visits(m, move, pv, NULL, max);
}

int mcts_pv_visits(mcts *m, int move, int *pv, int *visits, int max)
{
	if (m->root == MCTS_NONE || max < 1)
		return 0;
	uint32_t at = m->root;
	int len = 0;
	int want = move;
	while (len < max) {
		mcts_node *n = node_at(m, at);
		if (atomic_load(&n->state) != NODE_EXPANDED)
			break;
		uint32_t best = MCTS_NONE;
		int best_v = 0;
		for (uint32_t c = 0; c < n->n_children; c++) {
			mcts_node *ch = node_at(m, n->first_child + c);
			int v = atomic_load(&ch->visits);
			if (want != GAME_MOVE_NONE ? ch->move == want : v > best_v) {
				best = n->first_child + c;
				best_v = v;
				if (want != GAME_MOVE_NONE)
					break;
			}
		}
		if (best == MCTS_NONE || (want == GAME_MOVE_NONE && best_v == 0))
			break;
		if (visits)
			visits[len] = atomic_load(&node_at(m, best)->visits);
		pv[len++] = node_at(m, best)->move;
		want = GAME_MOVE_NONE;
		at = best;
	}
	return len;
}

/* The considered child best by noise + log prior + sigma(completed Q). */
static int gumbel_move(mcts *m)
{
	mcts_gumbel *gb = &m->gumbel;
	pthread_mutex_lock(&gb->mu);
	gumbel_rank(m);
	int move = node_at(m, node_at(m, m->root)->first_child + gb->rem[0])->move;
	pthread_mutex_unlock(&gb->mu);
	return move;
}

int mcts_choose_move(mcts *m, float temperature, bool use_lcb)
{
	if (gumbel_done(m))
		return gumbel_move(m);
	/* The visits with forced playouts pruned, as for the policy target
	 * (KataGo plays from them too): a move only forcing visited is
	 * explored, not played. The most visited child is never pruned. */
	mcts_child_info ci[GAME_MAX_ACTIONS];
	int n = mcts_policy_target(m, ci, GAME_MAX_ACTIONS);
	if (n == 0)
		return GAME_MOVE_NONE;
	if (ci[0].visits == 0)
		return ci[0].move; /* no search: the highest prior */
	if (temperature > 0) {
		double w[GAME_MAX_ACTIONS], sum = 0;
		for (int i = 0; i < n; i++)
			sum += w[i] = ci[i].visits > 0 ? pow((double)ci[i].visits / ci[0].visits,
							     1.0 / temperature) : 0;
		double r = rng_uniform(&m->rng) * sum;
		for (int i = 0; i < n; i++) {
			if (r < w[i])
				return ci[i].move;
			r -= w[i];
		}
		return ci[0].move;
	}
	if (use_lcb) {
		int best = 0;
		for (int i = 1; i < n; i++)
			if (ci[i].visits * 10 >= ci[0].visits && ci[i].visits >= 2 &&
			    ci[i].lcb > ci[best].lcb)
				best = i;
		return ci[best].move;
	}
	return ci[0].move;
}

void mcts_get_stats(const mcts *m, mcts_stats *out)
{
	mcts *mm = (mcts *)m;
	out->playouts = atomic_load(&mm->completed);
	out->collisions = atomic_load(&mm->collisions);
	out->nodes = atomic_load(&mm->arena[m->cur].used);
	if (out->nodes > m->capacity)
		out->nodes = m->capacity;
	out->node_capacity = m->capacity;
	out->pool_full = atomic_load(&mm->pool_full);
	double end = m->running_threads ? clock_now() : m->t_end;
	out->seconds = end > m->t_start ? end - m->t_start : 0;
}
