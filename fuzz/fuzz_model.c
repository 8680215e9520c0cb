/* fuzz_model.c: libFuzzer target for .sente model files (nn_net_load_mem).
 * Any bytes: refused with a message, or a network whose architecture is
 * valid, whose float count is its architecture's and whose weights are
 * finite. The input's last 4 bytes are replaced by the CRC-32 of the rest,
 * so the fuzzer reaches the header checks behind the checksum; nothing may
 * crash, leak, read out of bounds or allocate what the header alone asks
 * for (libFuzzer's -malloc_limit_mb catches that). */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz/fuzz_util.h"
#include "nn/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = fuzz_copy(data, size, 1);
	if (!copy)
		return 0;
	char err[512];
	nn_net *net = nn_net_load_mem(copy, size, NULL, err, sizeof(err));
	if (net) {
		fuzz_check_net(net, 1);
		nn_net_free(net);
	} else if (!err[0]) {
		abort(); /* a refusal says why */
	}
	free(copy);
	return 0;
}
