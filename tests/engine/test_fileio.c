/* Whole-file text writes (engine/fileio.h): PATH is the old text or the
 * new one, never a mix, and no temporary file is left behind. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/fileio.h"
#include "tests/no_temporary.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sente-fileio-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(fileio, .init = make_dir, .fini = remove_dir);

static void read_all(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

Test(fileio, text_replaces_the_file_whole)
{
	char path[128], err[512], got[256];
	snprintf(path, sizeof(path), "%s/a.sgf", dir);
	cr_assert_eq(fileio_write_text(path, "(;GM[1]SZ[9])\n", err, sizeof(err)), 0, "%s", err);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "(;GM[1]SZ[9])\n");
	/* Shorter text over longer: nothing of the old is left, no CRC added. */
	cr_assert_eq(fileio_write_text(path, "x", err, sizeof(err)), 0, "%s", err);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "x");
	cr_assert(no_temporary(path), "no temporary file is left");
	cr_assert_eq(fileio_write_text(path, "", err, sizeof(err)), 0, "%s", err);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "");
}

Test(fileio, text_that_cannot_be_written_leaves_the_old)
{
	char path[160], err[512] = "", got[64];
	/* A folder that does not exist: refused with the path named. */
	snprintf(path, sizeof(path), "%s/no/such/folder/a.txt", dir);
	cr_assert_eq(fileio_write_text(path, "x", err, sizeof(err)), -1);
	cr_assert(strstr(err, "no/such/folder/a.txt.tmp"), "%s", err);
	/* A folder where the file should be: the old folder stays, and the
	 * temporary file is gone. */
	snprintf(path, sizeof(path), "%s/dir", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(fileio_write_text(path, "x", err, sizeof(err)), -1);
	cr_assert(strstr(err, "cannot rename"), "%s", err);
	cr_assert(no_temporary(path), "the temporary file was removed");
	/* A full disk, as a file-size limit makes it (EFBIG): in a child, so
	 * that the limit stays there. */
	snprintf(path, sizeof(path), "%s/full.txt", dir);
	cr_assert_eq(fileio_write_text(path, "old", err, sizeof(err)), 0, "%s", err);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rlimit lim = {4, 4};
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
			_exit(3);
		if (fileio_write_text(path, "new text", err, sizeof(err)) != -1)
			_exit(1);
		_exit(strstr(err, "cannot write") ? 0 : 2);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the write past the limit fails with \"cannot write\" (status %d)", status);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "old", "the old text stays");
	cr_assert(no_temporary(path), "the temporary file was removed");
}

/* Two writers of one path at once (`sente eval` and `sente run` both
 * write a run's report.html): each call succeeds, and the file is one
 * writer's text whole, never a mix of the two. */
enum { RACE_ROUNDS = 200, RACE_LEN = 1 << 16 };
static char race_path[128];

static void *race_writer(void *arg)
{
	char *text = malloc(RACE_LEN + 1), err[512];
	if (!text)
		return (void *)1;
	memset(text, *(const char *)arg, RACE_LEN);
	text[RACE_LEN] = 0;
	intptr_t failed = 0;
	for (int i = 0; i < RACE_ROUNDS && !failed; i++)
		if (fileio_write_text(race_path, text, err, sizeof(err)) != 0) {
			fprintf(stderr, "fileio race: %s\n", err);
			failed = 1;
		}
	free(text);
	return (void *)failed;
}

Test(fileio, two_writers_of_one_path_never_mix)
{
	snprintf(race_path, sizeof(race_path), "%s/report.html", dir);
	pthread_t t[2];
	static const char fill[2] = {'a', 'b'};
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, race_writer, (void *)&fill[i]), 0);
	for (int i = 0; i < 2; i++) {
		void *failed;
		pthread_join(t[i], &failed);
		cr_assert_null(failed, "writer %d failed", i);
	}
	FILE *f = fopen(race_path, "r");
	cr_assert(f);
	char *got = malloc(RACE_LEN + 2);
	size_t n = fread(got, 1, RACE_LEN + 1, f);
	fclose(f);
	cr_assert_eq(n, (size_t)RACE_LEN, "the file is one text's length: %zu", n);
	size_t same = 0;
	while (same < n && got[same] == got[0])
		same++;
	cr_assert_eq(same, n, "one writer's text whole (%c to byte %zu)", got[0], same);
	free(got);
	cr_assert(no_temporary(race_path), "no temporary file is left");
}

/* The temporary files of writers that died mid-write go; a live writer's
 * stays unless the caller owns the folder, and no other file is touched. */
Test(fileio, sweep_removes_what_dead_writers_left)
{
	char dead[96], live[96];
	static const char *const keep[] = { "model-10.sente", "notes.tmp", "a.tmp.12", "a.tmp.x.1",
					    "a.tmp.99999999999.1" /* no pid */ };
	snprintf(dead, sizeof(dead), "model-10.sente.tmp.%ld.0", dead_pid());
	snprintf(live, sizeof(live), "report.html.tmp.%ld.3", (long)getpid());
	plant_file(dir, dead);
	plant_file(dir, live);
	for (int i = 0; i < 5; i++)
		plant_file(dir, keep[i]);
	cr_assert_eq(fileio_sweep(dir, false), 1);
	cr_assert_not(file_present(dir, dead), "a dead writer's temporary file is removed");
	cr_assert(file_present(dir, live), "a live writer's temporary file stays");
	cr_assert_eq(fileio_sweep(dir, true), 1);
	cr_assert_not(file_present(dir, live), "in an owned folder every temporary file is removed");
	for (int i = 0; i < 5; i++)
		cr_assert(file_present(dir, keep[i]), "%s stays", keep[i]);
	char missing[160];
	snprintf(missing, sizeof(missing), "%s/no-such-folder", dir);
	cr_assert_eq(fileio_sweep(missing, true), -1);
}
