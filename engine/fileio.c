#include "engine/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

/* Temporary names taken by this process so far: with the pid they make
 * each writer's PATH.tmp.PID.N its own, so that two writers of one path
 * (two threads, or `sente eval` beside `sente run`) never share a file. */
static _Atomic unsigned long tmp_serial;

int fileio_begin(fileio_writer *w, const char *path, char *err, size_t errlen)
{
	memset(w, 0, sizeof(*w));
	w->path = path;
	w->crc = crc32(0L, Z_NULL, 0);
	size_t n = strlen(path) + 48;
	w->tmp = malloc(n);
	if (!w->tmp) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* O_EXCL: a name left by a dead process of the same pid is skipped,
	 * never written into. 0666 less the umask, as fopen would make it. */
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		snprintf(w->tmp, n, "%s.tmp.%ld.%lu", path, (long)getpid(), tmp_serial++);
		fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd >= 0 && !(w->f = fdopen(fd, "wb"))) {
		int e = errno;
		close(fd);
		unlink(w->tmp);
		errno = e;
	}
	if (!w->f) {
		snprintf(err, errlen, "cannot create %s: %s", w->tmp, strerror(errno));
		free(w->tmp);
		w->tmp = NULL;
		return -1;
	}
	return 0;
}

void fileio_put(fileio_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	/* crc32 takes a uInt length: feed it in chunks. */
	for (size_t done = 0; done < n;) {
		size_t k = n - done > (1u << 30) ? (1u << 30) : n - done;
		w->crc = crc32(w->crc, b + done, (uInt)k);
		done += k;
	}
	if (!w->failed && n && fwrite(p, 1, n, w->f) != n)
		w->failed = errno ? errno : EIO;
}

uint32_t fileio_crc(const void *p, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);
	const uint8_t *b = p;
	for (size_t done = 0; done < n;) {
		size_t k = n - done > (1u << 30) ? (1u << 30) : n - done;
		c = crc32(c, b + done, (uInt)k);
		done += k;
	}
	return (uint32_t)c;
}

/* fsyncs the folder holding path, so that the rename itself is durable. */
static void sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if ((size_t)(slash - path) < sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		return;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Appends the CRC when asked, makes the file durable and renames it. */
static int finish(fileio_writer *w, bool crc, char *err, size_t errlen)
{
	uint32_t c32 = (uint32_t)w->crc;
	if (!w->failed && crc && fwrite(&c32, 4, 1, w->f) != 1)
		w->failed = errno ? errno : EIO;
	if (!w->failed && (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0))
		w->failed = errno ? errno : EIO;
	if (fclose(w->f) != 0 && !w->failed)
		w->failed = errno ? errno : EIO;
	w->f = NULL;
	if (w->failed) {
		snprintf(err, errlen, "cannot write %s: %s", w->tmp, strerror(w->failed));
		goto fail;
	}
	if (rename(w->tmp, w->path) != 0) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", w->tmp, w->path, strerror(errno));
		goto fail;
	}
	sync_dir(w->path);
	free(w->tmp);
	w->tmp = NULL;
	return 0;
fail:
	unlink(w->tmp);
	free(w->tmp);
	w->tmp = NULL;
	return -1;
}

int fileio_commit(fileio_writer *w, char *err, size_t errlen)
{
	return finish(w, true, err, errlen);
}

int fileio_write_text(const char *path, const char *text, char *err, size_t errlen)
{
	fileio_writer w;
	if (fileio_begin(&w, path, err, errlen) < 0)
		return -1;
	fileio_put(&w, text, strlen(text));
	return finish(&w, false, err, errlen);
}

void fileio_abort(fileio_writer *w)
{
	if (w->f)
		fclose(w->f);
	w->f = NULL;
	if (w->tmp)
		unlink(w->tmp);
	free(w->tmp);
	w->tmp = NULL;
}

/* The PID of a temporary name NAME.tmp.PID.N, or -1 when `name` is not
 * one. */
static long temporary_pid(const char *name)
{
	const char *end = name + strlen(name), *p = end;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == end || p == name || p[-1] != '.')
		return -1; /* N */
	const char *n_dot = --p;
	while (p > name && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p == n_dot || n_dot - p > 10 || p - name < 5 || strncmp(p - 5, ".tmp.", 5) != 0 ||
	    p - 5 == name)
		return -1; /* PID, and a NAME before .tmp */
	long pid = strtol(p, NULL, 10);
	return pid > INT_MAX ? -1 : pid; /* no pid_t */
}

int fileio_sweep(const char *dir, bool owned)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		long pid = temporary_pid(e->d_name);
		if (pid < 0)
			continue;
		/* kill(pid, 0) fails with ESRCH for no such process; EPERM is one
		 * of another user's, alive. */
		if (!owned && (pid == 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int fileio_open_regular(const char *path, const char *what, char *err, size_t errlen)
{
	/* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s %s: %s", what, path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "cannot open %s %s: %s", what, path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s %s is not a regular file (%s)", what, path,
			 S_ISDIR(st.st_mode) ? "a folder" : S_ISFIFO(st.st_mode) ? "a FIFO"
			 : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a socket or other");
		close(fd);
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

uint8_t *fileio_slurp(const char *path, const char *what, size_t *len, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	long n;
	int fd = fileio_open_regular(path, what, err, errlen);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot open %s %s: %s", what, path, strerror(errno));
		close(fd);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
		goto fail;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (!buf) {
		snprintf(err, errlen, "out of memory reading %s (%ld bytes)", path, n);
		goto fail;
	}
	if (n && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
			 ferror(f) ? strerror(errno) : "short read");
		goto fail;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
fail:
	free(buf);
	fclose(f);
	return NULL;
}
