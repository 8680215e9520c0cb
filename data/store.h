/* store.h: the SQLite store of a run (DIR/sente.db): models, self-play
 * games with their records, matches, and training metrics.
 *
 * One database per run, in WAL mode, so that several self-play processes
 * and the learner read and write it at once: readers never block the writer,
 * and writers queue on a busy timeout (STORE_BUSY_TIMEOUT_MS) plus a retry
 * of the whole write transaction. synchronous=NORMAL: in WAL mode a commit
 * is a write() into the WAL, which survives the process being killed at any
 * moment (kill -9 loses at most the transaction in flight, never a part of
 * one); only an OS crash or power loss can lose the last commits, and even
 * that never corrupts the file. Foreign keys are enforced.
 *
 * The schema is versioned in meta(key = 'schema_version'); store_open
 * applies the missing migrations, one transaction each, and refuses a
 * database written by a newer sente and a file that is not a sente database.
 *
 * Every function that can fail returns a negative status and leaves its
 * message in store_errmsg(). A store is used by one thread at a time.
 */
#ifndef SENTE_DATA_STORE_H
#define SENTE_DATA_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/record.h"

/* The schema this sente writes; store_migrations has this many steps. */
#define STORE_SCHEMA_VERSION 5
/* How long one statement waits for another process's write lock. */
#define STORE_BUSY_TIMEOUT_MS 10000
/* Times a write transaction is retried when the lock stays busy past it. */
#define STORE_BUSY_RETRIES 5

typedef struct store store;

/* store_open_ex flags. */
enum {
	STORE_OPEN_CREATE = 1,   /* create the file when it does not exist */
	/* Read only (SQLITE_OPEN_READONLY): nothing is created, migrated or
	 * switched to WAL, so a read-only file can be read and an empty one
	 * stays empty; a file that is not a sente database of this schema
	 * (an empty one, an older schema) is refused with the reason.
	 * Writes fail. Not with STORE_OPEN_CREATE. */
	STORE_OPEN_READONLY = 2,
};

/* Opens (creating it when missing) and migrates the database at `path`.
 * NULL with a message in err when the file cannot be opened, is not a sente
 * database, or was written by a newer sente. */
store *store_open(const char *path, char *err, size_t errlen);
/* store_open with flags: without STORE_OPEN_CREATE a missing file is an
 * error (for tools that inspect an existing run). Either way a path that is
 * not a regular file (after symbolic links: a directory, /dev/null) is
 * refused. */
store *store_open_ex(const char *path, int flags, char *err, size_t errlen);
/* Closes the database and frees the store. Accepts NULL. */
void store_close(store *s);

/* The message of the last failure. */
const char *store_errmsg(store *s);
/* The schema version of the open database (STORE_SCHEMA_VERSION once open). */
int store_schema_version(store *s);

/* The migrations, in order: step i takes the schema from version i to
 * i + 1 (exported for tests and for `sente db`). */
extern const char *const store_migrations[STORE_SCHEMA_VERSION];

/* How long writes wait for another process's write lock: each statement
 * busy_timeout_ms, then the whole transaction retried `retries` times
 * (defaults STORE_BUSY_TIMEOUT_MS and STORE_BUSY_RETRIES: about a minute).
 * A writer with a deadline (self-play) sets it short and keeps what it
 * could not write for later. 0, or -1. */
int store_set_patience(store *s, int busy_timeout_ms, int retries);
/* True when the last failure was another process holding the lock. */
bool store_last_busy(const store *s);

/* ---- models -------------------------------------------------------------- */

/* Model files are stored relative to the database's folder when they lie
 * in it (DIR/models/x.sente as models/x.sente), absolute when they exist
 * elsewhere, and as given when no such file exists; the functions below
 * return them resolved against the database's folder, so a run's store
 * opened from any working folder gives paths that exist. A row whose path
 * names no file in the database's folder gives its path as stored (rows
 * written relative to the writer's working folder keep working there). */

