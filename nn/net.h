/* net.h: the policy/value network: its architecture, its weights, model files.
 *
 * Architecture (Leela Zero style, AlphaZero's residual tower):
 *   input conv 3x3 (in_planes -> channels) + BN + ReLU
 *   blocks x residual block: conv 3x3 + BN + ReLU, conv 3x3 + BN,
 *       [SE: squeeze-excitation, see below], + skip, ReLU
 *   policy head: conv 1x1 (channels -> policy_channels) + BN + ReLU,
 *       FC (policy_channels * H * W -> policy_outputs) = logits
 *   value head: conv 1x1 (channels -> value_channels) + BN + ReLU,
 *       FC (value_channels * H * W -> value_hidden) + ReLU,
 *       FC (value_hidden -> value_outputs); 1 output: tanh, the value for
 *       the side to move in [-1, 1]; 3 outputs: win/draw/loss logits.
 * BN is y = gamma * (x - mean) / sqrt(var + NN_BN_EPS) + beta, applied to the
 * conv output including its bias. Flattening for an FC is NCHW order
 * (channel-major), as Leela Zero does.
 *   opponent-reply head (optional, arch.opp_policy; KataGo's auxiliary
 *       policy): FC (policy_channels * H * W -> policy_outputs) on the
 *       policy conv's output = logits of the opponent's reply to the move
 *       about to be played. A training aid: inference computes no such
 *       thing, and the search never reads it.
 *   ownership head (optional, arch.ownership; games with territory, Go):
 *       at every point, tanh(w . v + b) with v the value conv's output
 *       there (value_channels, after its BN and ReLU): who will own the
 *       point at the game's end, +1 the side to move. Weights own_fc (n_in
 *       value_channels, n_out 1, shared by the points). Trained, and
 *       computed by the reference and the inference backends on request
 *       (nn_backend_forward_heads) for the GTP and analysis engines.
 *   score head (optional, arch.score; games with territory, Go): FC
 *       (value_hidden -> 1) on the value head's hidden layer (after its
 *       ReLU) = the final score from the side to move's view, in points
 *       of the board (score / (width * height)). Trained, and computed on
 *       request as the ownership head.
 * SE block (Leela Chess Zero's form): after the second BN, s = mean over the
 * board of each channel (with masked_pool, over the position's own board in
 * the frame: nn_board_pool_weights), h = ReLU(FC1(s)) (channels -> se_channels),
 * z = FC2(h) (se_channels -> 2 * channels); out = ReLU(sigmoid(z[0..C)) * x
 * + z[C..2C) + skip).
 *
 * Tensor order (also the order in the model file): for every conv, weights
 * [out][in][k][k], bias[out], bn mean, bn var, bn gamma, bn beta [out]; for
 * every FC, weights [out][in], bias [out]. Input conv; each block: conv1,
 * conv2, then for an SE block se_fc1, se_fc2; policy conv, policy fc; value
 * conv, value fc1, value fc2; then, where the net has them, the
 * opponent-reply fc, the ownership fc, the score fc. All in one allocation
 * (nn_net.data).
 *
 * Model file (.sente), all integers little-endian:
 *   "SENTENET" (8 bytes), u32 version (NN_FILE_VERSION), u32 header length L
 *   header (L bytes): u32 game kind, board w, board h, encoding, in_planes,
 *     blocks, channels, se_channels, policy_channels, policy_outputs,
 *     value_channels, value_hidden, value_outputs, flags (bit 0: BN already
 *     folded into the convs; version 2 and later: bit 1 the opponent-reply
 *     head, bit 2 the ownership head, bit 3 the score head; version 3:
 *     bits 8-22 the board sizes 5..19 a net of several sizes plays, its
 *     frame the largest; version 4: bit 4 its SE means masked to the
 *     board, nn_arch.masked_pool); u64 training
 *     step, u64 creation time (Unix
 *     seconds); char[64] parent model id, char[64] name (NUL-padded);
 *     u8 block kind [blocks]
 *   u64 float count N, then N fp32 tensors in the order above
 *   u32 CRC-32 (zlib's) of every byte before it.
 * Files are written to PATH.tmp, flushed, fsync'd and renamed. A net
 * without either optional head is written as version 1, which every sente
 * reads; one with a head as version 2, one of several board sizes as
 * version 3 and one with masked pooling as version 4, which a sente from
 * before them refuses by its version instead of misreading it.
 */
#ifndef SENTE_NN_NET_H
#define SENTE_NN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "engine/game.h"
#include "nn/encode.h"

#define NN_MAX_BLOCKS 80
#define NN_MAX_CHANNELS 1024
#define NN_BN_EPS 1e-5f
#define NN_FILE_VERSION 4u /* the newest version read and written */
#define NN_ID_LEN 64 /* parent id and name, NUL included */

typedef enum nn_block_kind {
	NN_BLOCK_PLAIN = 0, /* two convs and a skip */
	NN_BLOCK_SE = 1,    /* plus squeeze-excitation (see above) */
	/* Reserved: KataGo-style global pooling bias. Not implemented yet: the
	 * value is refused by nn_arch_check so files stay forward-compatible. */
	NN_BLOCK_POOL = 2,
} nn_block_kind;

