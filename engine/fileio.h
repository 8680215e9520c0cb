/* fileio.h: whole-file reads and crash-safe writes for sente's binary
 * formats (model files, learner checkpoints) and its text files (SGF,
 * pages).
 *
 * A writer fills a temporary file of its own, PATH.tmp.PID.N (PATH.tmp
 * below), folding every byte into a CRC-32 (zlib); commit appends the
 * CRC, flushes and fsyncs the file, renames it over PATH and fsyncs the
 * folder, so a reader finds the old file or the new one, whole, whatever
 * moment the process or the machine died, and two writers of one path at
 * once leave one of their files whole (the last renamed). A process that
 * dies mid-write leaves its PATH.tmp.PID.N behind, for fileio_sweep.
 */
#ifndef SENTE_ENGINE_FILEIO_H
#define SENTE_ENGINE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct fileio_writer {
	FILE *f;           /* PATH.tmp, NULL once committed or aborted */
	char *tmp;         /* its name */
	const char *path;  /* the final name (the caller's string) */
	unsigned long crc; /* of the bytes put so far */
	int failed;        /* errno of the first failed write, else 0 */
} fileio_writer;

/* Opens PATH.tmp for writing; 0, or -1 with a message. */
int fileio_begin(fileio_writer *w, const char *path, char *err, size_t errlen);
/* Appends n bytes (any size). Errors are kept for commit. */
void fileio_put(fileio_writer *w, const void *p, size_t n);
/* Appends the CRC (4 bytes, little-endian as stored), makes the file
 * durable and renames it to PATH; 0, or -1 with a message (PATH.tmp is
 * removed then). */
int fileio_commit(fileio_writer *w, char *err, size_t errlen);
/* Replaces PATH by a text file (an SGF, a page) the same way, without the
 * CRC: PATH.tmp written, fsynced and renamed, so PATH is the old text or
 * the new one whatever happens; 0, or -1 with a message (PATH.tmp
 * removed). */
int fileio_write_text(const char *path, const char *text, char *err, size_t errlen);
/* Drops PATH.tmp (after an error of the caller's own). */
void fileio_abort(fileio_writer *w);

/* Removes the temporary files (NAME.tmp.PID.N) that writers killed
 * mid-write left in folder `dir` (not below it): every one when `owned`
 * (the caller holds the folder, so no other writer is at work there),
 * else those whose PID is no process of this machine. Other files are not
 * touched. The number removed, or -1 when the folder cannot be read. */
int fileio_sweep(const char *dir, bool owned);

/* CRC-32 of n bytes, as the writer computes it (for readers). */
uint32_t fileio_crc(const void *p, size_t n);

/* Opens a regular file for reading and returns its descriptor; -1 with a
 * message naming `what` and the path when it cannot be opened or is not a
 * regular file (a FIFO, a device or a folder is refused at once, never
 * waited on). */
int fileio_open_regular(const char *path, const char *what, char *err, size_t errlen);

/* Reads a whole regular file into a malloc'd buffer; NULL with a message
 * naming `what` ("model", "checkpoint") and the path. */
uint8_t *fileio_slurp(const char *path, const char *what, size_t *len, char *err,
		      size_t errlen);

/* Little-endian loads from a byte buffer (the formats are written on and
 * for little-endian machines). */
static inline uint32_t fileio_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t fileio_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

#endif