/* Registers a model file; parent_id <= 0 means none. 0 or -1. */
int store_add_model(store *s, const char *file, int64_t parent_id, int64_t train_step,
		    const char *notes, int64_t *id_out);
/* What a run spent to reach a model: cumulative over the run's sessions,
 * self-play and training only (not measurement, reports or gating). */
typedef struct store_compute {
	double seconds;      /* wall seconds of self-play and training */
	double cpu_seconds;  /* the process's CPU seconds over the same phases */
	int64_t evals;       /* network evaluations of self-play */
	int64_t games;       /* self-play games played */
	int64_t positions;   /* recorded positions they gave */
} store_compute;
/* store_add_model with the model's compute (NULL: none), in the same
 * transaction, so a registered model of a run always has it. 0 or -1. */
int store_add_model_compute(store *s, const char *file, int64_t parent_id, int64_t train_step,
			    const char *notes, const store_compute *c, int64_t *id_out);
/* Model `model_id`'s compute: 1 found, 0 none (registered without it),
 * -1 error. */
int store_model_compute(store *s, int64_t model_id, store_compute *c);

/* The model registered last: 1 found, 0 none, -1 error. `file` (file_len
 * bytes, may be NULL) and train_step (may be NULL) are filled when found. */
int store_latest_model(store *s, int64_t *id, char *file, size_t file_len, int64_t *train_step);
/* The file of model `id`: 0, or -1 (no such model, or an error). */
int store_model_file(store *s, int64_t id, char *file, size_t len);

/* A models row, for listings. Strings are valid during the callback only. */
typedef struct store_model {
	int64_t id;         /* models.id */
	const char *file;   /* the model file, resolved as above */
	int64_t parent_id;  /* the model it was trained from, 0 when none */
	int64_t train_step; /* learner step it was exported at */
	double created;     /* Unix time, seconds */
	const char *notes;  /* free text, "" when none */
} store_model;
typedef int (*store_model_fn)(void *ctx, const store_model *m); /* nonzero stops */
/* Calls fn for every model, oldest first. The number seen, or -1. */
int store_list_models(store *s, store_model_fn fn, void *ctx);

/* ---- games --------------------------------------------------------------- */

/* Stores a finished game in ONE transaction. model_id <= 0: no model (random
 * or uniform play); otherwise it must name a model. worker may be NULL.
 * 0 or -1. */
int store_add_game(store *s, int64_t model_id, const char *worker, const game_record *r,
		   int64_t *id_out);
/* Games, and recorded (full-search) positions, in the store. 0 or -1. */
int store_count(store *s, int64_t *games, int64_t *positions);

/* Calls fn for the most recent games with id > after_game_id, newest first,
 * until their recorded positions reach max_positions (<= 0: no limit) or the
 * games run out. Each record is decoded; a row whose blob does not decode is
 * skipped and counted (its positions do not count), and the count with the
 * first reason is reported once in err ("" when none was skipped); see also
 * store_last_skipped. fn returning nonzero stops early. Returns the number
 * of games delivered, or -1 (message in err and store_errmsg). */
typedef int (*store_game_fn)(void *ctx, int64_t game_id, const game_record *r); /* nonzero stops */
int store_recent_games(store *s, int64_t max_positions, int64_t after_game_id, store_game_fn fn,
		       void *ctx, char *err, size_t errlen);
/* Rows store_recent_games skipped as corrupt in its last call. */
int64_t store_last_skipped(store *s);

