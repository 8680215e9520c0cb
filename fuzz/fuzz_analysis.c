/* fuzz_analysis.c: libFuzzer target for the JSON analysis engine
 * (gtp/analysis.h). The input is split into lines, each handed to a fresh
 * engine as a query or action, then every turn is waited for; answers go
 * to /dev/null. Nothing may crash, leak or read out of bounds, whatever
 * the bytes. The engine has no network, one analysis thread, 4 visits, a
 * tiny tree (a query's maxVisits cannot make a search long: a full pool
 * ends it) and 2 score playouts: the fuzzer is after the parser and the
 * answers, not the search. */
#include <stdint.h>
#include <stdio.h>

#include "gtp/analysis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	analysis_options o = analysis_options_default();
	o.threads = 1;
	o.max_visits = 4;
	o.tree_bytes = 1 << 20;
	o.cache_bytes = 0;
	o.score_playouts = 2;
	o.quiet = true;
	char err[128];
	analysis_engine *a = analysis_engine_new(&o, sink, err, sizeof(err));
	if (!a)
		return 0;
	size_t start = 0;
	for (size_t i = 0; i <= size; i++) {
		if (i == size || data[i] == '\n') {
			analysis_engine_handle(a, (const char *)data + start, i - start);
			start = i + 1;
		}
	}
	analysis_engine_drain(a);
	analysis_engine_free(a);
	return 0;
}
