/* fuzz_util.h: what the libFuzzer targets of file formats share. */
#ifndef SENTE_FUZZ_UTIL_H
#define SENTE_FUZZ_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "nn/net.h"

/* An exact-size copy of the input (so ASan sees any overread); with
 * fix_crc, its last 4 bytes become the CRC-32 (little-endian) of the rest,
 * so the fuzzer reaches what lies behind a checksum. NULL when memory is
 * short. */
static inline uint8_t *fuzz_copy(const uint8_t *data, size_t size, int fix_crc)
{
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return NULL;
	memcpy(copy, data, size);
	if (fix_crc && size > 4) {
		uint32_t crc = (uint32_t)crc32(0L, copy, (uInt)(size - 4));
		for (int i = 0; i < 4; i++)
			copy[size - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
	}
	return copy;
}

/* What every loaded network must be: a valid architecture and as many
 * floats as it needs, all finite when `finite` (model files promise it; a
 * checkpoint holds whatever the learner had). Aborts otherwise. */
static inline void fuzz_check_net(const nn_net *net, int finite)
{
	char err[256];
	if (nn_arch_check(&net->arch, err, sizeof(err)) != 0 ||
	    nn_arch_floats(&net->arch) != net->n_floats)
		abort();
	for (size_t i = 0; finite && i < net->n_floats; i++)
		if (!isfinite(net->data[i]))
			abort();
}

#endif