/* A games row without decoding its record. Valid during the callback only. */
typedef struct store_game_info {
	int64_t id;          /* games.id */
	int64_t model_id;    /* 0 when the game was played without a model */
	const char *worker;  /* who played it, "" when unknown */
	const char *game;    /* "go" or "connect4" */
	int size;            /* board size (7 for Connect Four) */
	double komi;         /* Go komi */
	int result;          /* +1 Black/first won, -1 lost, 0 draw */
	double score;        /* as game_record.score */
	int resigned;        /* -1, or the player who resigned */
	int length;          /* moves */
	int n_positions;     /* full-search moves */
	double created;      /* Unix time, seconds */
	const uint8_t *blob; /* the encoded record (record_decode it) */
	size_t blob_len;     /* bytes in blob */
} store_game_info;
typedef int (*store_info_fn)(void *ctx, const store_game_info *g); /* nonzero stops */
/* Calls fn for games newest first: only game `game_id` when it is > 0,
 * else the `limit` newest (all when limit <= 0). The number seen, or -1. */
int store_list_games(store *s, int64_t game_id, int64_t limit, store_info_fn fn, void *ctx);

/* ---- metrics ------------------------------------------------------------- */

/* Records metric `name` = value at learner step `step`, timestamped now. */
int store_add_metric(store *s, int64_t step, const char *name, double value);
/* Several metrics of one step in one transaction. 0 or -1. */
int store_add_metrics(store *s, int64_t step, const char **names, const double *values, int n);
/* Calls fn for every value of metric `name`, ordered by step (for report
 * plots); time is Unix seconds. The number seen, or -1. */
typedef int (*store_metric_fn)(void *ctx, int64_t step, double time, double value); /* nonzero stops */
int store_metrics(store *s, const char *name, store_metric_fn fn, void *ctx);
/* Calls fn for each distinct metric name, sorted. The number seen, or -1. */
typedef int (*store_name_fn)(void *ctx, const char *name); /* nonzero stops */
int store_metric_names(store *s, store_name_fn fn, void *ctx);
/* Calls fn for every metrics row in the order written (for export). The
 * number seen, or -1. name is valid during the callback only. */
typedef int (*store_metric_row_fn)(void *ctx, int64_t step, double time, const char *name,
				   double value); /* nonzero stops */
int store_metric_rows(store *s, store_metric_row_fn fn, void *ctx);

/* ---- evaluations (sente eval) --------------------------------------------- */

/* One measurement of a model by one method ("net", "search-v200-p100",
 * "gnugo-l10-v200-g20", ...) on one part (a position set, or "all").
 * Strings are valid during a callback only. */
typedef struct store_evaluation {
	int64_t model_id;   /* models.id */
	const char *method; /* how it was measured, settings included */
	const char *part;   /* a position set's name, or "all" */
	int n;              /* positions or games measured */
	double score;       /* errors (Connect Four), or wins + draws / 2 (games) */
	double value;       /* score / n */
	double seconds;     /* wall seconds the measurement took */
	double created;     /* Unix time it was stored (filled when read) */
} store_evaluation;
/* Stores rows in ONE transaction; a row with the same model, method and
 * part is replaced. 0 or -1. */
int store_add_evaluations(store *s, const store_evaluation *e, int n);
typedef int (*store_evaluation_fn)(void *ctx, const store_evaluation *e); /* nonzero stops */
/* Calls fn for the rows of model_id (0: every model) and method (NULL:
 * every method), by model then method. The count, or -1. */
int store_evaluations(store *s, int64_t model_id, const char *method, store_evaluation_fn fn,
		      void *ctx);

/* ---- matches (sente match, sente tournament) ------------------------------ */

/* A player is named by a text spec ("model:12", a model file's path, or
 * "gtp:COMMAND"); a match is found again by its two specs and its settings
 * (board, komi, visits, openings: what makes games comparable). */

/* The newest match with these players and settings: 1 found (*id set),
 * 0 none, -1 error. */
int store_find_match(store *s, const char *player_a, const char *player_b, const char *settings,
		     int64_t *id);
/* A new match, status 'running'. 0 or -1. */
int store_add_match(store *s, const char *player_a, const char *player_b, const char *settings,
		    int64_t *id_out);
/* Sets a match's status ("running", "done", "sprt-h0", ...). 0 or -1. */
int store_set_match_status(store *s, int64_t match_id, const char *status);

/* The meta key under which `sente run` keeps its latest session's
 * configuration, one "flag value" line per setting. */
