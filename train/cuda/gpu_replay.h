/* gpu_replay.h: the learner's window of recent positions in device memory,
 * sampled and augmented on the device into a gpu_batch.
 *
 * Unlike the RAM window (train/replay.h), which keeps game records and
 * replays moves when a position is drawn, the device holds one compact
 * record per POSITION (train/cuda/replay_elem.h: packed input planes in the
 * canonical orientation, dense visit counts, the value target), built on
 * the host when games are added. The window is a ring of `window` records:
 * the j-th position uploaded lives in slot j % window, so adding past the
 * window overwrites the oldest positions, and sampling draws a slot
 * uniformly over the slots filled (all of them once the ring is full).
 *
 * Streams and threads. Games may be added from any host thread (a loader
 * reading the store) while another samples: records are packed on the host
 * into pinned staging buffers and copied on the buffer's own copy stream.
 * A copy waits for the last expansion enqueued by gpu_replay_sample (it may
 * be reading the slots being overwritten), and a sample makes its stream
 * wait for every copy issued before it, so positions become visible to
 * sampling exactly when their gpu_replay_add_games call has returned
 * before the sample's call; that depends on call order only, not timing,
 * which keeps data-parallel ranks that add the same games between the same
 * steps drawing the same batches. Samples must all go to one stream at a
 * time (the trainer's compute stream): the draws' scratch and the
 * "last expansion" event are the buffer's.
 *
 * The pure host parts (layout, packing records from a game_record, the
 * host expansion) need neither a device nor CUDA and are always built.
 * Streams are cudaStream_t passed as void *, so C without CUDA headers can
 * hold them; NULL is the legacy default stream.
 */
#ifndef SENTE_TRAIN_CUDA_GPU_REPLAY_H
#define SENTE_TRAIN_CUDA_GPU_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "data/record.h"
#include "nn/net.h"
#include "train/cuda/gpu_batch.h"
#include "train/cuda/replay_elem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host side: records and their expansion (no device needed) -------- */

/* Board sizes a layout holds at most (Go's 5 .. 19). */
enum { GR_MAX_SIZES = 15 };

/* What a record looks like for one network architecture, with the
 * symmetry tables the expansion reads. */
typedef struct gpu_replay_layout {
	game_params params;  /* game and board (komi comes from each record) */
	nn_encoding enc;     /* input encoding of the records */
	gr_dims d;           /* record and expansion shape (a frame's for a net
			      * of several sizes: replay_elem.h) */
	/* the board size of each table set k < d.n_sizes (a record's size
	 * word), ascending; [0] the frame's for a net of one size */
	int size[GR_MAX_SIZES];
	int frame_w, frame_h; /* the network's board: the frame of every size */
	/* [n_sizes][n_sym][hw]: under symmetry s, output point q of a board of
	 * size[k] shows canonical point point_inv[(k * n_sym + s) * hw + q]
	 * (the inverse symmetry's image of q; q itself off the board) */
	int16_t *point_inv;
	/* [n_sizes][n_sym][n_actions]: output action b takes the target of
	 * action action_inv[(k * n_sym + s) * n_actions + b] (pass stays pass,
	 * an action off the board stays itself) */
	int16_t *action_inv;
	/* value target (1 - l) z + l q: z the game's result, q the root value
	 * the search recorded (record_value_target); 0, the default: z */
	float value_q_weight;
	float value_lambda; /* z's lambda-return (record_value_target); 1, the
			     * default (gpu_replay_layout_init): z itself */
	bool value_cut;     /* the return cut at exploring moves (the same) */
} gpu_replay_layout;

/* The layout for networks of architecture a, tables from the game's own
 * symmetry function (engine/game.h), a set per board size for a net of
 * several sizes (records framed: replay_elem.h). 0, or -1 with a message (an arch
 * whose encoding does not fit its game, or short memory). */
int gpu_replay_layout_init(gpu_replay_layout *L, const nn_arch *a, char *err, size_t errlen);
/* Frees the tables; accepts NULL and a zeroed layout. */
void gpu_replay_layout_free(gpu_replay_layout *L);
/* Bytes of one record (4 * d.rec_words). */
size_t gpu_replay_record_bytes(const gpu_replay_layout *L);

/* Positions a game gives the window: its full-search moves that kept
 * visits (a full move without visits has no policy target, and the RAM
 * window could not sample it either). */