typedef struct nn_arch {
	game_kind game;         /* the game the net plays */
	int board_w, board_h;   /* board the planes cover (Go: size x size) */
	nn_encoding encoding;   /* input encoding (nn/encode.h) */
	int in_planes;          /* = nn_encoding_planes(encoding) */
	int blocks;             /* residual blocks, 0..NN_MAX_BLOCKS */
	int channels;           /* tower width */
	uint8_t block_kind[NN_MAX_BLOCKS]; /* nn_block_kind of each block */
	int se_channels;        /* SE bottleneck width (used when a block is SE) */
	int policy_channels;    /* policy head conv width (LZ: 2) */
	int policy_outputs;     /* actions: points + pass (Go), columns (C4) */
	int value_channels;     /* value head conv width (LZ: 1) */
	int value_hidden;       /* value FC1 width (LZ: 256) */
	int value_outputs;      /* 1: tanh value; 3: win/draw/loss logits */
	int opp_policy;         /* 1: the opponent-reply head (training only) */
	int ownership;          /* 1: the ownership head (training only; Go) */
	int score;              /* 1: the score head (training only; Go) */
	uint32_t sizes;         /* Go: the board sizes the net plays, bit s for
				 * size s, each in the lower left corner of the
				 * board_w x board_h frame (the largest of them),
				 * the rest of the frame's planes 0 (the encoding's
				 * on-board plane marks the board); 0: board_w only */
	int masked_pool;        /* 1 (a net of several sizes): each SE block's
				 * channel means are over the board's points alone
				 * (nn_board_pool_weights), as KataGo's masked
				 * global pooling, not over the whole frame (0) */
} nn_arch;

typedef struct nn_conv {
	int c_in, c_out, k; /* channels in and out, kernel size (3 or 1) */
	float *w;           /* [c_out][c_in][k][k] */
	float *b;           /* [c_out] bias */
	float *bn_mean;     /* [c_out] BN running mean */
	float *bn_var;      /* [c_out] BN running variance */
	float *bn_gamma;    /* [c_out] BN scale */
	float *bn_beta;     /* [c_out] BN shift */
} nn_conv;

typedef struct nn_fc {
	int n_in, n_out; /* input and output widths */
	float *w;        /* [n_out][n_in] */
	float *b;        /* [n_out] */
} nn_fc;

typedef struct nn_block {
	nn_conv conv1, conv2; /* the two 3x3 convs */
	nn_fc se1, se2;       /* SE FCs; w == NULL when not an SE block */
} nn_block;

typedef struct nn_meta {
	uint64_t train_step;    /* learner step that produced the weights */
	uint64_t created;       /* creation time, Unix seconds */
	char parent[NN_ID_LEN]; /* id of the model it was trained from, or "" */
	char name[NN_ID_LEN];   /* free-form id or hash, or "" */
} nn_meta;

typedef struct nn_net {
	nn_arch arch;       /* shapes */
	nn_meta meta;       /* provenance, carried through files */
	int bn_folded;      /* 1: BN folded into conv w/b, bn_* are unused */
	nn_conv input;      /* input conv */
	nn_block block[NN_MAX_BLOCKS]; /* the tower, arch.blocks used */
	nn_conv policy_conv;           /* policy head */
	nn_fc policy_fc;
	nn_conv value_conv;            /* value head */
	nn_fc value_fc1, value_fc2;
	nn_fc opp_fc;                  /* opponent-reply head; w == NULL without one */
	nn_fc own_fc;                  /* ownership head (per point); w == NULL without */
	nn_fc score_fc;                /* score head; w == NULL without */
	float *data;        /* every tensor, carved in file order */
	size_t n_floats;    /* length of data */
} nn_net;

/* The optional training heads as bits (nn_arch's opp_policy, ownership,
 * score), the one numbering new networks, model files and checkpoints
 * share. */
enum { NN_HEAD_OPP = 1, NN_HEAD_OWN = 2, NN_HEAD_SCORE = 4, NN_HEADS_ALL = 7 };
int nn_arch_heads(const nn_arch *a);
void nn_arch_set_heads(nn_arch *a, int heads);
/* Every block of a squeeze-excitation with bottleneck se_channels (> 0),
 * or every block plain (0). */
void nn_arch_set_se(nn_arch *a, int se_channels);
/* The flags word of model files and checkpoints: bit 0 BN folded, bits
 * 1-3 the heads (NN_HEAD_* << 1). nn_flags_apply sets *folded and a's
 * heads from a word; -1 when it has bits beyond `known`. */
#define NN_FLAG_FOLDED 1u
#define NN_FLAGS_HEADS ((uint32_t)NN_HEADS_ALL << 1)
/* Bits 8-22: the board sizes 5..19 of nn_arch.sizes (model file version
 * 3 and checkpoints). */
