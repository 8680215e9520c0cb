/* fuzz_gtp.c: libFuzzer target for the GTP parser and engine. The input is
 * split into lines and fed to a fresh engine for each game (a 9x9 board
 * where the size is a choice), answers going to /dev/null. Nothing may
 * crash, leak or read out of bounds, whatever the bytes. It runs in a
 * folder of its own (see fuzz_gtp.h). */
#include <stdint.h>
#include <stdio.h>

#include "fuzz/fuzz_gtp.h"

static void feed(const game_desc *d, const uint8_t *data, size_t size, FILE *sink)
{
	gtp_engine *e = fuzz_gtp_engine(d);
	if (!e)
		return;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size || data[i] == '\n') {
			if (!gtp_engine_handle(e, (const char *)data + start, i - start, sink))
				break;
			start = i + 1;
		}
	}
	gtp_engine_free(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_gtp_enter_dir(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	for (const game_desc *const *d = game_descs; *d; d++)
		feed(*d, data, size, sink);
	return 0;
}
