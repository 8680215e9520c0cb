/* fuzz_gtp.c: libFuzzer target for the GTP parser and engine. The input is
 * split into lines and fed to a fresh engine (Go, 9x9), answers going to
 * /dev/null; a second engine plays Connect Four. Nothing may crash, leak or
 * read out of bounds, whatever the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gtp/engine.h"

static void feed(game_kind kind, const uint8_t *data, size_t size, FILE *sink)
{
	gtp_options opt = gtp_options_default();
	opt.game = game_params_default(kind);
	if (kind == GAME_KIND_GO)
		opt.game.size = 9;
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
	feed(GAME_KIND_GO, data, size, sink);
	feed(GAME_KIND_CONNECT4, data, size, sink);
	return 0;
}