int gpu_replay_game_positions(const game_record *r);
/* Packs position g (to play, canonical orientation) with its visits and
 * value target into one record of L->d.rec_words words, with no ownership,
 * score or opponent-reply target where L has those heads
 * (gpu_replay_pack_heads and gpu_replay_pack_opp add them). 0, or -1 with a message: a game or move that does not fit L, no
 * visits, or a plane that nn_pack_planes cannot pack (two different
 * non-zero values; none of the encodings has one). */
int gpu_replay_pack_position(const gpu_replay_layout *L, const game *g, const int16_t *moves,
			     const uint16_t *counts, int n_visits, float value, uint32_t *rec,
			     char *err, size_t errlen);
/* Writes the head targets of position g into its record rec (the words of
 * the heads L has; nothing else): `owner` the final position's owners of
 * points 0 .. hw - 1 from the first player's view (-1, 0, +1; the game
 * desc's ownership), or NULL for no ownership target; `score` the game's
 * final score from the first player's view (game_record.score), or NaN for
 * none. Both are turned to g's side to move as train_batch_own_target and
 * train_batch_score_target turn them. 0, or -1 with a message (g's board
 * does not fit L, an owner outside -1 .. 1). */
int gpu_replay_pack_heads(const gpu_replay_layout *L, const game *g, const float *owner,
			  double score, uint32_t *rec, char *err, size_t errlen);
/* Writes the opponent-reply target into record rec of position g where L
 * has the head (nothing otherwise): n (move, count) pairs of g's actions in
 * the record's canonical orientation, record_reply_targets' for the
 * position; n 0, or counts
 * summing to 0, for none. 0, or -1 with a message (a move outside the
 * actions, more than 65535 visits to one). */
int gpu_replay_pack_opp(const gpu_replay_layout *L, const game *g, const int16_t *moves,
			const uint16_t *counts, int n, uint32_t *rec, char *err, size_t errlen);
/* Packs the positions of a whole game, in move order, replaying its moves
 * once (twice for the final owners where L has the ownership head and
 * nobody resigned), skipping the first `skip` of them: at most `max`
 * records into out (room for max * rec_words words), with the head
 * targets the CPU window gives (no ownership or score target for a
 * resigned game; the opponent-reply target of record_reply_targets). Returns the
 * records written, or -1 with a message (a record that does not replay or
 * does not fit L). */
int gpu_replay_pack_game(const gpu_replay_layout *L, const game_record *r, int skip,
			 uint32_t *out, int max, char *err, size_t errlen);

/* The reference for the device expansion: fills HOST arrays out->planes,
 * policy, value and wdl (wdl may be NULL), and own, own_w, score, score_w,
 * opp ([count][n_actions]) where they are not NULL, with positions records[slots[i]] under
 * symmetries syms[i], i < count, exactly as gpu_replay_sample lays them
 * out (planes NHWC [count][hw][c_pad] in out->dtype, fp16/bf16 rounded to
 * nearest even; own [count][hw]). out->hw, c_pad, n_actions must match L;
 * out->n is set to count. 0, or -1 when a shape, symmetry or count does
 * not fit, or out asks for a head's targets L has not. */
int gpu_replay_expand_host(const gpu_replay_layout *L, const uint32_t *records,
			   const int64_t *slots, const int *syms, int count, gpu_batch *out);

/* ---- device side ------------------------------------------------------- */

typedef struct gpu_replay gpu_replay;

/* The device number of a window kept in host memory: appending and
 * gpu_replay_download work as on a device (the same chunks, skipping and
 * wrap-around), sampling refuses. For tests, and builds without CUDA. */
#define GPU_REPLAY_HOST (-1)

/* An empty window of `window` positions for architecture a on CUDA device
 * `device` (or GPU_REPLAY_HOST): the ring, the symmetry tables, a copy
 * stream and two pinned staging buffers. NULL with a message (no such
 * device, built without CUDA, short memory). */
gpu_replay *gpu_replay_new(const nn_arch *a, int64_t window, int device, char *err,
			   size_t errlen);
/* Waits for its copies and frees everything; accepts NULL. The caller
 * must have finished the streams that sampled from it. */
void gpu_replay_free(gpu_replay *gr);

/* Appends the positions of n games, oldest first (the order they should
 * age in), packing them on the calling thread and copying them in chunks
 * on the copy stream. A call with more than `window` positions uploads
 * only its last `window` (the rest would be overwritten at once), though
 * gpu_replay_added counts them all. Thread-safe against sampling and other appends.
 * Returns 0, or -1 with a message (a record that does not fit the
 * buffer's architecture or does not replay, a CUDA failure); positions of
 * the games before the failing one stay added. */
