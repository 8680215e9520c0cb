/* store.c: the SQLite store (see store.h for what it promises). */
#include "data/store.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/game_desc.h"

/* ---- schema ---------------------------------------------------------------- */

/* Step i takes the schema from version i to i + 1. Never edit a step that
 * has shipped: append a new one and raise STORE_SCHEMA_VERSION. */
const char *const store_migrations[STORE_SCHEMA_VERSION] = {
	/* 0 -> 1: what the training loop needs. */
	"CREATE TABLE meta (\n"
	"	key TEXT PRIMARY KEY,\n"
	"	value NOT NULL\n"
	");\n"
	"CREATE TABLE models (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	file TEXT NOT NULL,\n"
	"	parent_id INTEGER REFERENCES models(id),\n"
	"	train_step INTEGER NOT NULL DEFAULT 0,\n"
	"	created REAL NOT NULL,\n"
	"	notes TEXT NOT NULL DEFAULT ''\n"
	");\n"
	/* id is the rowid, so 'ORDER BY id DESC' (the replay window) walks
	 * the table's own b-tree backwards: no index needed for it. */
	"CREATE TABLE games (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	model_id INTEGER REFERENCES models(id),\n"
	"	worker TEXT NOT NULL DEFAULT '',\n"
	"	game TEXT NOT NULL CHECK (game IN ('go', 'connect4')),\n"
	"	size INTEGER NOT NULL,\n"
	"	komi REAL NOT NULL,\n"
	"	result INTEGER NOT NULL CHECK (result BETWEEN -1 AND 1),\n"
	"	score REAL NOT NULL,\n"
	"	resigned INTEGER NOT NULL DEFAULT -1,\n"
	"	length INTEGER NOT NULL,\n"
	"	n_positions INTEGER NOT NULL,\n"
	"	created REAL NOT NULL,\n"
	"	record BLOB NOT NULL\n"
	");\n"
	/* Games of one model (strength over time), and the foreign-key check
	 * when a model row is deleted. */
	"CREATE INDEX games_model ON games(model_id);\n"
	"CREATE TABLE metrics (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	step INTEGER NOT NULL,\n"
	"	time REAL NOT NULL,\n"
	"	name TEXT NOT NULL,\n"
	"	value REAL\n"
	");\n"
	/* store_metrics: one name, ordered by step. */
	"CREATE INDEX metrics_name_step ON metrics(name, step);\n",

	/* 1 -> 2: the arena. A player is a text spec (a model id or an
	 * external GTP engine's command line), as the match code names it. */
	"CREATE TABLE matches (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	player_a TEXT NOT NULL,\n"
	"	player_b TEXT NOT NULL,\n"
	"	created REAL NOT NULL,\n"
	"	settings TEXT NOT NULL DEFAULT '',\n"
	"	status TEXT NOT NULL DEFAULT 'running'\n"
	");\n"
	"CREATE TABLE match_games (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	match_id INTEGER NOT NULL REFERENCES matches(id),\n"
	"	game_no INTEGER NOT NULL,\n"
	"	black TEXT NOT NULL,\n"
	"	white TEXT NOT NULL,\n"
	"	result INTEGER,\n"
	"	reason TEXT NOT NULL DEFAULT '',\n"
	"	sgf TEXT,\n"
	"	created REAL NOT NULL,\n"
	"	UNIQUE (match_id, game_no)\n"
	");\n",

	/* 2 -> 3: what `sente match` needs to score and resume a match: A's
	 * colour (the specs of A and B may be equal), the final score and the
	 * length of each game; matches are looked up by their players. */
	"ALTER TABLE match_games ADD COLUMN a_black INTEGER NOT NULL DEFAULT 1;\n"
	"ALTER TABLE match_games ADD COLUMN score REAL NOT NULL DEFAULT 0;\n"
	"ALTER TABLE match_games ADD COLUMN moves INTEGER NOT NULL DEFAULT 0;\n"
	"CREATE INDEX matches_players ON matches(player_a, player_b);\n",

	/* 3 -> 4: the schema stops naming games (a game is whatever
	 * engine/game_desc.h lists), so the games table is rebuilt without
	 * its CHECK on the game column, as SQLite's ALTER TABLE cannot drop
	 * a constraint: same columns, same rows and ids, same index. Nothing
	 * references games, so dropping it under foreign_keys is safe. */
	"CREATE TABLE games_v4 (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	model_id INTEGER REFERENCES models(id),\n"
	"	worker TEXT NOT NULL DEFAULT '',\n"
	"	game TEXT NOT NULL,\n"
	"	size INTEGER NOT NULL,\n"
	"	komi REAL NOT NULL,\n"
	"	result INTEGER NOT NULL CHECK (result BETWEEN -1 AND 1),\n"
	"	score REAL NOT NULL,\n"
	"	resigned INTEGER NOT NULL DEFAULT -1,\n"
	"	length INTEGER NOT NULL,\n"
	"	n_positions INTEGER NOT NULL,\n"
	"	created REAL NOT NULL,\n"
	"	record BLOB NOT NULL\n"
	");\n"
	"INSERT INTO games_v4 (id, model_id, worker, game, size, komi, result, score, resigned, "
	"length, n_positions, created, record) SELECT id, model_id, worker, game, size, komi, "
	"result, score, resigned, length, n_positions, created, record FROM games;\n"
	"DROP TABLE games;\n"
	"ALTER TABLE games_v4 RENAME TO games;\n"
	"CREATE INDEX games_model ON games(model_id);\n",

	/* 4 -> 5: what a run spent to reach each model, and the evaluations
	 * `sente eval` makes of models afterwards. model_compute holds the
	 * run's cumulative self-play and training seconds (wall, and the
	 * process's CPU) and network evaluations up to a model; a model
	 * registered before this schema, or by `sente train`, has no row.
	 * evaluations holds one row per model, method and part (a position
	 * set, or "all"), so a finished measurement is found again. */
	"CREATE TABLE model_compute (\n"
	"	model_id INTEGER PRIMARY KEY REFERENCES models(id),\n"
	"	seconds REAL NOT NULL,\n"
	"	cpu_seconds REAL NOT NULL,\n"
	"	evals INTEGER NOT NULL,\n"
	"	games INTEGER NOT NULL,\n"
	"	positions INTEGER NOT NULL\n"
	");\n"
	"CREATE TABLE evaluations (\n"
	"	id INTEGER PRIMARY KEY,\n"
	"	model_id INTEGER NOT NULL REFERENCES models(id),\n"
	"	method TEXT NOT NULL,\n"
	"	part TEXT NOT NULL,\n"
	"	n INTEGER NOT NULL,\n"
	"	score REAL NOT NULL,\n"
	"	value REAL NOT NULL,\n"
	"	seconds REAL NOT NULL,\n"
	"	created REAL NOT NULL,\n"
	"	UNIQUE (model_id, method, part)\n"
	");\n",
};

