/* fuzz_record.c: libFuzzer target for the game-record decoder. Any bytes:
 * refused with a message or decoded into a record that encodes again and
 * decodes to the same moves. Never a crash, a leak or an overread. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/record.h"
#include "fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Half the inputs get a valid CRC-32 (little-endian, last 4 bytes) so
	 * the fuzzer reaches the decoder behind the checksum. */
	uint8_t *copy = fuzz_copy(data, size, size > 0 && (data[0] & 1));
	if (!copy)
		return 0;
	game_record r, back;
	char err[256];
	if (record_decode(copy, size, &r, err, sizeof(err)) == 0) {
		uint8_t *blob = NULL;
		size_t len = 0;
		if (record_encode(&r, &blob, &len) != 0 ||
		    record_decode(blob, len, &back, err, sizeof(err)) != 0)
			abort();
		if (back.n_moves != r.n_moves || memcmp(back.moves, r.moves, sizeof(int16_t) * (size_t)r.n_moves))
			abort();
		record_free(&back);
		free(blob);
		record_free(&r);
	}
	free(copy);
	return 0;
}
