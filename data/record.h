/* record.h: the training record of one finished self-play game, and its
 * compact binary encoding (the BLOB in the store's games table).
 *
 * A record holds the moves, for each move whether it was searched fully
 * (playout-cap randomisation: only full searches are policy targets) and
 * whether it was an exploring move (not the search's own choice), the
 * root value, the sparse visit counts of the moves that kept
 * them, and the result. Input planes are not stored: the learner rebuilds
 * positions by replaying the moves (record_replay).
 *
 * Blob, version 3 (varint = unsigned LEB128, at most 5 bytes):
 *   "SREC"         magic
 *   u8             version (RECORD_VERSION)
 *   u8 kind, u8 size
 *   varint         zigzag(komi * 2)
 *   u8 result + 1, u8 resigned + 1
 *   f64            score (little-endian IEEE 754)
 *   u8             target (record_target; absent in version 1, which
 *                  still decodes, as visits)
 *   varint         n_moves
 *   varint[n]      moves
 *   u8[(n+7)/8]    full flags, bit i of byte i/8
 *   u8[(n+7)/8]    exploring-move flags, the same (absent before version
 *                  3, whose records decode with none)
 *   i8[n]          root value * 127 rounded; -128 = unknown (NaN)
 *   per move       varint n_v, then n_v pairs (varint move delta, varint
 *                  count); visit moves strictly increase, the delta is
 *                  move - previous - 1 (the first: the move itself)
 *   u32            CRC-32 (zlib) of every byte before it, little-endian
 * A 60-move 9x9 game with 30 full searches of 20 children is ~1.4 KB.
 */
#ifndef SENTE_DATA_RECORD_H
#define SENTE_DATA_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/game.h"

#define RECORD_MAGIC "SREC"
#define RECORD_VERSION 3

/* What the per-move counts of a record are. */
typedef enum record_target {
	RECORD_TARGET_VISITS = 0,   /* the search's visits (PUCT) */
	RECORD_TARGET_IMPROVED = 1, /* Gumbel search's improved policy, in
				     * thousandths (mcts_policy_target) */
} record_target;

/* One child of a searched root: the action and its visit count. */
typedef struct record_visit {
	int16_t move;   /* action, 0 .. game_num_actions - 1 */
	uint16_t count; /* visits it received */
} record_visit;

typedef struct game_record {
	game_params params;   /* game, size, komi */
	int n_moves;          /* moves played */
	int16_t *moves;       /* [n_moves] actions */
	/* [n_moves] 1: searched fully, its visits are a training target
	 * (playout-cap randomisation); 0: a fast search, not a target */
	uint8_t *full;
	/* [n_moves] 1: an exploring move, one that the temperature chose
	 * over the move the search itself would play (its most visited);
	 * 0: the search's own, or unknown (records before version 3) */
	uint8_t *explored;
	/* [n_moves] search value for the side to move, in [-1, 1], NaN when
	 * unknown; kept to 1/127 in the blob (finer than a value target needs) */
	float *root_value;
	/* [n_moves + 1] visits of move i are visits[visit_start[i] ..
	 * visit_start[i + 1]); an empty range for moves without visits */
	int32_t *visit_start;
	/* sparse visit counts of recorded moves, sorted by move within each
	 * range (record_add_move sorts them: the blob delta-codes the moves) */
	record_visit *visits;
	int n_visits;          /* entries in visits[] */
	int result;            /* +1 first player/Black won, -1 lost, 0 draw */
	double score;          /* Go: final area score B-W-komi (0 when resigned); C4: result */
	int resigned;          /* -1, or the player who resigned */
	record_target target;  /* what the counts are (both are policy
				* targets once normalised) */
	int capacity_moves;    /* allocated length of moves, full, root_value (visit_start: + 1) */
	int capacity_visits;   /* allocated length of visits[] */
} game_record;

/* An empty record for a game with parameters p: no moves, result 0,
 * score 0, nobody resigned. Allocates nothing; never fails. */
void record_init(game_record *r, const game_params *p);
/* Frees what the record owns and leaves it empty (params kept).
 * Accepts NULL. */
