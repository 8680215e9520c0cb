/* backend.h: the one interface every inference backend fills (CPU/oneDNN
 * now, CUDA later): a table of function pointers and an opaque context.
 *
 * A context is created once per (network, max batch): all primitives and
 * buffers are made then, so forward allocates nothing. One context serves
 * one thread at a time (the evaluation queue's server thread); make one
 * context per device or per server thread.
 *
 * forward() takes planes [batch][in_planes][H][W] (nn/encode.h) for
 * 1 <= batch <= max_batch and writes:
 *   policy_logits [batch][policy_outputs]: raw logits; softmax (over the
 *       legal moves, at whatever temperature) is left to the caller;
 *   value [batch]: in [-1, 1] for the side to move; for a WDL net win - loss;
 *   wdl [batch][3] (may be NULL): win, draw, loss probabilities for the side
 *       to move; for a 1-output net (1 + v) / 2, 0, (1 - v) / 2.
 * It returns 0, or -1 on a backend failure (which a caller may treat as
 * fatal for that context).
 */
#ifndef SENTE_NN_BACKEND_H
#define SENTE_NN_BACKEND_H

#include <stddef.h>

#include "nn/dtype.h"
#include "nn/net.h"

/* Which backend a front end asks for (--backend). */
typedef enum nn_backend_kind {
	NN_BACKEND_AUTO = 0, /* CUDA when a device is present, else the CPU */
	NN_BACKEND_CPU = 1,
	NN_BACKEND_CUDA = 2, /* falls back to the CPU, with a message, when no
			      * device can be used */
	NN_BACKEND_CHECK = 3, /* CUDA checked against the CPU on every batch
			       * (nn_backend_check); no fallback */
} nn_backend_kind;

#define NN_MAX_GPUS 16

typedef enum nn_conv_algo {
	NN_CONV_AUTO = 0,     /* time Winograd and direct per layer, keep the faster */
	NN_CONV_DIRECT = 1,   /* direct only */
	NN_CONV_WINOGRAD = 2, /* Winograd where supported, else direct */
} nn_conv_algo;

typedef struct nn_backend_options {
	int threads;            /* compute threads; 0 = the runtime's default */
	nn_dtype precision;     /* arithmetic of the tower */
	nn_conv_algo algo;      /* convolution algorithm choice */
	int device;             /* device index (CUDA); ignored by the CPU */
	int lanes;              /* CPU: independent copies of the network that
				 * nn_backend_set_open makes, the threads split
				 * among them, each run by its own evaluator
				 * server; 0 or 1: one. A lane of one thread
				 * never waits on another thread inside a
				 * forward call (docs/ARCHITECTURE.md) */
	int verbose;            /* 1: describe the chosen primitives on stderr */
	int calib_positions;    /* int8: positions (random legal play, fixed seed)
				 * whose fp32 activations set the scales; 0 =
				 * NN_CALIB_POSITIONS_DEFAULT */
	/* Selection by nn_backend_set_open (the backends themselves ignore it): */
	nn_backend_kind kind;   /* --backend */
	int gpus[NN_MAX_GPUS];  /* --gpus: devices, one backend and server each */
	int n_gpus;             /* used entries of gpus; 0 = device 0 only */
	int precision_given;    /* 1: the user chose the precision; else CUDA runs
				 * fp16 and the CPU fp32 (int8 below) */
	int cpu_int8_default;   /* 1 (self-play): with no precision given, the CPU
				 * runs int8 where it has VNNI (nn/cpu/peak.h,
				 * nn_cpu_fast_int8) */
	/* CUDA checking knobs: */
	int cuda_no_fusion;     /* 1: plain convolution + separate bias/residual/
				 * activation kernel instead of cuDNN's fused call */
	int cuda_no_graphs;     /* 1: launch every forward eagerly, no CUDA graphs */
	/* The checking backend (nn_backend_check): */
	const struct nn_backend_ops *check_test; /* the backend checked; NULL: cuda */
	const struct nn_backend_ops *check_ref;  /* checked against; NULL: cpu (fp32) */
	double check_tolerance; /* largest |test - ref| / max(1, |ref|); 0: by the
				 * precision (nn_check_tolerance) */
	int check_warn_only;    /* 1: report differences beyond it, never fail */
} nn_backend_options;

