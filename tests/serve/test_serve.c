/* The dashboard server (serve/serve.h) over a tiny real Connect Four run:
 * its JSON while the run writes (and that it sees the new iteration), a
 * bounded fuzz of paths, parameters and methods, 100 concurrent clients,
 * and no byte of the database changed by any of it. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <ftw.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/rng.h"
#include "loop/loop.h"
#include "serve/serve.h"
#include "tests/loop/loop_util.h"

/* One HTTP/1.0 request; the status, or 0 when no status line came back.
 * The body (malloc'ed) in *body when body is not NULL. */
static int http(int port, const char *method, const char *path, char **body)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	struct timeval tv = { 20, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	int status = 0;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto out;
	char req[4096];
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
	if (write(fd, req, (size_t)n) != n)
		goto out;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = (len + 4096 + 1) * 2;
			buf = realloc(buf, cap);
		}
		ssize_t got = read(fd, buf + len, 4096);
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	if (buf) {
		buf[len] = 0;
		if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
			status = 0;
	}
out:
	close(fd);
	if (body) {
		char *b = buf ? strstr(buf, "\r\n\r\n") : NULL;
		*body = strdup(b ? b + 4 : "");
	}
	free(buf);
	return status;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void rm_dir(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The whole file, malloc'ed, its size in *n. */
static unsigned char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)sz + 1);
	cr_assert_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz;
	return b;
}

/* ---- 100 clients at once ----------------------------------------------------- */

enum { CLIENTS = 100 };

typedef struct client {
	int port;
	int id;
	atomic_int *bad; /* answers that were not what the path must give */
} client;

static void *client_main(void *arg)
{
	client *c = arg;
	static const char *const paths[] = { "/api/run", "/api/metrics", "/api/models",
					     "/api/games?limit=5", "/", "/api/metric?name=loss" };
	for (int i = 0; i < 3; i++) {
		const char *p = paths[(c->id + i) % 6];
		char *body = NULL;
		int st = http(c->port, "GET", p, &body);
		if (st != 200 || strlen(body) < 2)
			atomic_fetch_add(c->bad, 1);
		free(body);
	}
	return NULL;
}

