/* serve.c: `sente serve`: its options, then serve_run (serve/serve.h), the
 * run's dashboard over HTTP until Ctrl-C. */
#include <signal.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "serve/serve.h"

static const char serve_about[] =
	"Serves the dashboard of the run in DIR over HTTP: loss, strength,\n"
	"throughput and time charts that update while `sente run` goes on, the\n"
	"models (to download), the latest games move by move, and the same data\n"
	"as JSON (/api/run, /api/metrics, /api/metric?name=N, /api/models,\n"
	"/api/games?limit=N, /api/game?id=N; see README). The database is only\n"
	"read. It listens on 127.0.0.1: other machines cannot reach it unless\n"
	"--listen names another address (0.0.0.0: every interface; the data is\n"
	"then readable by anyone who can reach the port).\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

int cli_serve(int argc, char **argv)
{
	char dir[4096] = "";
	long port = 8080;
	const char *listen = "127.0.0.1";
	bool dir_given = false;
	const cli_opt opts[] = {
		CLI_OPT_BUF("--dir", NULL, dir, "DIR", "the run's folder (its sente.db is served)",
			    .given = &dir_given),
		CLI_OPT_INT("--port", "-p", &port, 0, 65535, "P", "TCP port (0: any free one)"),
		CLI_OPT_STRING("--listen", NULL, &listen, "ADDR",
			       "IPv4 address to listen on (0.0.0.0: all interfaces)"),
	};
	const cli_spec spec = { .cmd = "serve", .usage = "--dir DIR [--port P] [--listen ADDR]",
				.about = serve_about, .opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (!dir_given)
		return cli_usage_error("serve", "expected --dir DIR");
	char path[4200], err[1024];
	snprintf(path, sizeof(path), "%s/sente.db", dir);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	if (serve_run(path, listen, (int)port, &stop_flag, stderr, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente serve: %s\n", err);
		return 1;
	}
	return 0;
}
