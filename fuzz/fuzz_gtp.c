/* fuzz_gtp.c: libFuzzer target for the GTP parser and engine. The input is
 * split into lines and fed to a fresh engine for each game (a 9x9 board
 * where the size is a choice), answers going to /dev/null. Nothing may
 * crash, leak or read out of bounds, whatever the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/game_desc.h"
#include "gtp/engine.h"

static void feed(const game_desc *d, const uint8_t *data, size_t size, FILE *sink)
{
	gtp_options opt = gtp_options_default();
	opt.game = d->defaults;
	if (d->has_size)
		opt.game.size = 9 < d->min_size ? d->min_size : 9 > d->max_size ? d->max_size : 9;
	/* Small searches: the fuzzer is after the parser and handlers. */
	opt.search.threads = 1;
	opt.search.max_visits = 16;
	opt.search.max_memory = 16 << 20;
	opt.cache_bytes = 0;
	opt.ponder = false;
	opt.quiet = true;
	char err[128];
	gtp_engine *e = gtp_engine_new(&opt, err, sizeof(err));
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	for (const game_desc *const *d = game_descs; *d; d++)
		feed(*d, data, size, sink);
	return 0;
}
