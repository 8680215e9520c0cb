/* fuzz_lz.c: libFuzzer target for Leela Zero v1 weights (nn_lz_import),
 * plain text or gzip. The loader reads a path, so each input is written
 * to an in-memory file (memfd) and loaded through /proc/self/fd. Any
 * bytes: refused with a message, or a 19x19 network of finite weights;
 * never a crash, a leak, or memory beyond what the shapes read so far
 * allow. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz/fuzz_util.h"
#include "nn/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz_lz", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	char err[512];
	err[0] = 0;
	nn_net *net = nn_lz_import(path, err, sizeof(err));
	if (net) {
		if (net->arch.board_w != 19)
			abort();
		fuzz_check_net(net, 1);
		nn_net_free(net);
	} else if (!err[0]) {
		abort();
	}
	return 0;
}