/* ---- statements ------------------------------------------------------------ */

/* The statements used more than once, prepared on first use and kept. */
typedef enum store_sql {
	STORE_SQL_BEGIN,
	STORE_SQL_COMMIT,
	STORE_SQL_ROLLBACK,
	STORE_SQL_ADD_MODEL,
	STORE_SQL_LATEST_MODEL,
	STORE_SQL_MODEL_FILE,
	STORE_SQL_LIST_MODELS,
	STORE_SQL_ADD_GAME,
	STORE_SQL_COUNT,
	STORE_SQL_RECENT,
	STORE_SQL_LIST_GAMES,
	STORE_SQL_GAME_BY_ID,
	STORE_SQL_ADD_METRIC,
	STORE_SQL_METRICS,
	STORE_SQL_METRIC_NAMES,
	STORE_SQL_METRIC_ROWS,
	STORE_SQL_FIND_MATCH,
	STORE_SQL_ADD_MATCH,
	STORE_SQL_MATCH_STATUS,
	STORE_SQL_ADD_MATCH_GAME,
	STORE_SQL_MATCH_GAMES,
	STORE_SQL_LIST_MATCHES,
	STORE_SQL_ADD_COMPUTE,
	STORE_SQL_COMPUTE,
	STORE_SQL_ADD_EVALUATION,
	STORE_SQL_EVALUATIONS,
	STORE_SQL_SET_META,
	STORE_SQL_GET_META,
	STORE_SQL_N,
} store_sql;

#define STORE_GAME_COLUMNS                                                                 \
	"id, coalesce(model_id, 0), worker, game, size, komi, result, score, resigned, " \
	"length, n_positions, created, record"

static const char *const store_sql_text[STORE_SQL_N] = {
	/* IMMEDIATE takes the write lock at BEGIN, where the busy timeout
	 * applies; a deferred transaction that reads first can fail its
	 * upgrade with SQLITE_BUSY at once, without waiting. */
	[STORE_SQL_BEGIN] = "BEGIN IMMEDIATE",
	[STORE_SQL_COMMIT] = "COMMIT",
	[STORE_SQL_ROLLBACK] = "ROLLBACK",
	[STORE_SQL_ADD_MODEL] = "INSERT INTO models (file, parent_id, train_step, created, notes) "
				"VALUES (?1, ?2, ?3, ?4, ?5)",
	[STORE_SQL_LATEST_MODEL] = "SELECT id, file, train_step FROM models ORDER BY id DESC LIMIT 1",
	[STORE_SQL_MODEL_FILE] = "SELECT file FROM models WHERE id = ?1",
	[STORE_SQL_LIST_MODELS] = "SELECT id, file, coalesce(parent_id, 0), train_step, created, notes "
				  "FROM models ORDER BY id",
	[STORE_SQL_ADD_GAME] = "INSERT INTO games (model_id, worker, game, size, komi, result, score, "
			       "resigned, length, n_positions, created, record) "
			       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
	[STORE_SQL_COUNT] = "SELECT count(*), coalesce(sum(n_positions), 0) FROM games",
	[STORE_SQL_RECENT] = "SELECT id, record FROM games WHERE id > ?1 ORDER BY id DESC",
	[STORE_SQL_LIST_GAMES] = "SELECT " STORE_GAME_COLUMNS " FROM games ORDER BY id DESC LIMIT ?1",
	[STORE_SQL_GAME_BY_ID] = "SELECT " STORE_GAME_COLUMNS " FROM games WHERE id = ?1",
	[STORE_SQL_ADD_METRIC] = "INSERT INTO metrics (step, time, name, value) VALUES (?1, ?2, ?3, ?4)",
	[STORE_SQL_METRICS] = "SELECT step, time, value FROM metrics WHERE name = ?1 ORDER BY step, id",
	[STORE_SQL_METRIC_NAMES] = "SELECT DISTINCT name FROM metrics ORDER BY name",
	[STORE_SQL_METRIC_ROWS] = "SELECT step, time, name, value FROM metrics ORDER BY id",
	[STORE_SQL_FIND_MATCH] = "SELECT id FROM matches WHERE player_a = ?1 AND player_b = ?2 "
				 "AND settings = ?3 ORDER BY id DESC LIMIT 1",
	[STORE_SQL_ADD_MATCH] = "INSERT INTO matches (player_a, player_b, created, settings) "
				"VALUES (?1, ?2, ?3, ?4)",
	[STORE_SQL_MATCH_STATUS] = "UPDATE matches SET status = ?2 WHERE id = ?1",
	[STORE_SQL_SET_META] = "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
	[STORE_SQL_GET_META] = "SELECT value FROM meta WHERE key = ?1",
	[STORE_SQL_ADD_MATCH_GAME] = "INSERT INTO match_games (match_id, game_no, black, white, result, "
				     "reason, sgf, created, a_black, score, moves) "
				     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	[STORE_SQL_MATCH_GAMES] = "SELECT match_id, game_no, black, white, coalesce(result, 0), reason, "
				  "coalesce(sgf, ''), a_black, score, moves, created FROM match_games "
				  "WHERE match_id = ?1 ORDER BY game_no",
	[STORE_SQL_LIST_MATCHES] = "SELECT m.id, m.player_a, m.player_b, m.settings, m.status, m.created, "
				   "(SELECT count(*) FROM match_games g WHERE g.match_id = m.id) "
				   "FROM matches m ORDER BY m.id",
	[STORE_SQL_ADD_COMPUTE] = "INSERT OR REPLACE INTO model_compute (model_id, seconds, cpu_seconds, "
				  "evals, games, positions) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[STORE_SQL_COMPUTE] = "SELECT seconds, cpu_seconds, evals, games, positions FROM model_compute "
			      "WHERE model_id = ?1",
	[STORE_SQL_ADD_EVALUATION] = "INSERT OR REPLACE INTO evaluations (model_id, method, part, n, "
				     "score, value, seconds, created) "
				     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[STORE_SQL_EVALUATIONS] = "SELECT model_id, method, part, n, score, value, seconds, created "
				  "FROM evaluations WHERE (?1 = 0 OR model_id = ?1) "
				  "AND (?2 IS NULL OR method = ?2) ORDER BY model_id, method, id",
};

struct store {
	sqlite3 *db;                      /* the connection */
	sqlite3_stmt *stmt[STORE_SQL_N];  /* store_sql_text, prepared on first use */
	int schema_version;               /* of the open database */
	int last_rc;                      /* SQLite code of the last failure: BUSY is retried */
	int busy_retries;                 /* store_write's retries (store_set_patience) */
	int64_t last_skipped;             /* corrupt rows store_recent_games skipped last */
	char path[256];                   /* for messages (truncated) */
	char dir[4096];                   /* the database's folder as given ("" for :memory:) */
	char errmsg[512];                 /* the last failure */
};

