/* http.c: the HTTP server over serve_answer, on libmicrohttpd. One internal
 * polling thread answers every request in turn, so the read-only store is
 * used by one thread at a time (as store.h asks); requests are short reads.
 * Concurrent clients queue on the connection limit, never on a crash. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

/* Connections open at once; more wait in the listen queue. */
enum { SERVE_CONNECTIONS = 512, SERVE_TIMEOUT_S = 10 };

struct serve_server {
	struct MHD_Daemon *d; /* the daemon and its thread */
	store *db;            /* read-only, used by the daemon's thread only */
	int port;             /* bound port */
	atomic_long requests; /* answered */
};

static const char *arg_lookup(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result queue(struct MHD_Connection *c, struct MHD_Response *resp, int status,
			     const char *type)
{
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	enum MHD_Result r = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	serve_server *s = cls;
	atomic_fetch_add(&s->requests, 1);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		static const char msg[] = "{\"error\":\"read-only: GET and HEAD only\"}\n";
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
		if (resp)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
		return queue(c, resp, MHD_HTTP_METHOD_NOT_ALLOWED, "application/json");
	}
	serve_reply r;
	serve_answer(s->db, url, arg_lookup, c, &r);
	struct MHD_Response *resp = NULL;
	if (r.file[0]) {
		int fd = open(r.file, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			static const char msg[] = "{\"error\":\"the model file is missing\"}\n";
			resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
							       MHD_RESPMEM_PERSISTENT);
			return queue(c, resp, MHD_HTTP_NOT_FOUND, "application/json");
		}
		resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd); /* owns fd */
		if (!resp)
			close(fd);
		else {
			const char *base = strrchr(r.file, '/');
			char disp[600];
			snprintf(disp, sizeof(disp), "attachment; filename=\"%.500s\"",
				 base ? base + 1 : r.file);
			for (char *p = disp + 22; *p; p++)
				if (*p == '"' && p[1])
					*p = '_';
			MHD_add_response_header(resp, "Content-Disposition", disp);
		}
		return queue(c, resp, r.status, r.type);
	}
	resp = MHD_create_response_from_buffer(r.len, r.body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		serve_reply_free(&r);
	return queue(c, resp, r.status, r.type);
}

serve_server *serve_start(const char *db_path, const char *listen_addr, int port, char *err,
			  size_t errlen)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (port < 0 || port > 65535) {
		snprintf(err, errlen, "port %d out of range (0..65535)", port);
		return NULL;
	}
	if (inet_pton(AF_INET, listen_addr ? listen_addr : "127.0.0.1", &sa.sin_addr) != 1) {
		snprintf(err, errlen, "'%s' is not an IPv4 address", listen_addr);
		return NULL;
	}
	serve_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->db = store_open_ex(db_path, STORE_OPEN_READONLY, err, errlen);
	if (!s->db)
		goto fail;
	s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port,
				NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR, &sa,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVE_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_TIMEOUT_S,
				MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)SERVE_CONNECTIONS,
				MHD_OPTION_END);
	if (!s->d) {
		snprintf(err, errlen, "cannot listen on %s:%d (%s)", listen_addr ? listen_addr : "127.0.0.1",
			 port, errno ? strerror(errno) : "in use?");
		goto fail;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : port;
	return s;
fail:
	store_close(s->db);
	free(s);
	return NULL;
}

int serve_port(const serve_server *s)
{
	return s->port;
}

long serve_requests(const serve_server *s)
{
	return atomic_load(&((serve_server *)s)->requests);
}

void serve_stop(serve_server *s)
{
	if (!s)
		return;
	if (s->d)
		MHD_stop_daemon(s->d);
	store_close(s->db);
	free(s);
}

int serve_run(const char *db_path, const char *listen_addr, int port,
	      volatile sig_atomic_t *stop, FILE *log, char *err, size_t errlen)
{
	serve_server *s = serve_start(db_path, listen_addr, port, err, errlen);
	if (!s)
		return -1;
	if (log) {
		fprintf(log, "serving %s on http://%s:%d/ (Ctrl-C stops)\n", db_path,
			listen_addr ? listen_addr : "127.0.0.1", s->port);
		fflush(log);
	}
	while (!stop || !*stop) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	serve_stop(s);
	return 0;
}
