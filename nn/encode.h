/* encode.h: a position (plus its history) as network input planes.
 *
 * Planes are float, NCHW for one position: C planes of H x W, the plane
 * index of point (x, y) being y * W + x with y = 0 the bottom row (the same
 * indexing as engine/game.h moves, and as Leela Zero's NN input). "Own" and
 * "opponent" always mean the side to move NOW, also in the history planes.
 *
 * NN_ENC_LZ18 (Go, 18 planes): exactly Leela Zero's layout.
 *    0..7   own stones now, 1, ..., 7 positions ago
 *    8..15  opponent's stones, same times
 *    16     all ones when Black is to move
 *    17     all ones when White is to move
 *   A position before the first one has no stones (all zeros).
 *
 * NN_ENC_GO_NATIVE (Go, 27 planes): sente's own encoding.
 *    0..7   own stones now, 1, ..., 7 positions ago (as LZ)
 *    8..15  opponent's stones, same times (as LZ)
 *    16..19 own stones whose group has 1, 2, 3, >= 4 liberties (now)
 *    20..23 opponent stones whose group has 1, 2, 3, >= 4 liberties (now)
 *    24     komi / 15 from the side to move's view: -komi/15 when Black is
 *           to move, +komi/15 when White is (constant plane)
 *    25     all ones when Black is to move
 *    26     all ones (on board): lets the convolutions see the edge, since
 *           they pad with zeros
 *
 * NN_ENC_C4 (Connect Four, 3 planes, 7 wide x 6 high, y = 0 the bottom row):
 *    0      discs of the side to move
 *    1      discs of the opponent
 *    2      all ones when the first player is to move
 *
 * Symmetries: nn_encode_sym(g, enc, s, planes) writes the encoding of the
 * position transformed by symmetry s of engine/game.h: the value that
 * nn_encode puts at point p lands at point game_symmetry_move(g, s, p). The
 * policy of the transformed position at action a therefore belongs to action
 * game_symmetry_move(g, game_symmetry_inverse(g, s), a) of the original.
 */
#ifndef SENTE_NN_ENCODE_H
#define SENTE_NN_ENCODE_H

#include "engine/game.h"

typedef enum nn_encoding {
	NN_ENC_LZ18 = 0,      /* Go, Leela Zero's 18 planes */
	NN_ENC_GO_NATIVE = 1, /* Go, sente's 27 planes */
	NN_ENC_C4 = 2,        /* Connect Four, 3 planes */
	NN_ENC_COUNT
} nn_encoding;

/* Number of planes of an encoding, 0 for an unknown one. */
int nn_encoding_planes(nn_encoding enc);
/* "lz18", "go_native", "c4"; "?" when unknown. */
const char *nn_encoding_name(nn_encoding enc);
/* Name -> encoding; false when unknown. */
bool nn_encoding_from_name(const char *name, nn_encoding *out);
/* The game kind an encoding is for. */
game_kind nn_encoding_game(nn_encoding enc);
/* A game's encodings, named by its descriptor (engine/game_desc.h): the
 * one used without a network (Leela Zero's for Go), and a new network's. */
nn_encoding nn_encoding_for_game(const game_params *p);
nn_encoding nn_encoding_for_new_net(const game_params *p);

/* A key of everything nn_encode(g, enc, ...) reads: the position, the
 * earlier positions of its history planes, komi where the planes show it.
 * Equal planes have equal keys (the NN cache's; it may be 0). */
uint64_t nn_encode_key(const game *g, nn_encoding enc);

/* Writes the planes of g (room for planes * width * height floats); returns
 * the plane count, or -1 when the encoding is not for g's game. */
int nn_encode(const game *g, nn_encoding enc, float *planes);
/* Same, for the position transformed by symmetry sym (see above). */
int nn_encode_sym(const game *g, nn_encoding enc, int sym, float *planes);
/* Where nn_encode_sym puts what nn_encode has at plane point q (y * width
 * + x): a point's image under sym, or for Connect Four, whose symmetry acts
 * on columns, the same row of the column's image. */
int nn_encode_sym_point(const game *g, int sym, int q);

/* A net of several board sizes (nn_arch.sizes) sees each board in the
 * lower left corner of its frame of fw x fh points: nn_encode_sym's
 * planes there, 0 elsewhere (the on-board plane marks the board). Room for
 * planes * fw * fh floats; the plane count, or -1 as nn_encode_sym, or
 * when the board is larger than the frame. A board of the frame's size
 * is nn_encode_sym. */
int nn_encode_frame(const game *g, nn_encoding enc, int sym, int fw, int fh, float *planes);
/* Where action a of g (a point y * width + x, or the pass) is in a frame
 * of fw x fh: y * fw + x, the pass fw * fh; a itself when the frame is
 * g's board. */
int nn_frame_action(const game *g, int a, int fw, int fh);

/* Masked pooling (nn_arch.masked_pool): the weights of one position's hw
 * points in a channel mean over its board alone, read from its planes
 * (enc's): 1 / (points on the board) where the on-board plane (go_native's
 * 26; Leela Zero's side-to-move planes 16 and 17 together) is set, 0
 * elsewhere, into w[hw]. Connect Four's board is every point. Returns the
 * points on the board; a position with none gets the plain mean (1 / hw
 * everywhere) and returns hw. */
int nn_board_pool_weights(nn_encoding enc, const float *planes, int hw, float *w);
/* The planes nn_board_pool_weights reads for enc: the on-board plane into
 * *on and a second one whose points are on the board too into *also, -1
 * where there is none (Connect Four: every point is on the board). */
void nn_board_planes(nn_encoding enc, int *on, int *also);

#endif