void record_free(game_record *r);

/* Appends a move with its search data: `v` (n_v entries, may be NULL when
 * n_v is 0) is copied and sorted by move. Returns 0, or -1 when memory runs
 * out or an argument is out of range (a move outside the game's actions, a
 * visit move repeated, n_v negative); the record is unchanged then. */
int record_add_move(game_record *r, int move, bool full, float root_value,
		    const record_visit *v, int n_v);
/* Marks the last move added as an exploring move (game_record.explored). */
void record_mark_explored(game_record *r);
/* Takes result, score and resignation from a finished game `g` (the game
 * the record's moves were played in). Go's score is 0 after a resignation. */
void record_set_outcome(game_record *r, const game *g);
/* Moves searched fully: the positions this game gives the learner. */
int record_full_count(const game_record *r);
/* The entropy (nats) of the search policies (visit distributions) of the
 * fully searched moves, summed; *n (may be NULL) gets how many were
 * summed, so that sum / n is their mean. A search that kept one child
 * adds 0. */
double record_policy_entropy(const game_record *r, int *n);
/* The value target of the position before move i from to_move's view:
 * (1 - q_weight) G + q_weight q, q the root value the search recorded
 * (KataGo and others mix the two: q is less noisy than one game's result)
 * and G the lambda-return of the root values that follow,
 *   G = (1 - lambda) sum_k lambda^(k-1) q'_(i+k) + lambda^(n-1-i) z,
 * q'_j the root value of move j from to_move's view (sides alternate), z
 * the result. lambda 1 gives z: the result alone. A smaller lambda trusts
 * the searches a few moves on more than a result that the later moves'
 * exploration (temperature, noise) decided; an unknown (NaN) root value
 * passes its weight on to what follows. q_weight 0, or q unknown, gives G
 * alone.
 * With `cut` (Watkins' Q(lambda)), G stops at the first exploring move at
 * or after i whose root value is known: that root value, from to_move's
 * view, stands in for the rest of the game, which the exploring move made
 * a game of another, weaker policy. */
float record_value_target(const game_record *r, int i, int to_move, float q_weight, float lambda,
			  bool cut);
/* The targets of the position before move i, where `to_move` is to play:
 * the visits of move i into moves/counts (room for GAME_MAX_ACTIONS each)
 * and the result from to_move's view into *value. Returns the visit
 * count (0 when move i kept none). */
int record_position_targets(const game_record *r, int i, int to_move, int16_t *moves,
			    uint16_t *counts, float *value);
/* The opponent-reply target of the position before move i (the auxiliary
 * head's, trainer.h): the search's visits of move i + 1 where the record
 * kept them, else the move played there with count 1; none (0) after the
 * last move. Into moves/counts (room for GAME_MAX_ACTIONS each); returns
 * their number. */
int record_reply_targets(const game_record *r, int i, int16_t *moves, uint16_t *counts);

/* Plays the first `upto` moves (all when negative or beyond n_moves) onto a
 * fresh game `g`. Returns 0, or -1 when the parameters are invalid or a
 * move is illegal (a record from record_decode never is). */
int record_replay(const game_record *r, int upto, game *g);

/* A deep copy of src into dst, which is overwritten (it must not hold
 * anything to free): every field, root values unrounded. 0, or -1 when
 * memory runs out (dst left empty). */
int record_copy(game_record *dst, const game_record *src);

/* Encodes the record into a malloc'd blob the caller frees. Returns 0, or
 * -1 when memory runs out or the record cannot be encoded (parameters,
 * result or resignation out of range). */
int record_encode(const game_record *r, uint8_t **blob, size_t *len);

/* Decodes a blob into `out`, which is overwritten (it must not hold anything
 * to free). Refuses, with a message in err, a blob that is truncated,
 * corrupt (checksum), of a newer version, or whose moves are not a legal
 * game (checked by replaying them). Never reads outside blob[0..len).
 * Returns 0, or -1 with `out` left empty (record_free is safe either way). */
int record_decode(const uint8_t *blob, size_t len, game_record *out, char *err, size_t errlen);

#endif