static int hammer(int port)
{
	pthread_t th[CLIENTS];
	client cl[CLIENTS];
	atomic_int bad = 0;
	int started = 0;
	for (int i = 0; i < CLIENTS; i++, started++) {
		cl[i] = (client){ port, i, &bad };
		if (pthread_create(&th[i], NULL, client_main, &cl[i]) != 0) {
			atomic_fetch_add(&bad, 1000);
			break;
		}
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	return atomic_load(&bad);
}

/* hammer() on a thread of its own, beside the run's writes. */
typedef struct hammer_job {
	int port;
	int bad; /* hammer's result */
} hammer_job;

static void *hammer_main(void *arg)
{
	hammer_job *j = arg;
	j->bad = hammer(j->port);
	return NULL;
}

/* ---- the fuzz ---------------------------------------------------------------- */

static void fuzz(int port, int rounds)
{
	static const char *const parts[] = {
		"/", "api", "/api/", "run", "metric", "metrics", "game", "games", "models", "/models/",
		"?", "&", "=", "id", "name", "limit", "-1", "0", "1", "999999999999999999999", "%00",
		"%2e%2e/", "../", "..", "//", "loss", "c4_error_net/x", "%27%3b%20DROP%20TABLE%20games",
		"%22", "%3c", "+", "%", "%zz", "index.html", "x", "1e9", "0x10", "%0d%0a",
	};
	static const char *const methods[] = { "GET", "GET", "GET", "HEAD", "POST", "PUT", "DELETE" };
	uint64_t r = 12345;
	for (int i = 0; i < rounds; i++) {
		char path[2048] = "";
		int n = 1 + (int)(rng_next(&r) % 8);
		for (int k = 0; k < n; k++)
			strncat(path, parts[rng_next(&r) % (sizeof(parts) / sizeof(parts[0]))],
				sizeof(path) - strlen(path) - 1);
		if (rng_next(&r) % 16 == 0) /* a long one */
			for (int k = 0; k < 300; k++)
				strncat(path, "a", sizeof(path) - strlen(path) - 1);
		if (path[0] != '/')
			memmove(path + 1, path, strlen(path) + 1), path[0] = '/';
		const char *m = methods[rng_next(&r) % 7];
		int st = http(port, m, path, NULL);
		/* Every request is answered, with a status that fits it. */
		cr_assert(st == 200 || st == 400 || st == 404 || st == 405 || st == 414,
			  "%s %s gave %d", m, path, st);
		if (strcmp(m, "GET") && strcmp(m, "HEAD"))
			cr_assert_eq(st, 405, "%s %s gave %d", m, path, st);
	}
}

static int count_char(const char *s, char c)
{
	int n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

Test(serve, live_run_fuzz_and_clients_without_a_write, .timeout = 120)
{
	char dir[] = "/tmp/sente-serve-XXXXXX", err[1024], path[600];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	loop_options o = loop_test_options(dir);
	loop *r = loop_open(&o, err, sizeof(err));
	cr_assert(r, "%s", err);
	loop_iteration it;
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_train(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_export(r, &it, err, sizeof(err)), 0, "%s", err);

	serve_server *s = serve_start(path, NULL, 0, err, sizeof(err));
	cr_assert(s, "%s", err);
	int port = serve_port(s);
	cr_assert_gt(port, 0);
	char *body = NULL;
	cr_assert_eq(http(port, "GET", "/api/metric?name=loss", &body), 200);
	int before = count_char(body, ',');
	cr_assert(strstr(body, "\"value\":["), "%s", body);
	free(body);

	/* Another iteration while 100 clients read. */
	pthread_t readers;
	hammer_job job = { port, -1 };
	cr_assert_eq(pthread_create(&readers, NULL, hammer_main, &job), 0);
	cr_assert_eq(loop_selfplay(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_train(r, &it, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(loop_export(r, &it, err, sizeof(err)), 0, "%s", err);
	pthread_join(readers, NULL);
	cr_assert_eq(job.bad, 0, "some clients got no proper answer during the run");
	cr_assert_eq(http(port, "GET", "/api/metric?name=loss", &body), 200);
	cr_assert_gt(count_char(body, ','), before, "the new iteration is seen: %s", body);
	free(body);
	cr_assert_eq(http(port, "GET", "/api/run", &body), 200);
	cr_assert(strstr(body, "\"games_recent\":[{"), "%.300s", body);
	cr_assert(strstr(body, "\"c4_error_net\":{"), "%.300s", body);
	free(body);
	cr_assert_eq(http(port, "GET", "/api/game?id=1", &body), 200);
	cr_assert(strstr(body, "\"boards\":[\"..........."), "%.300s", body);
	free(body);
	cr_assert_eq(http(port, "GET", "/models/1", &body), 200);
	free(body);
	cr_assert_eq(http(port, "GET", "/", &body), 200);
	cr_assert(strstr(body, "uPlot"));
	free(body);
	loop_close(r);

	/* The run is over: nothing may change the file from here. */
	size_t n0, n1;
	unsigned char *b0 = slurp(path, &n0);
	fuzz(port, 400);
	cr_assert_eq(hammer(port), 0);
	cr_assert_eq(http(port, "GET", "/api/game?id=0", NULL), 400);
	cr_assert_eq(http(port, "GET", "/api/game?id=99999", NULL), 404);
	cr_assert_eq(http(port, "GET", "/api/games?limit=1001", NULL), 400);
	cr_assert_eq(http(port, "GET", "/api/metric?name=a%27b", NULL), 400);
	cr_assert_eq(http(port, "GET", "/models/999", NULL), 404);
	cr_assert_eq(http(port, "POST", "/api/run", NULL), 405);
	cr_assert_gt(serve_requests(s), 700);
	serve_stop(s);
	unsigned char *b1 = slurp(path, &n1);
	cr_assert_eq(n0, n1);
	cr_assert_eq(memcmp(b0, b1, n0), 0, "the database changed");
	free(b0);
	free(b1);
	rm_dir(dir);
}

/* A new database in a new folder under /tmp (dir a mkdtemp template);
 * path gets the database's path. */
static store *temp_store(char *dir, char *path, size_t len)
{
	char err[512];
	cr_assert(mkdtemp(dir));
	snprintf(path, len, "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	return db;
}

Test(serve, snapshot_and_export)
{
	char dir[] = "/tmp/sente-serve-XXXXXX", err[512], path[600], out[600];
	store *db = temp_store(dir, path, sizeof(path));
	const char *names[] = { "loss", "c4_error_net" };
	double v1[] = { 2.5, 0.4 }, v2[] = { 2.0, 0.3 };
	cr_assert_eq(store_add_metrics(db, 10, names, v1, 2), 0);
	cr_assert_eq(store_add_metrics(db, 20, names, v2, 2), 0);
	cr_assert_eq(store_add_metric(db, 20, "lr", 0.0 / 0.0), 0);
	snprintf(out, sizeof(out), "%s/report.html", dir);
	cr_assert_eq(serve_page_save(db, out, err, sizeof(err)), 0, "%s", err);
	size_t n;
	char *html = (char *)slurp(out, &n);
	html[n] = 0;
	cr_assert(strstr(html, "var SENTE_DATA = {"), "the data is embedded");
	cr_assert(strstr(html, "\"loss\":{\"step\":[10,20],\"time\":["));
	cr_assert(strstr(html, "uPlot"));
	cr_assert_null(strstr(html, "SENTE_CSS"), "every marker is filled");
	free(html);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(serve_export_metrics(db, f, SERVE_FORMAT_CSV, err, sizeof(err)), 5);
	fclose(f);
	cr_assert(!strncmp(buf, "step,time,name,value\n10,", 24), "%s", buf);
	cr_assert(strstr(buf, ",\"c4_error_net\",0.3\n"), "%s", buf);
	cr_assert(strstr(buf, ",\"lr\",\n"), "NaN is an empty field: %s", buf);
	free(buf);
	f = open_memstream(&buf, &len);
	cr_assert_eq(serve_export_metrics(db, f, SERVE_FORMAT_JSONL, err, sizeof(err)), 5);
	fclose(f);
	cr_assert_eq(count_char(buf, '\n'), 5);
	cr_assert(strstr(buf, "\"name\":\"lr\",\"value\":null}"), "%s", buf);
	free(buf);
	store_close(db);
	rm_dir(dir);
}

/* One writer of the report: its own handle on the run's database, as a
 * run and `sente eval` each have. */
typedef struct report_writer {
	const char *db_path, *out;
	int failures;
	char err[512];
} report_writer;

static void *write_reports(void *arg)
{
	report_writer *w = arg;
	store *db = store_open(w->db_path, w->err, sizeof(w->err));
	if (!db) {
		w->failures = -1;
		return NULL;
	}
	for (int i = 0; i < 40; i++)
		if (serve_page_save(db, w->out, w->err, sizeof(w->err)) != 0)
			w->failures++;
	store_close(db);
	return NULL;
}

/* A run and `sente eval` write DIR/report.html at the same moments: each
 * save succeeds, the page left is whole, and no temporary file stays
 * (with one shared temporary name, one writer truncated the other's file
 * and renamed it away under it). */
Test(serve, report_written_by_two_at_once)
{
	char dir[] = "/tmp/sente-serve-XXXXXX", path[600], out[600];
	store *db = temp_store(dir, path, sizeof(path));
	const char *names[] = { "loss" };
	for (int step = 1; step <= 200; step++) {
		double v = 3.0 / step;
		cr_assert_eq(store_add_metrics(db, step, names, &v, 1), 0);
	}
	snprintf(out, sizeof(out), "%s/report.html", dir);
	report_writer w[2] = { { .db_path = path, .out = out }, { .db_path = path, .out = out } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, write_reports, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(w[i].failures, 0, "writer %d: %d saves failed: %s", i, w[i].failures,
			     w[i].err);
	size_t n;
	char *html = (char *)slurp(out, &n);
	html[n] = 0;
	cr_assert(strstr(html, "\"loss\":{\"step\":[1,2,3,"), "the data is embedded");
	cr_assert_eq(strstr(html, "</html>"), html + n - strlen("</html>\n"),
		     "the page ends once, at its end");
	free(html);
	struct stat st;
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0644, "readable by all: %o", st.st_mode & 0777);
	DIR *d = opendir(dir);
	cr_assert(d);
	struct dirent *e;
	while ((e = readdir(d)))
		cr_assert(strncmp(e->d_name, "report.html.", 12) != 0, "left behind: %s", e->d_name);
	closedir(d);
	store_close(db);
	rm_dir(dir);
}

static const char *no_args(void *ctx, const char *key)
{
	(void)ctx;
	(void)key;
	return NULL;
}

/* /api/evaluations and /api/run's "evaluations": the rows of `sente eval`
 * with each model's compute (null for a model registered without it). */
Test(serve, evaluations_with_compute)
{
	char dir[] = "/tmp/sente-serve-XXXXXX", err[512], path[600];
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	store *db = store_open(path, err, sizeof(err));
	cr_assert(db, "%s", err);
	store_compute c = { .seconds = 120, .cpu_seconds = 200, .evals = 1000, .games = 10,
			    .positions = 100 };
	int64_t m1, m2;
	cr_assert_eq(store_add_model_compute(db, "models/a.sente", 0, 5, "", &c, &m1), 0);
	cr_assert_eq(store_add_model(db, "models/b.sente", m1, 9, "", &m2), 0);
	store_evaluation e[2] = {
		{ .model_id = m1, .method = "net", .part = "begin-easy", .n = 100, .score = 25,
		  .value = 0.25, .seconds = 1.5 },
		{ .model_id = m2, .method = "net", .part = "begin-easy", .n = 100, .score = 20,
		  .value = 0.2, .seconds = 1.5 },
	};
	cr_assert_eq(store_add_evaluations(db, e, 2), 0);
	serve_reply r;
	serve_answer(db, "/api/evaluations", no_args, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "{\"model\":1,\"method\":\"net\",\"part\":\"begin-easy\",\"n\":100,"
				 "\"value\":0.25,\"seconds\":1.5,\"compute_seconds\":120,"
				 "\"compute_cpu_seconds\":200}"), "%s", r.body);
	cr_assert(strstr(r.body, "\"value\":0.2,\"seconds\":1.5,\"compute_seconds\":null"), "%s",
		  r.body);
	serve_reply_free(&r);
	serve_answer(db, "/api/run", no_args, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, ",\"evaluations\":[{\"model\":1,"), "%s", r.body);
	serve_reply_free(&r);
	store_close(db);
	rm_dir(dir);
}