/* Records a failure of an SQLite call with where it happened (the call's
 * text, `what`, is left out of the message: it can be a whole statement). */
static void store_fail(store *s, const char *file, int line, int rc, const char *what)
{
	(void)what;
	s->last_rc = rc;
	const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	snprintf(s->errmsg, sizeof(s->errmsg), "%.200s: %.200s (%.60s:%d)", s->path, msg, file, line);
}

static void store_failf(store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records a failure that is not an SQLite error (a missing row, bad data). */
static void store_failf(store *s, const char *fmt, ...)
{
	s->last_rc = SQLITE_ERROR;
	int n = snprintf(s->errmsg, sizeof(s->errmsg), "%s: ", s->path);
	if (n < 0 || (size_t)n >= sizeof(s->errmsg))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->errmsg + n, sizeof(s->errmsg) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Every SQLite call whose failure a user can cause goes through this: it
 * keeps the message with file and line and leaves through `out`. */
#define SQLITE_CHECK(s, call)                                                      \
	do {                                                                       \
		int rc_ = (call);                                                  \
		if (rc_ != SQLITE_OK) {                                            \
			store_fail((s), __FILE__, __LINE__, rc_, #call);           \
			goto out;                                                  \
		}                                                                  \
	} while (0)

/* sqlite3_step for a statement that returns no rows: SQLITE_OK when done. */
static int store_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static bool store_is_busy(int rc)
{
	return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

/* The cached statement `id`, reset with its bindings cleared; NULL with the
 * message set when it cannot be prepared. */
static sqlite3_stmt *store_stmt(store *s, store_sql id)
{
	sqlite3_stmt *st = s->stmt[id];
	if (!st) {
		int rc = sqlite3_prepare_v2(s->db, store_sql_text[id], -1, &s->stmt[id], NULL);
		if (rc != SQLITE_OK) {
			store_fail(s, __FILE__, __LINE__, rc, store_sql_text[id]);
			return NULL;
		}
		return s->stmt[id];
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return st;
}

/* Ends a statement's use: a reset statement holds no read lock. */
static void store_release(sqlite3_stmt *st)
{
	if (st)
		sqlite3_reset(st);
}

static double store_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs a cached statement that returns no rows. */
static int store_exec_stmt(store *s, store_sql id)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, id);
	if (!st)
		return -1;
	SQLITE_CHECK(s, store_step_done(st));
	rc = 0;
out:
	store_release(st);
	return rc;
}

/* A transaction body: 0, or -1 with the failure recorded. */
typedef int (*store_txn_fn)(store *s, void *ctx);

/* Runs `body` in one write transaction. When another process holds the
 * write lock past the busy timeout the whole transaction is rolled back
 * and tried again, up to STORE_BUSY_RETRIES times, with a growing pause. */
static int store_write(store *s, store_txn_fn body, void *ctx)
{
	for (int attempt = 0;; attempt++) {
		s->last_rc = SQLITE_OK;
		if (store_exec_stmt(s, STORE_SQL_BEGIN) == 0) {
			if (body(s, ctx) == 0 && store_exec_stmt(s, STORE_SQL_COMMIT) == 0)
				return 0;
			/* The message is the body's; the rollback's own outcome
			 * does not matter (an error may have rolled back already). */
			if (!sqlite3_get_autocommit(s->db)) {
				sqlite3_stmt *rb = store_stmt(s, STORE_SQL_ROLLBACK);
				if (rb) {
					sqlite3_step(rb);
					store_release(rb);
				}
			}
		}
		if (!store_is_busy(s->last_rc) || attempt >= s->busy_retries)
			return -1;
		usleep((useconds_t)(20000 * (attempt + 1) + rand() % 20000));
	}
}

/* ---- open, identify, migrate ----------------------------------------------- */

/* Outcome of looking at a file before touching it. */
enum { STORE_ID_OK = 0, STORE_ID_FAIL = -1, STORE_ID_FOREIGN = -2 };

/* Reads the schema version: 0 for an empty database. STORE_ID_FOREIGN when
 * the file is SQLite but not sente's (tables without meta, or a meta table
 * without a numeric schema_version). Prepared ad hoc: runs once. */
static int store_read_version(store *s, int *version)
{
	int rc = STORE_ID_FAIL, has_meta = 0, tables = 0;
	sqlite3_stmt *st = NULL;
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db,
					   "SELECT count(*), coalesce(sum(name = 'meta'), 0) FROM sqlite_master "
					   "WHERE type = 'table'", -1, &st, NULL));
	if (sqlite3_step(st) != SQLITE_ROW)
		SQLITE_CHECK(s, sqlite3_errcode(s->db));
	tables = sqlite3_column_int(st, 0);
	has_meta = sqlite3_column_int(st, 1);
	sqlite3_finalize(st);
	st = NULL;
	if (!has_meta) {
		*version = 0;
		rc = tables ? STORE_ID_FOREIGN : STORE_ID_OK;
		goto out;
	}
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db,
					   "SELECT value FROM meta WHERE key = 'schema_version' "
					   "AND typeof(value) = 'integer'", -1, &st, NULL));
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		int64_t v = sqlite3_column_int64(st, 0);
		if (v < 1 || v > 1000000) {
			rc = STORE_ID_FOREIGN;
			goto out;
		}
		*version = (int)v;
		rc = STORE_ID_OK;
	} else if (step == SQLITE_DONE) {
		rc = STORE_ID_FOREIGN;
	} else {
		SQLITE_CHECK(s, step);
	}
out:
	sqlite3_finalize(st);
	return rc;
}

/* Refuses what this sente cannot read; 0 when the version is fine. */
static int store_check_version(store *s, int id, int version)
{
	if (id == STORE_ID_FOREIGN) {
		store_failf(s, "not a sente database (an SQLite database without sente's meta table "
			       "and schema_version); refusing to touch it");
		return -1;
	}
	if (id != STORE_ID_OK) {
		if ((s->last_rc & 0xff) == SQLITE_NOTADB)
			store_failf(s, "not a sente database (not an SQLite file)");
		return -1;
	}
	if (version > STORE_SCHEMA_VERSION) {
		store_failf(s, "this database was written by a newer sente (schema %d); upgrade sente "
			       "(this one knows schema %d)", version, STORE_SCHEMA_VERSION);
		return -1;
	}
	return 0;
}

/* One migration step, inside store_write: the version is read again under
 * the write lock, since another process may have migrated meanwhile. */
