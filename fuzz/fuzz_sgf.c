/* fuzz_sgf.c: libFuzzer target for the SGF reader. Whatever the bytes, the
 * reader must not crash, leak or read past the input (it gets an exact-size
 * copy, so ASan sees any overread). When the input parses, the record is
 * replayed onto a board, which must stay consistent, and written back out:
 * reading that text must give the same record again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sgf.h"

static go_board board; /* large: keep off the stack */

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Setup stones of one colour in file order (the writer groups them by
 * colour, so only the per-colour order survives a round trip). */
static int setup_eq(const sgf_record *a, const sgf_record *b, int color)
{
	int i = 0, j = 0;
	for (;;) {
		while (i < a->n_setup && a->setup[i].color != color)
			i++;
		while (j < b->n_setup && b->setup[j].color != color)
			j++;
		if (i == a->n_setup || j == b->n_setup)
			return i == a->n_setup && j == b->n_setup;
		if (a->setup[i].point != b->setup[j].point)
			return 0;
		i++;
		j++;
	}
}

static int record_eq(const sgf_record *a, const sgf_record *b)
{
	if (a->game != b->game || a->size != b->size || a->komi != b->komi ||
	    a->handicap != b->handicap || strcmp(a->rules, b->rules) || strcmp(a->pb, b->pb) ||
	    strcmp(a->pw, b->pw) || strcmp(a->re, b->re) || strcmp(a->dt, b->dt) ||
	    !str_eq(a->comment, b->comment) || a->n_setup != b->n_setup ||
	    a->n_moves != b->n_moves || !setup_eq(a, b, GO_BLACK) || !setup_eq(a, b, GO_WHITE))
		return 0;
	for (int i = 0; i < a->n_moves; i++)
		if (a->moves[i].color != b->moves[i].color || a->moves[i].point != b->moves[i].point ||
		    !str_eq(a->moves[i].comment, b->moves[i].comment))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	sgf_record rec, again;
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (sgf_read(copy, size, &rec, err, sizeof(err)) != 0) {
		/* Every failure says where. */
		if (strncmp(err, "sgf: byte ", 10) != 0)
			abort();
		sgf_record_free(&rec);
		free(copy);
		return 0;
	}
	free(copy);

	if (sgf_replay(&rec, &board, -1, err, sizeof(err)) == 0 && !go_check(&board))
		abort();

	char *text = sgf_write(&rec);
	if (!text)
		abort(); /* a record sgf_read returned is always writable */
	if (sgf_read(text, strlen(text), &again, err, sizeof(err)) != 0) {
		fprintf(stderr, "written record does not read back: %s\n%s\n", err, text);
		abort();
	}
	if (!record_eq(&rec, &again)) {
		fprintf(stderr, "round trip changed the record:\n%s\n", text);
		abort();
	}
	/* Edits are written a node's result at a time: the positions agree. */
	static go_board again_board;
	int r1 = sgf_replay(&rec, &board, -1, err, sizeof(err));
	int r2 = sgf_replay(&again, &again_board, -1, err, sizeof(err));
	if (r1 != r2 || (r1 == 0 && go_hash(&board) != go_hash(&again_board))) {
		fprintf(stderr, "round trip changed the position:\n%s\n", text);
		abort();
	}
	free(text);
	sgf_record_free(&again);
	sgf_record_free(&rec);
	return 0;
}