#define NN_FLAGS_SIZES_SHIFT 8
#define NN_FLAGS_SIZES (0x7fffu << NN_FLAGS_SIZES_SHIFT)
/* Bit 4: nn_arch.masked_pool (model file version 4 and checkpoints). */
#define NN_FLAG_MASKED_POOL (1u << 4)
#define NN_FLAGS_ALL (NN_FLAG_FOLDED | NN_FLAGS_HEADS | NN_FLAG_MASKED_POOL | NN_FLAGS_SIZES)
uint32_t nn_net_flags(const nn_net *net);
int nn_flags_apply(uint32_t flags, uint32_t known, nn_arch *a, int *folded);

/* Expectations of a caller when loading; zero/negative fields mean "any". */
typedef struct nn_expect {
	int game;            /* game_kind, or -1 for any */
	int board_w, board_h; /* 0 for any */
} nn_expect;

/* A Leela Zero-shaped architecture for a Go board of `size` (policy 2,
 * value 1 channel, value FC 256, encoding LZ18). */
nn_arch nn_arch_lz(int size, int blocks, int channels);
/* Sente's default for a game: Go uses NN_ENC_GO_NATIVE and 1 value output,
 * Connect Four NN_ENC_C4 and 3 (WDL). Board from params. */
nn_arch nn_arch_default(const game_params *p, int blocks, int channels);
/* The game an architecture plays: its kind's defaults with the board size
 * from board_w where the game has a size choice. a->game must be a game. */
game_params nn_arch_params(const nn_arch *a);
/* True when the net plays a game of params p: its game, and its board
 * (one of arch.sizes for a net of several sizes). */
bool nn_arch_plays(const nn_arch *a, const game_params *p);
/* The board sizes of a net of several (nn_arch.sizes), ascending, into
 * out (at most max); their count, 0 for a net of one size. */
int nn_arch_size_list(const nn_arch *a, int *out, int max);
/* "9x9", or "9x9, 13x13" for a net of several sizes, into buf. */
const char *nn_arch_sizes_text(const nn_arch *a, char *buf, size_t len);
/* 0 when consistent, else -1 with a message. */
int nn_arch_check(const nn_arch *a, char *err, size_t errlen);

/* The float count of an architecture's weights (a model file's N), without
 * allocating them; 0 when memory is short. a must pass nn_arch_check. */
size_t nn_arch_floats(const nn_arch *a);
/* A net with every weight zero, BN the identity (var 1 - eps, gamma 1).
 * NULL with a message when the architecture is invalid or memory short. */
nn_net *nn_net_new(const nn_arch *a, char *err, size_t errlen);
void nn_net_free(nn_net *net);
/* Deep copy; NULL when memory is short. */
nn_net *nn_net_clone(const nn_net *net);
/* Fills weights with small random values and BN with plausible statistics
 * (deterministic for a seed): for tests and fresh untrained networks. */
void nn_net_init_random(nn_net *net, uint64_t seed);
/* Folds every BN into its conv's weight and bias; idempotent. */
void nn_net_fold_bn(nn_net *net);
/* The folded weights and bias of one conv of `net` (whether or not the net
 * is folded) into w[c_out*c_in*k*k] and b[c_out]. */
void nn_conv_folded(const nn_net *net, const nn_conv *c, float *w, float *b);
/* Multiply-adds of one position's forward pass, times two. */
double nn_net_flops(const nn_net *net);
/* Architecture in one line, e.g. "go 19x19 lz18 6x64 (se 0)". */
const char *nn_arch_describe(const nn_arch *a, char *buf, size_t len);

/* Model files (format above). Save returns 0, or -1 with a message (the
 * destination is untouched on failure). */
int nn_net_save(const nn_net *net, const char *path, char *err, size_t errlen);
/* Loads a .sente file; NULL with a message when it is not a valid model or
 * does not meet `expect` (may be NULL). */
nn_net *nn_net_load(const char *path, const nn_expect *expect, char *err, size_t errlen);
/* Same from memory (for fuzzers and tests). */
nn_net *nn_net_load_mem(const void *buf, size_t len, const nn_expect *expect, char *err,
			size_t errlen);
/* Either format: .sente, or Leela Zero v1 text (plain or gzip). */
nn_net *nn_net_load_any(const char *path, const nn_expect *expect, char *err, size_t errlen);

/* Leela Zero weights, format version 1 (text, plain or gzip), any blocks x
 * channels, 19x19. NULL with a message on any defect. */
nn_net *nn_lz_import(const char *path, char *err, size_t errlen);

/* Reference forward pass (plain loops in double; slow, for tests): planes
 * [batch][in_planes][H][W]; policy logits [batch][policy_outputs]; value
 * [batch] in [-1, 1] for the side to move (WDL nets: win - loss); wdl
 * [batch][3] probabilities (NULL allowed; unused for 1-output nets). */
void nn_reference_forward(const nn_net *net, int batch, const float *planes,
			  float *policy_logits, float *value, float *wdl);
/* The same, and the ownership head's [batch][H * W] (tanh: +1 the side to
 * move owns the point) and the score head's [batch] (the side to move's
 * final lead over the points of the board, score / (W * H)) where the net
 * has them; either output may be NULL, and is left as it is when the net
 * lacks its head. */
void nn_reference_forward_heads(const nn_net *net, int batch, const float *planes,
				float *policy_logits, float *value, float *wdl, float *ownership,
				float *score);

#endif