static int store_migrate_step(store *s, void *ctx)
{
	int *version = ctx, rc = -1;
	sqlite3_stmt *st = NULL;
	int id = store_read_version(s, version);
	if (store_check_version(s, id, *version))
		return -1;
	if (*version >= STORE_SCHEMA_VERSION)
		return 0;
	/* The steps are constant DDL text: exec prepares each statement. */
	char *msg = NULL;
	int erc = sqlite3_exec(s->db, store_migrations[*version], NULL, NULL, &msg);
	if (erc != SQLITE_OK) {
		s->last_rc = erc;
		snprintf(s->errmsg, sizeof(s->errmsg), "%s: migration to schema %d failed: %s", s->path,
			 *version + 1, msg ? msg : sqlite3_errstr(erc));
		sqlite3_free(msg);
		return -1;
	}
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db,
					   "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)",
					   -1, &st, NULL));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 1, *version + 1));
	SQLITE_CHECK(s, store_step_done(st));
	(*version)++;
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* Runs a PRAGMA that answers one text row (journal_mode); copies it. */
static int store_pragma_text(store *s, const char *sql, char *val, size_t len)
{
	int rc = -1;
	sqlite3_stmt *st = NULL;
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db, sql, -1, &st, NULL));
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step == SQLITE_DONE ? SQLITE_ERROR : step);
	const unsigned char *t = sqlite3_column_text(st, 0);
	snprintf(val, len, "%s", t ? (const char *)t : "");
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* A WAL database opened read-only needs its -shm file, which a read-only
 * folder cannot hold. With no -wal file beside it, the database file holds
 * every commit and no writer can be at work (it would need the folder), so
 * it is read as an immutable file. 0, or -1 (the first failure stands). */
static int store_open_immutable(store *s, const char *path)
{
	char wal[4200], uri[3 * 4096 + 32];
	struct stat sb;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &sb) == 0 || strlen(path) >= 4096)
		return -1;
	/* A URI: %, ? and # are escaped. */
	size_t n = (size_t)snprintf(uri, sizeof(uri), "file:");
	for (const char *p = path; *p; p++)
		n += (size_t)(strchr("%?#", *p) ? snprintf(uri + n, sizeof(uri) - n, "%%%02X",
							    (unsigned char)*p) :
						  snprintf(uri + n, sizeof(uri) - n, "%c", *p));
	snprintf(uri + n, sizeof(uri) - n, "?immutable=1");
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -1;
	}
	sqlite3_close(s->db);
	s->db = db;
	return 0;
}

store *store_open(const char *path, char *err, size_t errlen)
{
	return store_open_ex(path, STORE_OPEN_CREATE, err, errlen);
}

store *store_open_ex(const char *path, int flags, char *err, size_t errlen)
{
	store *s = calloc(1, sizeof(*s));
	bool ok = false;
	if (err && errlen)
		err[0] = '\0';
	if (!s) {
		if (err && errlen)
			snprintf(err, errlen, "%s: out of memory", path);
		return NULL;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	bool memory = !strcmp(path, ":memory:");
	if (!memory && path[0]) {
		const char *slash = strrchr(path, '/');
		if (!slash)
			snprintf(s->dir, sizeof(s->dir), ".");
		else if (slash == path)
			snprintf(s->dir, sizeof(s->dir), "/");
		else
			snprintf(s->dir, sizeof(s->dir), "%.*s", (int)(slash - path), path);
	}
	struct stat sb;
	if (!memory && stat(path, &sb) != 0) {
		if (!(flags & STORE_OPEN_CREATE) || errno != ENOENT) {
			store_failf(s, "cannot open: %s", strerror(errno));
			goto out;
		}
	} else if (!memory && S_ISDIR(sb.st_mode)) {
		store_failf(s, "is a directory, not a database");
		goto out;
	} else if (!memory && !S_ISREG(sb.st_mode)) {
		/* SQLite would write beside it: /dev/null-journal. */
		store_failf(s, "not a regular file (a device, a pipe or a socket), not a database");
		goto out;
	}
	bool readonly = (flags & STORE_OPEN_READONLY) != 0;
	assert(!(readonly && (flags & STORE_OPEN_CREATE)));
	int oflags = readonly ? SQLITE_OPEN_READONLY :
				SQLITE_OPEN_READWRITE | ((flags & STORE_OPEN_CREATE) ? SQLITE_OPEN_CREATE : 0);
	SQLITE_CHECK(s, sqlite3_open_v2(path, &s->db, oflags, NULL));
	SQLITE_CHECK(s, sqlite3_busy_timeout(s->db, STORE_BUSY_TIMEOUT_MS));
	s->busy_retries = STORE_BUSY_RETRIES;

	/* Look before changing anything: a foreign file must stay as it was. */
	int version = 0;
	int id = store_read_version(s, &version);
	if (readonly && id == STORE_ID_FAIL && (s->last_rc & 0xff) == SQLITE_CANTOPEN &&
	    store_open_immutable(s, path) == 0)
		id = store_read_version(s, &version);
	if (store_check_version(s, id, version))
		goto out;
	if (readonly) {
		if (version == 0) {
			store_failf(s, "not a sente database (an empty database%s)",
				    memory ? "" : "; opened read-only, so it stays empty");
			goto out;
		}
		if (version < STORE_SCHEMA_VERSION) {
			store_failf(s, "schema %d, older than this sente's %d, and opened read-only: "
				       "a command that writes to it (sente db FILE vacuum, or a run) "
				       "migrates it", version, STORE_SCHEMA_VERSION);
			goto out;
		}
		SQLITE_CHECK(s, sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL));
		s->schema_version = version;
		ok = true;
		goto out;
	}

	SQLITE_CHECK(s, sqlite3_exec(s->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL));
	/* Switching to WAL takes an exclusive lock; processes opening a new
	 * database together may find it busy past the timeout: retry. */
	char mode[16] = "";
	for (int attempt = 0;; attempt++) {
		if (store_pragma_text(s, "PRAGMA journal_mode = WAL", mode, sizeof(mode)) == 0)
			break;
		if (!store_is_busy(s->last_rc) || attempt >= STORE_BUSY_RETRIES)
			goto out;
		usleep((useconds_t)(20000 * (attempt + 1)));
	}
	if (strcmp(mode, "wal") != 0 && !(memory && !strcmp(mode, "memory"))) {
		store_failf(s, "cannot switch to WAL mode (journal_mode is '%s')", mode);
		goto out;
	}
	/* Durable against a killed process in WAL mode (see store.h). */
	SQLITE_CHECK(s, sqlite3_exec(s->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL));

	while (version < STORE_SCHEMA_VERSION)
		if (store_write(s, store_migrate_step, &version))
			goto out;
	s->schema_version = version;
	ok = true;
out:
	if (!ok) {
		if (err && errlen)
			snprintf(err, errlen, "%s", s->errmsg);
		store_close(s);
		return NULL;
	}
	return s;
}

void store_close(store *s)
{
	if (!s)
		return;
	for (int i = 0; i < STORE_SQL_N; i++)
		sqlite3_finalize(s->stmt[i]);
	sqlite3_close(s->db); /* all statements are finalized: cannot be BUSY */
	free(s);
}

