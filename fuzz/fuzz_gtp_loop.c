/* fuzz_gtp_loop.c: libFuzzer target for the GTP engine's reading loop as a
 * whole: the bytes become the engine's standard input (a memfd, so that
 * gtp_engine_run reads and polls a real descriptor), its answers go to
 * another. Line framing is the loop's own: over-long lines, NULs,
 * control characters, CR/LF mixes and a last line without its newline
 * all reach it as they would from a pipe. The first byte picks the game;
 * the engine has no weights and tiny search limits, and runs in a folder
 * of its own (see fuzz_gtp.h).
 *
 * What it answers must be GTP, whatever it was sent: read back with the
 * client's framing, every byte belongs to an answer that starts with '='
 * or '?' and ends at its blank line, so that no client reads an answer's
 * rest as the next one.
 *
 * So that small inputs reach the loop's limits (8 KiB lines, a 64 KiB
 * buffer full of one line), the byte 0xFE followed by n stands for
 * (n + 1) * 512 copies of the byte before it, up to 256 KiB in all. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include "fuzz/fuzz_gtp.h"
#include "gtp/client.h"

#define REPEAT_BYTE 0xFE
#define MAX_STDIN (256u << 10)

/* The input with its repeats expanded, into out (MAX_STDIN bytes). */
static size_t expand(const uint8_t *data, size_t size, uint8_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < size && n < MAX_STDIN; i++) {
		if (data[i] == REPEAT_BYTE && i + 1 < size) {
			size_t k = ((size_t)data[++i] + 1) * 512;
			uint8_t c = n ? out[n - 1] : 'x';
			if (k > MAX_STDIN - n)
				k = MAX_STDIN - n;
			memset(out + n, c, k);
			n += k;
		} else {
			out[n++] = data[i];
		}
	}
	return n;
}

/* A memfd holding bytes, at offset 0, as a FILE; aborts when it cannot. */
static FILE *memfd_file(const char *name, const uint8_t *bytes, size_t len, const char *mode)
{
	int fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t off = 0; off < len;) {
		ssize_t k = write(fd, bytes + off, len - off);
		if (k <= 0)
			abort();
		off += (size_t)k;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		abort();
	FILE *f = fdopen(fd, mode);
	if (!f)
		abort();
	return f;
}

/* Aborts unless out, from its start, is nothing but whole GTP answers. */
static void check_answers(FILE *out)
{
	long n = ftell(out);
	if (n < 0 || fseek(out, 0, SEEK_SET) != 0)
		abort();
	char *buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, out) != (size_t)n)
		abort();
	size_t at = 0, len = (size_t)n;
	while (at < len) {
		bool complete, ok;
		if (buf[at] != '=' && buf[at] != '?')
			abort(); /* not an answer's start: a client skips it as chatter */
		size_t used = gtp_client_frame(buf + at, len - at, &complete, &ok, NULL, 0);
		if (!complete || used == 0)
			abort(); /* an answer without its blank line */
		at += used;
	}
	free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_gtp_enter_dir(argc, argv);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *text;
	if (!text)
		text = malloc(MAX_STDIN);
	if (!text || size == 0)
		return 0;
	int n_games = 0;
	while (game_descs[n_games])
		n_games++;
	const game_desc *d = game_descs[data[0] % n_games];
	size_t len = expand(data + 1, size - 1, text);
	FILE *in = memfd_file("gtp_stdin", text, len, "r");
	FILE *out = memfd_file("gtp_stdout", text, 0, "w+");
	gtp_engine *e = fuzz_gtp_engine(d);
	if (e) {
		gtp_engine_run(e, in, out);
		gtp_engine_free(e);
		check_answers(out);
	}
	fclose(in);
	fclose(out);
	return 0;
}
