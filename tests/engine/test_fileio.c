/* Whole-file text writes (engine/fileio.h): PATH is the old text or the
 * new one, never a mix, and no PATH.tmp is left behind. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/fileio.h"

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
	char path[128], tmp[140], err[512], got[256];
	snprintf(path, sizeof(path), "%s/a.sgf", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(fileio_write_text(path, "(;GM[1]SZ[9])\n", err, sizeof(err)), 0, "%s", err);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "(;GM[1]SZ[9])\n");
	/* Shorter text over longer: nothing of the old is left, no CRC added. */
	cr_assert_eq(fileio_write_text(path, "x", err, sizeof(err)), 0, "%s", err);
	read_all(path, got, sizeof(got));
	cr_assert_str_eq(got, "x");
	cr_assert_eq(access(tmp, F_OK), -1, "no temporary file is left");
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
	char tmp[200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(access(tmp, F_OK), -1, "%s was removed", tmp);
	/* A full disk: /dev/full takes the open and fails the flush. */
	if (access("/dev/full", W_OK) == 0) {
		snprintf(path, sizeof(path), "%s/full.txt", dir);
		cr_assert_eq(fileio_write_text(path, "old", err, sizeof(err)), 0, "%s", err);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		cr_assert_eq(symlink("/dev/full", tmp), 0);
		cr_assert_eq(fileio_write_text(path, "new text", err, sizeof(err)), -1);
		cr_assert(strstr(err, "cannot write"), "%s", err);
		read_all(path, got, sizeof(got));
		cr_assert_str_eq(got, "old", "the old text stays");
	}
}