const char *store_errmsg(store *s)
{
	return s ? s->errmsg : "no store";
}

int store_schema_version(store *s)
{
	return s->schema_version;
}

static const char *store_col_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? (const char *)t : "";
}

/* ---- models ---------------------------------------------------------------- */

/* Model files are stored relative to the database's folder when they lie
 * in it, so a run's folder works from any working directory (and moved
 * whole); an existing file elsewhere is stored absolute; a name that
 * names no file is kept as given. */
static void store_model_path_in(store *s, const char *file, char *out, size_t len)
{
	char rf[PATH_MAX], rd[PATH_MAX];
	size_t n = strlen(s->dir);
	snprintf(out, len, "%s", file);
	if (!s->dir[0])
		return;
	/* DIR/x from a database DIR/sente.db: as the run's folder names it. */
	if (file[0] != '/' && strcmp(s->dir, ".") != 0 && !strncmp(file, s->dir, n) &&
	    file[n] == '/' && file[n + 1]) {
		snprintf(out, len, "%s", file + n + 1);
		return;
	}
	if (file[0] != '/' && !strcmp(s->dir, "."))
		return; /* relative to the working folder, which is the database's */
	if (!realpath(file, rf))
		return;
	if (realpath(s->dir, rd)) {
		n = strlen(rd);
		if (n == 1)
			n = 0; /* the database is in / */
		if (!strncmp(rf, rd, n) && rf[n] == '/') {
			snprintf(out, len, "%s", rf + n + 1);
			return;
		}
	}
	snprintf(out, len, "%s", rf);
}

/* A stored model file as a path from the working folder: resolved against
 * the database's folder. Rows written before paths were stored so (a path
 * relative to the working folder of the writer) keep working: when the
 * file is not in the database's folder but the stored path names one, that
 * is it. Returns stored or buf. */
static const char *store_model_path_out(store *s, const char *stored, char *buf, size_t len)
{
	if (stored[0] == '/' || !stored[0] || !s->dir[0] || !strcmp(s->dir, "."))
		return stored;
	int n = snprintf(buf, len, "%s%s%s", s->dir, strcmp(s->dir, "/") ? "/" : "", stored);
	if (n < 0 || (size_t)n >= len)
		return stored;
	/* Not in the folder: an old row's file, or none at all (then the name
	 * as registered). */
	return access(buf, F_OK) == 0 ? buf : stored;
}

/* Arguments of a single-statement insert run through store_write. */
typedef struct store_insert {
	sqlite3_stmt *st; /* bound, ready to step */
	int64_t id;       /* the new row's id */
} store_insert;

static int store_insert_body(store *s, void *ctx)
{
	store_insert *ins = ctx;
	int rc = -1;
	sqlite3_reset(ins->st); /* a retry steps it again */
	SQLITE_CHECK(s, store_step_done(ins->st));
	ins->id = sqlite3_last_insert_rowid(s->db);
	rc = 0;
out:
	return rc;
}

/* Binds and steps the model_compute row of `model_id`. */
static int store_put_compute(store *s, int64_t model_id, const store_compute *c)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_ADD_COMPUTE);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, model_id));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 2, c->seconds));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 3, c->cpu_seconds));
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 4, c->evals));
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 5, c->games));
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 6, c->positions));
	SQLITE_CHECK(s, store_step_done(st));
	rc = 0;
out:
	store_release(st);
	return rc;
}

/* A model row and, when given, its compute row: one transaction. */
typedef struct store_model_insert {
	store_insert ins;          /* the models row */
	const store_compute *c;    /* NULL: no compute row */
} store_model_insert;

static int store_model_body(store *s, void *ctx)
{
	store_model_insert *m = ctx;
	if (store_insert_body(s, &m->ins) != 0)
		return -1;
	return m->c ? store_put_compute(s, m->ins.id, m->c) : 0;
}

int store_add_model_compute(store *s, const char *file, int64_t parent_id, int64_t train_step,
			    const char *notes, const store_compute *c, int64_t *id_out)
{
	int rc = -1;
	char rel[PATH_MAX];
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_ADD_MODEL);
	if (!st)
		return -1;
	store_model_path_in(s, file, rel, sizeof(rel));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 1, rel, -1, SQLITE_TRANSIENT));
	if (parent_id > 0)
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 2, parent_id));
	else
		SQLITE_CHECK(s, sqlite3_bind_null(st, 2));
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 3, train_step));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 4, store_now()));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 5, notes ? notes : "", -1, SQLITE_TRANSIENT));
	store_model_insert m = { { st, 0 }, c };
	if (store_write(s, store_model_body, &m))
		goto out;
	if (id_out)
		*id_out = m.ins.id;
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_add_model(store *s, const char *file, int64_t parent_id, int64_t train_step,
		    const char *notes, int64_t *id_out)
{
	return store_add_model_compute(s, file, parent_id, train_step, notes, NULL, id_out);
}

int store_latest_model(store *s, int64_t *id, char *file, size_t file_len, int64_t *train_step)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_LATEST_MODEL);
	if (!st)
		return -1;
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step);
	if (id)
		*id = sqlite3_column_int64(st, 0);
	if (file && file_len) {
		char buf[PATH_MAX];
		snprintf(file, file_len, "%s",
			 store_model_path_out(s, store_col_text(st, 1), buf, sizeof(buf)));
	}
	if (train_step)
		*train_step = sqlite3_column_int64(st, 2);
	rc = 1;
out:
	store_release(st);
	return rc;
}

int store_model_file(store *s, int64_t id, char *file, size_t len)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_MODEL_FILE);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, id));
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		store_failf(s, "no model with id %lld", (long long)id);
		goto out;
	}
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step);
	char buf[PATH_MAX];
	snprintf(file, len, "%s", store_model_path_out(s, store_col_text(st, 0), buf, sizeof(buf)));
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_list_models(store *s, store_model_fn fn, void *ctx)
{
	int rc = -1, n = 0, step;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_LIST_MODELS);
	if (!st)
		return -1;
	char buf[PATH_MAX];
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_model m = {
			.id = sqlite3_column_int64(st, 0),
			.file = store_model_path_out(s, store_col_text(st, 1), buf, sizeof(buf)),
			.parent_id = sqlite3_column_int64(st, 2),
			.train_step = sqlite3_column_int64(st, 3),
			.created = sqlite3_column_double(st, 4),
			.notes = store_col_text(st, 5),
		};
		n++;
		if (fn(ctx, &m))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

/* ---- games ----------------------------------------------------------------- */