#define NN_CALIB_POSITIONS_DEFAULT 256

typedef struct nn_backend_ops {
	const char *name; /* "cpu", "cuda" */
	/* Builds a context for `net` (the net may be freed afterwards: the
	 * context keeps its own copy of the weights). 0, or -1 with a message. */
	int (*create)(const nn_net *net, int max_batch, const nn_backend_options *opt, void **ctx,
		      char *err, size_t errlen);
	/* See above. */
	int (*forward)(void *ctx, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl_or_null);
	/* forward, and the net's ownership head [batch][H * W] and score head
	 * [batch] as nn_reference_forward_heads defines them (either NULL when
	 * not wanted). NULL in a backend that computes no head:
	 * nn_backend_heads says what a backend gives. */
	int (*forward_heads)(void *ctx, int batch, const float *planes, float *policy_logits,
			     float *value, float *wdl_or_null, float *ownership, float *score);
	/* Frees a context; NULL is fine. */
	void (*destroy)(void *ctx);
	/* One line on what the context chose (algorithms, layouts), into buf. */
	void (*describe)(void *ctx, char *buf, size_t len);
} nn_backend_ops;

/* The CPU backend (nn/cpu/cpu_backend.c), always built. */
extern const nn_backend_ops nn_backend_cpu;
/* The CUDA backend (nn/cuda/cuda_backend.cu; in a build without CUDA or
 * cuDNN, nn/cuda/fallback.c, whose create refuses with the reason). */
extern const nn_backend_ops nn_backend_cuda;

/* Defaults: threads 0, fp32, auto algorithm, device 0, backend auto. */
nn_backend_options nn_backend_options_default(void);
/* "auto", "cpu", "cuda" and back; false when unknown. */
const char *nn_backend_kind_name(nn_backend_kind k);
bool nn_backend_kind_from_name(const char *name, nn_backend_kind *out);
/* Parses a --gpus list ("0", "0,1,3": distinct device numbers 0..63, at
 * most NN_MAX_GPUS) into opt->gpus; false with a message otherwise. */
bool nn_backend_parse_gpus(const char *s, nn_backend_options *opt, char *err, size_t errlen);

/* A backend bound to its context, for callers that do not want to carry
 * the pair around. */
typedef struct nn_backend {
	const nn_backend_ops *ops; /* the table */
	void *ctx;                 /* its context */
	int max_batch;             /* largest batch forward accepts */
	nn_arch arch;              /* shapes of the net it runs */
} nn_backend;

/* NULL with a message on failure. */
nn_backend *nn_backend_new(const nn_backend_ops *ops, const nn_net *net, int max_batch,
			   const nn_backend_options *opt, char *err, size_t errlen);
void nn_backend_free(nn_backend *be);
int nn_backend_forward(nn_backend *be, int batch, const float *planes, float *policy_logits,
		       float *value, float *wdl_or_null);
/* The heads (NN_HEAD_OWN, NN_HEAD_SCORE) that be's net has and its backend
 * computes; 0 for none. */
int nn_backend_heads(const nn_backend *be);
/* ops->forward_heads (see above); -1 when the backend computes no head. */
int nn_backend_forward_heads(nn_backend *be, int batch, const float *planes, float *policy_logits,
			     float *value, float *wdl_or_null, float *ownership, float *score);

/* The checking backend (nn/check.c): runs opt->check_test (CUDA by
 * default) and opt->check_ref (the CPU in fp32 by default) on every batch,
 * returns the first one's outputs (a head the first does not compute is
 * the second's), reports on stderr every forward whose
 * largest difference (policy, value or wdl) is beyond the tolerance, and
 * fails it unless check_warn_only; a summary goes to stderr at destroy. */
