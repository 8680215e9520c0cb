/* fuzz_gtp_reply.c: libFuzzer target for the GTP client's reading of other
 * engines' answers: framing ("=id text\n\n", "? ...", chatter before it,
 * multi-line answers, CR LF), then each answer read as genmove's move
 * (for every game) and as final_score's score. No process is started:
 * the functions gtp_client_send uses are called on the bytes directly.
 *
 * The first byte sets the answer buffer's size (0: none) and how many
 * bytes arrive at a time; the rest is the engine's output. It is framed
 * twice, as it arrives in pieces and all at once, and the two must give
 * the same answers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/game_desc.h"
#include "fuzz/fuzz_util.h"
#include "gtp/client.h"

#define MAX_ANSWERS 64

typedef struct answers {
	int n;                      /* answers framed */
	bool ok[MAX_ANSWERS];       /* '=' or '?' */
	char *text[MAX_ANSWERS];    /* their texts, malloc'd (NULL without room) */
} answers;

static game games[8];
static int n_games;

/* Reads one answer as the match code does: a move of every game, a score. */
static void read_answer(const char *text)
{
	for (int i = 0; i < n_games; i++) {
		int mv;
		bool resign;
		if (gtp_client_parse_move(&games[i], text, &mv, &resign) && !resign)
			(void)game_is_legal(&games[i], mv);
	}
	int result;
	double score;
	/* A score is finite and says who won: Black's score is positive
	 * exactly when Black won (or zero, "B+R"), and zero for a draw. */
	if (gtp_client_parse_score(text, &result, &score) &&
	    (result < -1 || result > 1 || !isfinite(score) || (result > 0 && score < 0) ||
	     (result < 0 && score > 0) || (result == 0 && score != 0)))
		abort();
}

/* Frames buf as it arrives `step` bytes at a time into a buffer of cap
 * bytes, as gtp_client_send does, recording the answers. */
static void frame_all(const uint8_t *data, size_t size, size_t step, size_t cap,
		      size_t answer_len, answers *out)
{
	char *buf = malloc(cap);
	if (!buf)
		return;
	size_t len = 0, fed = 0;
	out->n = 0;
	for (;;) {
		char *ans = answer_len ? malloc(answer_len) : NULL;
		bool complete, ok;
		/* An exact-size copy, so ASan sees any read past len. */
		uint8_t *view = fuzz_copy((const uint8_t *)buf, len, 0);
		if (!view) {
			free(ans);
			break;
		}
		size_t used = gtp_client_frame((const char *)view, len, &complete, &ok, ans, answer_len);
		free(view);
		if (used > len || (complete && used == 0))
			abort();
		if (ans && complete && strnlen(ans, answer_len) >= answer_len)
			abort();
		memmove(buf, buf + used, len - used);
		len -= used;
		if (complete && out->n < MAX_ANSWERS) {
			out->ok[out->n] = ok;
			out->text[out->n++] = ans;
			if (ans)
				read_answer(ans);
			continue;
		}
		free(ans);
		if (complete)
			continue;
		if (fed == size || len == cap)
			break; /* the end, or an answer larger than the client keeps */
		size_t k = size - fed < step ? size - fed : step;
		if (k > cap - len)
			k = cap - len;
		memcpy(buf + len, data + fed, k);
		fed += k;
		len += gtp_client_drop_cr(buf + len, k);
	}
	free(buf);
}

static void free_answers(answers *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->text[i]);
	a->n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!n_games) {
		for (const game_desc *const *d = game_descs; *d && n_games < 7; d++) {
			if (game_init(&games[n_games], &(*d)->defaults) == GAME_OK)
				n_games++;
			if ((*d)->has_size) {
				game_params p = (*d)->defaults;
				p.size = 9 < (*d)->min_size ? (*d)->min_size : 9;
				if (game_init(&games[n_games], &p) == GAME_OK)
					n_games++;
			}
		}
	}
	if (size == 0)
		return 0;
	size_t answer_len = data[0] & 0x0F ? (size_t)1 << (data[0] & 0x0F) : 0;
	size_t step = 1 + (data[0] >> 4) * 7;
	static answers whole, pieces;
	/* The client keeps 64 KiB; a small buffer reaches "too large" too. */
	size_t cap = size > 512 ? 1 << 16 : 256;
	frame_all(data + 1, size - 1, size, cap, answer_len, &whole);
	frame_all(data + 1, size - 1, step, cap, answer_len, &pieces);
	/* A buffer that filled up ends the client's reading: only the answers
	 * both framings reached compare. */
	int n = whole.n < pieces.n ? whole.n : pieces.n;
	for (int i = 0; i < n; i++)
		if (whole.ok[i] != pieces.ok[i] ||
		    (whole.text[i] && strcmp(whole.text[i], pieces.text[i]) != 0))
			abort();
	free_answers(&whole);
	free_answers(&pieces);
	return 0;
}