int store_add_game(store *s, int64_t model_id, const char *worker, const game_record *r,
		   int64_t *id_out)
{
	int rc = -1;
	uint8_t *blob = NULL;
	size_t len = 0;
	sqlite3_stmt *st = NULL;
	/* Encode before taking the write lock: the lock is held only to insert. */
	if (record_encode(r, &blob, &len)) {
		store_failf(s, "cannot encode the game record (out of memory, or invalid)");
		goto out;
	}
	st = store_stmt(s, STORE_SQL_ADD_GAME);
	if (!st)
		goto out;
	/* A game without a size or komi choice stores its own. */
	const game_desc *d = game_desc_from_params(&r->params);
	if (model_id > 0)
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, model_id));
	else
		SQLITE_CHECK(s, sqlite3_bind_null(st, 1));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 2, worker ? worker : "", -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 4, d->has_size ? r->params.size : d->defaults.size));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 5, d->has_komi ? r->params.komi : d->defaults.komi));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 6, r->result));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 7, r->score));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 8, r->resigned));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 9, r->n_moves));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 10, record_full_count(r)));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 11, store_now()));
	SQLITE_CHECK(s, sqlite3_bind_blob(st, 12, blob, (int)len, SQLITE_STATIC));
	store_insert ins = { st, 0 };
	if (store_write(s, store_insert_body, &ins)) {
		if ((s->last_rc & 0xff) == SQLITE_CONSTRAINT && model_id > 0)
			store_failf(s, "cannot add the game: no model with id %lld (register it first, "
				       "or give 0 for none)", (long long)model_id);
		goto out;
	}
	if (id_out)
		*id_out = ins.id;
	rc = 0;
out:
	store_release(st);
	free(blob);
	return rc;
}

int store_count(store *s, int64_t *games, int64_t *positions)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_COUNT);
	if (!st)
		return -1;
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step == SQLITE_DONE ? SQLITE_ERROR : step);
	if (games)
		*games = sqlite3_column_int64(st, 0);
	if (positions)
		*positions = sqlite3_column_int64(st, 1);
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_recent_games(store *s, int64_t max_positions, int64_t after_game_id, store_game_fn fn,
		       void *ctx, char *err, size_t errlen)
{
	int rc = -1, step = SQLITE_DONE;
	int64_t delivered = 0, positions = 0, skipped = 0, first_bad = 0;
	char why[256] = "";
	if (err && errlen)
		err[0] = '\0';
	s->last_skipped = 0;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_RECENT);
	if (!st)
		goto out;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, after_game_id));
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		const uint8_t *blob = sqlite3_column_blob(st, 1);
		size_t len = (size_t)sqlite3_column_bytes(st, 1);
		game_record r;
		char msg[200];
		if (record_decode(blob, len, &r, msg, sizeof(msg))) {
			if (!skipped++) {
				first_bad = id;
				snprintf(why, sizeof(why), "%s", msg);
			}
			continue;
		}
		delivered++;
		positions += record_full_count(&r);
		int stop = fn(ctx, id, &r);
		record_free(&r);
		if (stop || (max_positions > 0 && positions >= max_positions))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = delivered > INT32_MAX ? INT32_MAX : (int)delivered;
out:
	store_release(st);
	s->last_skipped = skipped;
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", s->errmsg);
	} else if (skipped && err && errlen) {
		snprintf(err, errlen, "skipped %lld corrupt game row%s (game %lld: %s)", (long long)skipped,
			 skipped == 1 ? "" : "s", (long long)first_bad, why);
	}
	return rc;
}

int64_t store_last_skipped(store *s)
{
	return s->last_skipped;
}

int store_list_games(store *s, int64_t game_id, int64_t limit, store_info_fn fn, void *ctx)
{
	int rc = -1, n = 0, step = SQLITE_DONE;
	sqlite3_stmt *st;
	if (game_id > 0) {
		st = store_stmt(s, STORE_SQL_GAME_BY_ID);
		if (!st)
			return -1;
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, game_id));
	} else {
		st = store_stmt(s, STORE_SQL_LIST_GAMES);
		if (!st)
			return -1;
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, limit > 0 ? limit : -1)); /* -1: no limit */
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_game_info g = {
			.id = sqlite3_column_int64(st, 0),
			.model_id = sqlite3_column_int64(st, 1),
			.worker = store_col_text(st, 2),
			.game = store_col_text(st, 3),
			.size = sqlite3_column_int(st, 4),
			.komi = sqlite3_column_double(st, 5),
			.result = sqlite3_column_int(st, 6),
			.score = sqlite3_column_double(st, 7),
			.resigned = sqlite3_column_int(st, 8),
			.length = sqlite3_column_int(st, 9),
			.n_positions = sqlite3_column_int(st, 10),
			.created = sqlite3_column_double(st, 11),
			.blob = sqlite3_column_blob(st, 12),
			.blob_len = (size_t)sqlite3_column_bytes(st, 12),
		};
		n++;
		if (fn(ctx, &g))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

/* ---- metrics --------------------------------------------------------------- */

/* Arguments of store_add_metrics' transaction. */
typedef struct store_metric_batch {
	int64_t step;        /* learner step */
	double time;         /* one timestamp for the whole batch */
	const char **names;  /* [n] */
	const double *values; /* [n] */
	int n;               /* entries */
} store_metric_batch;

static int store_metrics_body(store *s, void *ctx)
{
	store_metric_batch *b = ctx;
	int rc = -1;
	sqlite3_stmt *st = NULL;
	for (int i = 0; i < b->n; i++) {
		st = store_stmt(s, STORE_SQL_ADD_METRIC);
		if (!st)
			return -1;
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, b->step));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 2, b->time));
		SQLITE_CHECK(s, sqlite3_bind_text(st, 3, b->names[i], -1, SQLITE_STATIC));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 4, b->values[i]));
		SQLITE_CHECK(s, store_step_done(st));
	}
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_add_metrics(store *s, int64_t step, const char **names, const double *values, int n)
{
	store_metric_batch b = { step, store_now(), names, values, n };
	return store_write(s, store_metrics_body, &b);
}

int store_add_metric(store *s, int64_t step, const char *name, double value)
{
	return store_add_metrics(s, step, &name, &value, 1);
}

/* Steps statement `id` (its ?1 bound to text1 when not NULL), calling row
 * for each row until it returns nonzero. The rows seen, or -1. */
static int store_each_row(store *s, store_sql id, const char *text1,
			  int (*row)(sqlite3_stmt *st, void *ctx), void *ctx)
{
	int rc = -1, n = 0, step = SQLITE_DONE;
	sqlite3_stmt *st = store_stmt(s, id);
	if (!st)
		return -1;
	if (text1)
		SQLITE_CHECK(s, sqlite3_bind_text(st, 1, text1, -1, SQLITE_TRANSIENT));
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		if (row(st, ctx))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

/* ---- compute and evaluations ----------------------------------------------- */

int store_model_compute(store *s, int64_t model_id, store_compute *c)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_COMPUTE);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, model_id));
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step);
	c->seconds = sqlite3_column_double(st, 0);
	c->cpu_seconds = sqlite3_column_double(st, 1);
	c->evals = sqlite3_column_int64(st, 2);
	c->games = sqlite3_column_int64(st, 3);
	c->positions = sqlite3_column_int64(st, 4);
	rc = 1;