extern const nn_backend_ops nn_backend_check;
/* nn_reference_forward (plain loops in double) as a backend: slow, for
 * checking others. */
extern const nn_backend_ops nn_backend_reference;

/* What a checking backend has seen. */
enum { NN_CHECK_OUTPUTS = 5 }; /* policy, value, wdl, ownership, score */
typedef struct nn_check_stats {
	long forwards;                   /* forwards compared */
	long positions;                  /* positions in them */
	long beyond;                     /* forwards beyond the tolerance */
	double worst[NN_CHECK_OUTPUTS];  /* largest difference: policy, value, wdl,
					  * and the heads (0 while not asked for) */
} nn_check_stats;
/* The stats of a backend made with nn_backend_check. */
void nn_check_get_stats(const nn_backend *be, nn_check_stats *out);
/* The default tolerance for a backend checked at `precision`. */
double nn_check_tolerance(nn_dtype precision);

/* Parses the flags every front end shares: --backend auto|cpu|cuda, --gpus
 * LIST, --precision fp32|bf16|int8|fp16 (which sets precision_given).
 * Returns 1 when `flag` is one of them and `value` is good, 0 when it is
 * not one of them, -1 with a message when the value is bad. */
int nn_backend_parse_flag(const char *flag, const char *value, nn_backend_options *opt, char *err,
			  size_t errlen);

/* The backends a front end runs: one CPU backend, or one CUDA backend per
 * GPU (each then gets its own evaluator server thread, stream and share of
 * the queue). A value; close it with nn_backend_set_close. */
typedef struct nn_backend_set {
	nn_backend *be[NN_MAX_GPUS]; /* the backends, for eval_new */
	int n;                       /* used entries */
	int lanes;                   /* CPU lanes among them (opt->lanes, at most
				      * the threads); 0 on CUDA */
	nn_dtype precision;          /* what they run */
	char what[256];              /* e.g. "cuda fp16 on GPU 0 (NVIDIA H100)", or
				      * "cpu fp32 (no CUDA device: ...)" */
} nn_backend_set;

/* Opens the backends that opt->kind asks for (see nn_backend_kind): auto
 * and cuda try every listed GPU and fall back to the CPU when none is there
 * or a CUDA context cannot be made (the reason goes into `what`; nothing
 * crashes). On the CPU, opt->lanes backends (at most the threads, at most
 * NN_MAX_GPUS) share opt->threads (0: every online core) as evenly as they
 * can. 0, or -1 with a message when even the CPU backend fails. */
int nn_backend_set_open(nn_backend_set *s, const nn_net *net, int max_batch,
			const nn_backend_options *opt, char *err, size_t errlen);
/* The threads a CPU backend gets for opt->threads 0: the online cores. */
int nn_cpu_threads_default(void);
/* The CPU lanes nn_backend_set_open makes for opt (opt->lanes, at least 1,
 * at most the threads and NN_MAX_GPUS), the threads they share in *threads
 * (opt->threads, or every online core for 0), and lane i's share of them. */
int nn_cpu_lanes(const nn_backend_options *opt, int *threads);
int nn_cpu_lane_threads(int threads, int lanes, int i);
/* The evaluator's largest batch on the set: on CPU lanes one feeder's
 * share (a search thread's gathered leaves, a self-play worker's games)
 * where that is smaller, so that the lanes run different feeders' batches
 * at once; else `batch`. */
int nn_lane_batch(const nn_backend_set *s, int batch, int share);
/* opt->lanes, or for 0 (the front ends' default) one lane per compute
 * thread, but no more than `feeders`: the threads that each send the
 * network one batch at a time (search threads, self-play games). */
int nn_lanes_resolve(const nn_backend_options *opt, int feeders);
/* Frees the backends; a zeroed or already closed set is fine. */
void nn_backend_set_close(nn_backend_set *s);

#endif
