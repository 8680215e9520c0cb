/* fuzz_checkpoint.c: libFuzzer target for learner checkpoints (the parser
 * of train/checkpoint.c, from memory). The input's last 4 bytes are
 * replaced by the CRC-32 of the rest so the fuzzer gets past the checksum.
 * A checkpoint that gives a network is then read in full, as a trainer
 * with each optimizer would (SGD: one moment array, AdamW: two); a read
 * that fails must leave the destination untouched. Never a crash, a leak,
 * an overread, or an allocation the header alone asks for. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_util.h"
#include "train/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = fuzz_copy(data, size, 1);
	if (!copy)
		return 0;
	char err[512];
	nn_net *net = train_ckpt_net_mem(copy, size, "fuzz", err, sizeof(err));
	if (!net)
		goto out;
	fuzz_check_net(net, 0);
	nn_net *before = nn_net_clone(net);
	size_t bytes = net->n_floats * sizeof(float);
	float *mom[2] = { calloc(1, bytes ? bytes : 1), calloc(1, bytes ? bytes : 1) };
	if (before && mom[0] && mom[1]) {
		for (uint32_t opt = 0; opt < 2; opt++) {
			train_ckpt_state s = { .optimizer = opt, .n_mom = (int)opt + 1 };
			void *blob = NULL;
			size_t blob_len = 0;
			int rc = train_ckpt_read_mem(copy, size, "fuzz", net, mom, &s, &blob, &blob_len,
						     err, sizeof(err));
			if (rc != 0 && memcmp(net->data, before->data, bytes) != 0)
				abort(); /* a refused read changed the net */
			free(blob);
		}
	}
	free(mom[0]);
	free(mom[1]);
	nn_net_free(before);
	nn_net_free(net);
out:
	free(copy);
	return 0;
}