out:
	store_release(st);
	return rc;
}

/* Arguments of store_add_evaluations' transaction. */
typedef struct store_eval_batch {
	const store_evaluation *e; /* [n] */
	int n;                     /* rows */
	double now;                /* one timestamp for all */
} store_eval_batch;

static int store_evals_body(store *s, void *ctx)
{
	store_eval_batch *b = ctx;
	int rc = -1;
	sqlite3_stmt *st = NULL;
	for (int i = 0; i < b->n; i++) {
		const store_evaluation *e = &b->e[i];
		st = store_stmt(s, STORE_SQL_ADD_EVALUATION);
		if (!st)
			return -1;
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, e->model_id));
		SQLITE_CHECK(s, sqlite3_bind_text(st, 2, e->method, -1, SQLITE_STATIC));
		SQLITE_CHECK(s, sqlite3_bind_text(st, 3, e->part, -1, SQLITE_STATIC));
		SQLITE_CHECK(s, sqlite3_bind_int64(st, 4, e->n));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 5, e->score));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 6, e->value));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 7, e->seconds));
		SQLITE_CHECK(s, sqlite3_bind_double(st, 8, b->now));
		SQLITE_CHECK(s, store_step_done(st));
	}
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_add_evaluations(store *s, const store_evaluation *e, int n)
{
	store_eval_batch b = { e, n, store_now() };
	return store_write(s, store_evals_body, &b);
}

int store_evaluations(store *s, int64_t model_id, const char *method, store_evaluation_fn fn,
		      void *ctx)
{
	int rc = -1, n = 0, step = SQLITE_DONE;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_EVALUATIONS);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, model_id));
	if (method)
		SQLITE_CHECK(s, sqlite3_bind_text(st, 2, method, -1, SQLITE_TRANSIENT));
	else
		SQLITE_CHECK(s, sqlite3_bind_null(st, 2));
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_evaluation e = {
			.model_id = sqlite3_column_int64(st, 0),
			.method = store_col_text(st, 1),
			.part = store_col_text(st, 2),
			.n = (int)sqlite3_column_int64(st, 3),
			.score = sqlite3_column_double(st, 4),
			.value = sqlite3_column_double(st, 5),
			.seconds = sqlite3_column_double(st, 6),
			.created = sqlite3_column_double(st, 7),
		};
		n++;
		if (fn(ctx, &e))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

/* A callback and its context, for the row functions below. */
typedef struct store_row_cb {
	void *fn;
	void *ctx;
} store_row_cb;

static int metric_row(sqlite3_stmt *st, void *ctx)
{
	store_row_cb *c = ctx;
	return ((store_metric_fn)c->fn)(c->ctx, sqlite3_column_int64(st, 0),
					 sqlite3_column_double(st, 1), sqlite3_column_double(st, 2));
}

int store_metrics(store *s, const char *name, store_metric_fn fn, void *ctx)
{
	store_row_cb c = { (void *)fn, ctx };
	return store_each_row(s, STORE_SQL_METRICS, name, metric_row, &c);
}

static int name_row(sqlite3_stmt *st, void *ctx)
{
	store_row_cb *c = ctx;
	const char *name = (const char *)sqlite3_column_text(st, 0);
	return ((store_name_fn)c->fn)(c->ctx, name ? name : "");
}

int store_metric_names(store *s, store_name_fn fn, void *ctx)
{
	store_row_cb c = { (void *)fn, ctx };
	return store_each_row(s, STORE_SQL_METRIC_NAMES, NULL, name_row, &c);
}

static int full_metric_row(sqlite3_stmt *st, void *ctx)
{
	store_row_cb *c = ctx;
	const char *name = (const char *)sqlite3_column_text(st, 2);
	double v = sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 3);
	return ((store_metric_row_fn)c->fn)(c->ctx, sqlite3_column_int64(st, 0),
					     sqlite3_column_double(st, 1), name ? name : "", v);
}

int store_metric_rows(store *s, store_metric_row_fn fn, void *ctx)
{
	store_row_cb c = { (void *)fn, ctx };
	return store_each_row(s, STORE_SQL_METRIC_ROWS, NULL, full_metric_row, &c);
}

/* ---- statistics and maintenance -------------------------------------------- */

/* One integer from a query without parameters (run rarely: not cached). */
static int store_query_int64(store *s, const char *sql, int64_t *v)
{
	int rc = -1;
	sqlite3_stmt *st = NULL;
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db, sql, -1, &st, NULL));
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step == SQLITE_DONE ? SQLITE_ERROR : step);
	*v = sqlite3_column_int64(st, 0);
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_get_stats(store *s, store_stats *out)
{
	int rc = -1;
	sqlite3_stmt *st = NULL;
	int64_t page_count = 0, page_size = 0, free_pages = 0;
	memset(out, 0, sizeof(*out));
	out->schema_version = s->schema_version;
	if (store_query_int64(s, "SELECT count(*) FROM models", &out->models) ||
	    store_count(s, &out->games, &out->positions) ||
	    store_query_int64(s, "SELECT count(*) FROM metrics", &out->metrics) ||
	    store_query_int64(s, "SELECT count(*) FROM matches", &out->matches) ||
	    store_query_int64(s, "PRAGMA page_count", &page_count) ||
	    store_query_int64(s, "PRAGMA page_size", &page_size) ||
	    store_query_int64(s, "PRAGMA freelist_count", &free_pages))
		goto out;
	out->page_bytes = page_count * page_size;
	out->free_bytes = free_pages * page_size;
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db,
					   "SELECT game, size, count(*), sum(n_positions), sum(length), "
					   "sum(result = 1), sum(result = -1), sum(result = 0), "
					   "sum(resigned >= 0) FROM games GROUP BY game, size ORDER BY game, size",
					   -1, &st, NULL));
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (out->n_kinds == STORE_MAX_KINDS)
			continue;
		store_kind_stats *k = &out->kinds[out->n_kinds++];
		snprintf(k->game, sizeof(k->game), "%s", store_col_text(st, 0));
		k->size = sqlite3_column_int(st, 1);
		k->games = sqlite3_column_int64(st, 2);
		k->positions = sqlite3_column_int64(st, 3);
		k->moves = sqlite3_column_int64(st, 4);
		k->black_wins = sqlite3_column_int64(st, 5);
		k->white_wins = sqlite3_column_int64(st, 6);
		k->draws = sqlite3_column_int64(st, 7);
		k->resignations = sqlite3_column_int64(st, 8);
	}
	if (step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_vacuum(store *s)
{
	int rc = -1;
	sqlite3_stmt *st = NULL;
	SQLITE_CHECK(s, sqlite3_exec(s->db, "VACUUM", NULL, NULL, NULL));
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL));
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step == SQLITE_DONE ? SQLITE_ERROR : step);
	if (sqlite3_column_int(st, 0) != 0) {
		store_failf(s, "vacuumed, but the WAL could not be emptied: another process is using "
			       "the database; run again when it is idle");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_integrity_check(store *s, char *msg, size_t len)
{
	int rc = -1;
	sqlite3_stmt *st = NULL;
	if (msg && len)
		msg[0] = '\0';
	SQLITE_CHECK(s, sqlite3_prepare_v2(s->db, "PRAGMA integrity_check", -1, &st, NULL));
	int step = sqlite3_step(st);
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step == SQLITE_DONE ? SQLITE_ERROR : step);
	const char *t = store_col_text(st, 0);
	if (msg && len)
		snprintf(msg, len, "%s", t);
	if (strcmp(t, "ok") != 0) {
		store_failf(s, "integrity check failed: %s", t);
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* ---- matches --------------------------------------------------------------- */

int store_find_match(store *s, const char *player_a, const char *player_b, const char *settings,
		     int64_t *id)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_FIND_MATCH);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_text(st, 1, player_a, -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 2, player_b, -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 3, settings, -1, SQLITE_TRANSIENT));
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step);
	*id = sqlite3_column_int64(st, 0);
	rc = 1;