#define STORE_META_RUN_CONFIG "run_config"

/* The meta table's free keys (schema_version is the migrations'): a run's
 * configuration, for instance. store_set_meta replaces the value (0, or
 * -1); store_get_meta copies it into value: 1, 0 when the key is absent,
 * -1 on error. */
int store_set_meta(store *s, const char *key, const char *value);
int store_get_meta(store *s, const char *key, char *value, size_t len);

/* One finished game of a match. Strings are valid during a callback only. */
typedef struct store_match_game {
	int64_t match_id;   /* matches.id */
	int game_no;        /* 0-based, unique within the match */
	const char *black;  /* Black's spec */
	const char *white;  /* White's spec */
	int a_black;        /* 1: player A had Black */
	int result;         /* +1 Black won, -1 White won, 0 draw */
	double score;       /* Black's area score minus komi; +-1 for Connect Four, 0 on resignation */
	int moves;          /* moves played */
	const char *reason; /* how it ended: "score", "resign", "illegal move by ...", ... */
	const char *sgf;    /* the game as SGF (Go), "" when none */
	double created;     /* Unix time it was stored (filled when read) */
} store_match_game;
/* Stores a finished game in ONE transaction; a game number already stored
 * for the match is refused. 0 or -1. */
int store_add_match_game(store *s, const store_match_game *g);
typedef int (*store_match_game_fn)(void *ctx, const store_match_game *g); /* nonzero stops */
/* Calls fn for each stored game of a match, by game number. The count, or -1. */
int store_match_games(store *s, int64_t match_id, store_match_game_fn fn, void *ctx);

/* A matches row with its stored game count. Strings valid in the callback. */
typedef struct store_match {
	int64_t id;           /* matches.id */
	const char *player_a; /* spec of A */
	const char *player_b; /* spec of B */
	const char *settings; /* as stored */
	const char *status;   /* "running", "done", ... */
	double created;       /* Unix time */
	int games;            /* games stored */
} store_match;
typedef int (*store_match_fn)(void *ctx, const store_match *m); /* nonzero stops */
/* Calls fn for every match, oldest first. The count, or -1. */
int store_list_matches(store *s, store_match_fn fn, void *ctx);

/* ---- statistics and maintenance (sente db) ------------------------------- */

/* Most distinct (game, size) pairs store_stats reports. */
#define STORE_MAX_KINDS 32

/* Games of one kind and board size. */
typedef struct store_kind_stats {
	char game[16];       /* "go" or "connect4" */
	int size;            /* board size */
	int64_t games;       /* rows */
	int64_t positions;   /* full-search moves */
	int64_t moves;       /* moves over all games (mean length = moves / games) */
	int64_t black_wins;  /* result +1 */
	int64_t white_wins;  /* result -1 */
	int64_t draws;       /* result 0 */
	int64_t resignations; /* games that ended by resignation */
} store_kind_stats;

typedef struct store_stats {
	int schema_version;   /* of the database */
	int64_t models;       /* rows in models */
	int64_t games;        /* rows in games */
	int64_t positions;    /* full-search moves over all games */
	int64_t metrics;      /* rows in metrics */
	int64_t matches;      /* rows in matches */
	int64_t page_bytes;   /* page_count * page_size: the main file's size */
	int64_t free_bytes;   /* of which on the freelist (VACUUM returns them) */
	int n_kinds;          /* entries in kinds[] */
	store_kind_stats kinds[STORE_MAX_KINDS]; /* by game, then size */
} store_stats;
int store_get_stats(store *s, store_stats *st);

/* VACUUM, then a TRUNCATE checkpoint that empties the WAL. 0, or -1 (for
 * instance another process is reading or writing). */
int store_vacuum(store *s);
/* PRAGMA integrity_check: 0 when "ok", else -1 with the first problem in
 * msg (which may be NULL). */
int store_integrity_check(store *s, char *msg, size_t len);

#endif
