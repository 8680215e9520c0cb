/* `sente db` reads without writing: read-only subcommands open the file
 * read-only (an empty file stays empty, a read-only database is read, a
 * link to /dev/null is refused), and `check` runs the integrity check. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/store.h"
#include "tests/cli/cli_util.h"

static char db_dir[] = "/tmp/sente-clidb-XXXXXX";
static char out[1 << 16];

static void db_setup(void)
{
	cr_assert(mkdtemp(db_dir));
}

static void db_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "chattr -R -i %s 2>/dev/null; rm -rf %s", db_dir, db_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", db_dir);
}

TestSuite(cli_db, .init = db_setup, .fini = db_teardown);

/* A store at path with a model and a few metrics, closed (its WAL folded
 * into the file). */
static void make_db(const char *path)
{
	char err[512];
	store *s = store_open(path, err, sizeof(err));
	cr_assert(s, "%s", err);
	cr_assert_eq(store_add_model(s, "models/m.sente", 0, 7, "n", NULL), 0, "%s", store_errmsg(s));
	for (int i = 0; i < 4; i++)
		cr_assert_eq(store_add_metric(s, i, "loss", 1.0 / (i + 1)), 0, "%s", store_errmsg(s));
	store_close(s);
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void args_of(char *args, size_t len, const char *path, const char *cmd)
{
	snprintf(args, len, "db %s %s", path, cmd);
}

Test(cli_db, an_empty_file_stays_empty)
{
	char path[128], side[160], args[300];
	snprintf(path, sizeof(path), "%s/empty.db", db_dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fclose(f);
	const char *cmds[] = { "stats", "games", "models", "check" };
	for (int i = 0; i < 4; i++) {
		args_of(args, sizeof(args), path, cmds[i]);
		cr_assert_eq(cli_test_run(args, out, sizeof(out)), 1, "%s: %s", cmds[i], out);
		cr_assert(strstr(out, "not a sente database"), "%s: %s", cmds[i], out);
		struct stat st;
		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq(st.st_size, 0, "%s wrote %lld bytes into an empty file", cmds[i],
			     (long long)st.st_size);
		const char *ext[] = { "-journal", "-wal", "-shm" };
		for (int k = 0; k < 3; k++) {
			snprintf(side, sizeof(side), "%s%s", path, ext[k]);
			cr_assert(!exists(side), "%s made %s", cmds[i], side);
		}
	}
}

Test(cli_db, a_path_that_is_not_a_regular_file_is_refused)
{
	char link[128], args[300];
	snprintf(link, sizeof(link), "%s/null.db", db_dir);
	cr_assert_eq(symlink("/dev/null", link), 0);
	bool had_journal = exists("/dev/null-journal"), had_wal = exists("/dev/null-wal");
	const char *cmds[] = { "stats", "vacuum", "check" };
	for (int i = 0; i < 3; i++) {
		args_of(args, sizeof(args), link, cmds[i]);
		cr_assert_eq(cli_test_run(args, out, sizeof(out)), 1, "%s: %s", cmds[i], out);
		cr_assert(strstr(out, "not a regular file"), "%s: %s", cmds[i], out);
	}
	cr_assert(had_journal || !exists("/dev/null-journal"), "/dev/null-journal was created");
	cr_assert(had_wal || !exists("/dev/null-wal"), "/dev/null-wal was created");
}

/* Gives path `mode` and makes it unwritable for root too (the immutable
 * flag) where the file system allows it; false when it could not. */
static bool make_read_only(const char *path, mode_t mode)
{
	cr_assert_eq(chmod(path, mode), 0);
	if (geteuid() != 0)
		return true;
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	int flags = 0;
	bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
	flags |= FS_IMMUTABLE_FL;
	ok = ok && ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
	close(fd);
	return ok;
}

Test(cli_db, a_read_only_database_is_read)
{
	char path[200], args[300], err[512];
	snprintf(path, sizeof(path), "%s/ro.db", db_dir);
	make_db(path);
	/* As a copy handed around would be: a rollback journal, not WAL. */
	sqlite3 *db;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	if (!make_read_only(path, 0444))
		cr_skip_test("cannot make a file read-only for root on this file system");
	const char *cmds[] = { "stats", "games", "models", "check" };
	for (int i = 0; i < 4; i++) {
		args_of(args, sizeof(args), path, cmds[i]);
		cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s: %s", cmds[i], out);
	}
	cr_assert(strstr(out, "ok"), "%s", out);
	snprintf(args, sizeof(args), "db %s export-sgf %s/sgf", path, db_dir);
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s", out);
	/* What writes says why it cannot. */
	args_of(args, sizeof(args), path, "vacuum");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 1, "%s", out);
	/* The store read-only, directly. */
	store *s = store_open_ex(path, STORE_OPEN_READONLY, err, sizeof(err));
	cr_assert(s, "%s", err);
	int64_t id;
	cr_assert_eq(store_latest_model(s, &id, NULL, 0, NULL), 1, "%s", store_errmsg(s));
	cr_assert_eq(store_add_model(s, "x.sente", 0, 0, NULL, NULL), -1);
	store_close(s);

	/* A database in WAL mode (as runs leave them) in a read-only folder,
	 * where SQLite cannot make its -shm file. */
	char sub[160];
	snprintf(sub, sizeof(sub), "%s/ro", db_dir);
	cr_assert_eq(mkdir(sub, 0777), 0);
	snprintf(path, sizeof(path), "%s/wal.db", sub);
	make_db(path);
	cr_assert(make_read_only(path, 0444));
	cr_assert(make_read_only(sub, 0555));
	const char *more[] = { "stats", "models", "check" };
	for (int i = 0; i < 3; i++) {
		args_of(args, sizeof(args), path, more[i]);
		cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s: %s", more[i], out);
	}
	cr_assert(strstr(out, "ok"), "%s", out);
}

Test(cli_db, check_finds_a_flipped_bit)
{
	char path[128], args[300];
	snprintf(path, sizeof(path), "%s/flip.db", db_dir);
	make_db(path);
	args_of(args, sizeof(args), path, "check");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "ok"), "%s", out);
	/* The last byte of the metrics index's page: a key of its first entry. */
	sqlite3 *db;
	sqlite3_stmt *st;
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM pragma_page_size) "
					"FROM sqlite_master WHERE name = 'metrics_name_step'",
					-1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	long page = sqlite3_column_int(st, 0), size = sqlite3_column_int(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	int fd = open(path, O_RDWR);
	cr_assert_geq(fd, 0);
	unsigned char b;
	off_t at = (off_t)(page * size - 1);
	cr_assert_eq(pread(fd, &b, 1, at), 1);
	b ^= 0x04;
	cr_assert_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 1, "%s", out);
	cr_assert(strstr(out, "integrity check failed") && strstr(out, "metrics_name_step"), "%s",
		  out);
	/* stats does not look that deep: only check says so. */
	args_of(args, sizeof(args), path, "stats");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s", out);
}

Test(cli_db, export_metrics_as_csv_and_json_lines)
{
	char path[200], args[300];
	snprintf(path, sizeof(path), "%s/m.db", db_dir);
	make_db(path);
	args_of(args, sizeof(args), path, "export-metrics");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "step,time,name,value\n0,"), "%s", out);
	cr_assert(strstr(out, ",\"loss\",0.25\n"), "%s", out);
	args_of(args, sizeof(args), path, "export-metrics --json");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "{\"step\":3,\"time\":"), "%s", out);
	cr_assert(strstr(out, "\"name\":\"loss\",\"value\":0.25}\n"), "%s", out);
	args_of(args, sizeof(args), path, "export-metrics --bad");
	cr_assert_eq(cli_test_run(args, out, sizeof(out)), 2, "%s", out);
}