int gpu_replay_add_games(gpu_replay *gr, const game_record *const *games, int n, char *err,
			 size_t errlen);
/* Same for one game (convenient in store_recent_games' callback, though
 * batches of games make fewer, larger copies). */
int gpu_replay_add_game(gpu_replay *gr, const game_record *r, char *err, size_t errlen);
/* Same for an array of records (as cli/run.c loads them), oldest first. */
int gpu_replay_add_records(gpu_replay *gr, const game_record *recs, int n, char *err,
			   size_t errlen);

/* For tests: stage `positions` per chunk (1 up to the size made at
 * create, about 8 MB of records) so that chunk boundaries fall inside
 * games. 0, or -1 when out of range. */
int gpu_replay_set_chunk(gpu_replay *gr, int positions);

/* The value target for positions added from now on (the layout's
 * value_q_weight, value_lambda and value_cut; the CPU window's
 * replay_set_value_target). */
void gpu_replay_set_value_target(gpu_replay *gr, float l, float lambda, bool cut);
int64_t gpu_replay_positions(gpu_replay *gr); /* positions sampling can draw */
int64_t gpu_replay_added(gpu_replay *gr);     /* positions ever added */
int64_t gpu_replay_window(const gpu_replay *gr);
/* Device bytes held: ring, tables and draw scratch (for reports). */
size_t gpu_replay_device_bytes(gpu_replay *gr);
const gpu_replay_layout *gpu_replay_get_layout(const gpu_replay *gr);

/* Draws n positions uniformly over the positions held and n symmetries
 * uniformly over the game's, on the device with cuRAND's Philox4_32_10:
 * draw k uses curand_init(seed, k, 4 * counter), so the draws depend only
 * on (seed, counter) and the positions held, and every data-parallel rank
 * draws the same batch. Expands only draws first .. first + count - 1 into
 * out slots 0 .. count - 1 (out->n = count), all enqueued on `stream`,
 * with the ownership, score and opponent-reply targets of the heads the
 * architecture has (out must have own and own_w, score and score_w, opp,
 * exactly for those).
 * count may be 0 (draws only). 0, or -1 with a message (empty window, a
 * batch that does not fit: out->cap < count, wrong shape, missing or
 * extra head arrays; a CUDA failure). */
int gpu_replay_sample(gpu_replay *gr, uint64_t seed, uint64_t counter, int n, int first,
		      int count, gpu_batch *out, void *stream, char *err, size_t errlen);
/* For tests: the slots and symmetries of the last sample's n draws
 * (either array may be NULL). Waits for the device. 0, or -1 with a
 * message (n larger than the last sample's). */
int gpu_replay_last_draws(gpu_replay *gr, int n, int64_t *slots, int *syms, char *err,
			  size_t errlen);
/* For tests: downloads `count` records from slot `first` on (waits for
 * the copies issued so far). 0, or -1 with a message. */
int gpu_replay_download(gpu_replay *gr, int64_t first, int64_t count, uint32_t *out, char *err,
			size_t errlen);

/* ---- gpu_batch in device memory ---------------------------------------- */

/* Allocates b on the current device for cap positions of architecture a
 * with planes of dtype, with WDL targets when wdl, and own, own_w for
 * a->ownership, score, score_w for a->score, opp for a->opp_policy
 * (planes and head targets zeroed). 0, or -1 with a message (b is then
 * empty). */
int gpu_batch_alloc(gpu_batch *b, int cap, const nn_arch *a, nn_dtype dtype, int wdl, char *err,
		    size_t errlen);
/* Frees b's device arrays and zeroes it; accepts NULL. */
void gpu_batch_free(gpu_batch *b);
/* Copies b's first b->n positions to host arrays (any may be NULL; wdl is
 * skipped when b has none). Waits for the device. 0, or -1 with a message. */
int gpu_batch_download(const gpu_batch *b, void *planes, float *policy, float *value, float *wdl,
		       char *err, size_t errlen);
/* Copies the head targets of b's first b->n positions to host arrays:
 * own [n][hw], own_w, score, score_w [n], opp [n][n_actions] (any may be
 * NULL; one b has not is skipped, as wdl is). Waits for the device. 0, or
 * -1 with a message. */
int gpu_batch_download_heads(const gpu_batch *b, float *own, float *own_w, float *score,
			     float *score_w, float *opp, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
