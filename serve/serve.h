/* serve.h: a run's dashboard: one HTML page (charts drawn by the vendored
 * uPlot), the JSON it reads, metrics export, and a small read-only HTTP
 * server (libmicrohttpd) that serves them while the run writes.
 *
 * Endpoints (all GET or HEAD; anything else is 405, an unknown path 404, a
 * bad parameter 400 with a JSON {"error": ...}):
 *   /                       the dashboard (it polls /api/run)
 *   /api/run                everything the page shows, one object
 *   /api/metrics            {"names": [...]}: the metric names recorded
 *   /api/metric?name=N      {"name", "step": [], "time": [], "value": []}
 *   /api/models             [{"id", "file", "parent", "step", "created", "notes"}]
 *   /api/evaluations        [{"model", "method", "part", "n", "value", "seconds",
 *                           "compute_seconds", "compute_cpu_seconds"}]: `sente eval`'s
 *                           rows with the model's compute (null when unknown)
 *   /api/games?limit=N      the N (1..1000, default 20) newest games, no moves
 *   /api/game?id=N          one game with its moves and the board after each
 *   /models/ID              the model file, to download
 *
 * The store is opened read-only (SQLITE_OPEN_READONLY; in WAL mode it sees
 * each commit of a running `sente run`), every parameter is checked and
 * bound, and nothing is ever written. */
#ifndef SENTE_SERVE_SERVE_H
#define SENTE_SERVE_SERVE_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "data/store.h"

/* A reply to one request. */
typedef struct serve_reply {
	int status;        /* HTTP status */
	const char *type;  /* Content-Type */
	char *body;        /* malloc'ed body (serve_reply_free frees it), or NULL */
	size_t len;        /* bytes in body */
	char file[4096];   /* when not "": send this file instead of body */
} serve_reply;

/* Looks up a query parameter by name: its value, or NULL. */
typedef const char *(*serve_arg_fn)(void *ctx, const char *key);

/* Answers GET `url` (path only; parameters through arg) from db into r.
 * Always fills r (a status of 4xx or 5xx with a JSON error when it fails). */
void serve_answer(store *db, const char *url, serve_arg_fn arg, void *ctx, serve_reply *r);
void serve_reply_free(serve_reply *r);

/* Writes the dashboard. With db, the page is a static snapshot: the data of
 * /api/run embedded, no polling (report.html); without, it polls the
 * server. 0, or -1 with a message. */
int serve_page_write(FILE *f, store *db, char *err, size_t errlen);
/* serve_page_write to path through a temporary file and a rename. */
int serve_page_save(store *db, const char *path, char *err, size_t errlen);

/* Export formats of serve_export_metrics. */
typedef enum serve_format {
	SERVE_FORMAT_CSV,   /* step,time,name,value with a header line */
	SERVE_FORMAT_JSONL, /* one {"step","time","name","value"} per line */
} serve_format;
/* Every metrics row, in the order written. The rows written, or -1. */
int serve_export_metrics(store *db, FILE *f, serve_format fmt, char *err, size_t errlen);

typedef struct serve_server serve_server;

/* Starts serving the store at db_path on listen_addr (an IPv4 address,
 * "127.0.0.1" when NULL) and port (0: any free one). NULL with a message. */
serve_server *serve_start(const char *db_path, const char *listen_addr, int port, char *err,
			  size_t errlen);
/* The port it listens on. */
int serve_port(const serve_server *s);
/* Requests answered so far. */
long serve_requests(const serve_server *s);
/* Stops and frees. Accepts NULL. */
void serve_stop(serve_server *s);
/* `sente serve`: serve_start, a line on log with the address, then serve
 * until *stop is set. 0, or -1 with a message. */
int serve_run(const char *db_path, const char *listen_addr, int port,
	      volatile sig_atomic_t *stop, FILE *log, char *err, size_t errlen);

#endif