out:
	store_release(st);
	return rc;
}

int store_add_match(store *s, const char *player_a, const char *player_b, const char *settings,
		    int64_t *id_out)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_ADD_MATCH);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_text(st, 1, player_a, -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 2, player_b, -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 3, store_now()));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 4, settings, -1, SQLITE_TRANSIENT));
	store_insert ins = { st, 0 };
	if (store_write(s, store_insert_body, &ins))
		goto out;
	if (id_out)
		*id_out = ins.id;
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_set_match_status(store *s, int64_t match_id, const char *status)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_MATCH_STATUS);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, match_id));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 2, status, -1, SQLITE_TRANSIENT));
	store_insert ins = { st, 0 };
	if (store_write(s, store_insert_body, &ins))
		goto out;
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_set_meta(store *s, const char *key, const char *value)
{
	int rc = -1;
	if (strcmp(key, "schema_version") == 0) {
		store_failf(s, "meta key schema_version belongs to the migrations");
		return -1;
	}
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_SET_META);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT));
	store_insert ins = { st, 0 };
	if (store_write(s, store_insert_body, &ins))
		goto out;
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_get_meta(store *s, const char *key, char *value, size_t len)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_GET_META);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT));
	int step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = 0;
		goto out;
	}
	if (step != SQLITE_ROW)
		SQLITE_CHECK(s, step);
	snprintf(value, len, "%s", store_col_text(st, 0));
	rc = 1;
out:
	store_release(st);
	return rc;
}

int store_add_match_game(store *s, const store_match_game *g)
{
	int rc = -1;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_ADD_MATCH_GAME);
	if (!st)
		return -1;
	if (g->result < -1 || g->result > 1) {
		store_failf(s, "match game result %d is not -1, 0 or +1", g->result);
		goto out;
	}
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, g->match_id));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 2, g->game_no));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 3, g->black ? g->black : "", -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 4, g->white ? g->white : "", -1, SQLITE_TRANSIENT));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 5, g->result));
	SQLITE_CHECK(s, sqlite3_bind_text(st, 6, g->reason ? g->reason : "", -1, SQLITE_TRANSIENT));
	if (g->sgf && g->sgf[0])
		SQLITE_CHECK(s, sqlite3_bind_text(st, 7, g->sgf, -1, SQLITE_TRANSIENT));
	else
		SQLITE_CHECK(s, sqlite3_bind_null(st, 7));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 8, store_now()));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 9, g->a_black ? 1 : 0));
	SQLITE_CHECK(s, sqlite3_bind_double(st, 10, g->score));
	SQLITE_CHECK(s, sqlite3_bind_int(st, 11, g->moves));
	store_insert ins = { st, 0 };
	if (store_write(s, store_insert_body, &ins)) {
		if ((s->last_rc & 0xff) == SQLITE_CONSTRAINT)
			store_failf(s, "cannot add game %d of match %lld: no such match, or the game "
				       "is already stored", g->game_no, (long long)g->match_id);
		goto out;
	}
	rc = 0;
out:
	store_release(st);
	return rc;
}

int store_match_games(store *s, int64_t match_id, store_match_game_fn fn, void *ctx)
{
	int rc = -1, n = 0, step;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_MATCH_GAMES);
	if (!st)
		return -1;
	SQLITE_CHECK(s, sqlite3_bind_int64(st, 1, match_id));
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_match_game g = {
			.match_id = sqlite3_column_int64(st, 0),
			.game_no = sqlite3_column_int(st, 1),
			.black = store_col_text(st, 2),
			.white = store_col_text(st, 3),
			.result = sqlite3_column_int(st, 4),
			.reason = store_col_text(st, 5),
			.sgf = store_col_text(st, 6),
			.a_black = sqlite3_column_int(st, 7),
			.score = sqlite3_column_double(st, 8),
			.moves = sqlite3_column_int(st, 9),
			.created = sqlite3_column_double(st, 10),
		};
		n++;
		if (fn(ctx, &g))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

int store_list_matches(store *s, store_match_fn fn, void *ctx)
{
	int rc = -1, n = 0, step;
	sqlite3_stmt *st = store_stmt(s, STORE_SQL_LIST_MATCHES);
	if (!st)
		return -1;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_match m = {
			.id = sqlite3_column_int64(st, 0),
			.player_a = store_col_text(st, 1),
			.player_b = store_col_text(st, 2),
			.settings = store_col_text(st, 3),
			.status = store_col_text(st, 4),
			.created = sqlite3_column_double(st, 5),
			.games = sqlite3_column_int(st, 6),
		};
		n++;
		if (fn(ctx, &m))
			break;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		SQLITE_CHECK(s, step);
	rc = n;
out:
	store_release(st);
	return rc;
}

/* ---- patience with other writers ------------------------------------------ */

int store_set_patience(store *s, int busy_timeout_ms, int retries)
{
	s->busy_retries = retries < 0 ? 0 : retries;
	if (sqlite3_busy_timeout(s->db, busy_timeout_ms < 0 ? 0 : busy_timeout_ms) != SQLITE_OK) {
		store_fail(s, __FILE__, __LINE__, sqlite3_errcode(s->db), "sqlite3_busy_timeout");
		return -1;
	}
	return 0;
}

bool store_last_busy(const store *s)
{
	return store_is_busy(s->last_rc);
}
