/* selfplay.c: `sente selfplay`, self-play games into the store. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "engine/clock.h"
#include "data/store.h"
#include "selfplay/selfplay.h"

static const char selfplay_about[] =
	"Plays self-play games, many at once sharing one network evaluator, and\n"
	"stores each finished game in the database in its own transaction. The\n"
	"model is -w FILE, else the newest model registered in the database (a\n"
	"newer one is taken up between games), else a uniform policy. Ctrl-C\n"
	"stops at once; finished games are kept, unfinished ones dropped.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

typedef struct sp_ctx {
	store *db;            /* where games go */
	selfplay *sp;         /* to swap models */
	char worker[128];     /* stored with each game */
	bool follow;          /* pick up newer models from the store */
	int64_t model_id;     /* the model in use */
	double next_poll;     /* when to look for a newer model */
	game_params game;     /* what is played */
	int failures;         /* store writes that failed */
} sp_ctx;

/* Loads model `id` from the store and hands it to self-play. */
static int take_model(sp_ctx *c, int64_t id, const char *file, char *err, size_t errlen)
{
	nn_expect want = { .game = (int)c->game.kind };
	nn_net *net = nn_net_load_any(file, &want, err, errlen);
	if (!net)
		return -1;
	int rc = selfplay_set_model(c->sp, net, id, err, errlen);
	nn_net_free(net);
	if (rc == 0)
		c->model_id = id;
	return rc;
}

static int on_game(void *ctx, const game_record *r, int64_t model_id)
{
	sp_ctx *c = ctx;
	int64_t id;
	if (store_add_game(c->db, model_id, c->worker, r, &id) != 0) {
		fprintf(stderr, "sente selfplay: storing a game failed: %s\n", store_errmsg(c->db));
		return ++c->failures >= 3; /* give up after repeated failures */
	}
	if (c->follow && clock_now() >= c->next_poll) {
		c->next_poll = clock_now() + 10;
		int64_t latest, step;
		char file[4096], err[512];
		if (store_latest_model(c->db, &latest, file, sizeof(file), &step) == 1 &&
		    latest != c->model_id) {
			if (take_model(c, latest, file, err, sizeof(err)) == 0)
				fprintf(stderr, "sente selfplay: now playing with model %lld (%s)\n",
					(long long)latest, file);
			else
				fprintf(stderr, "sente selfplay: model %lld not taken: %s\n",
					(long long)latest, err);
		}
	}
	return 0;
}

int cli_selfplay(int argc, char **argv)
{
	const char *db_path = NULL, *weights = NULL, *worker = NULL;
	long games = 0, size = 9;
	double minutes = 0, komi = 7;
	bool game_given = false, json = false, quiet = false, temp_given = false;
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = selfplay_options_default(&gp);
	o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	const cli_opt opts[] = {
		CLI_OPT_STRING("--db", NULL, &db_path, "FILE", "the run's database (created when missing)"),
		CLI_OPT_STRING("--weights", "-w", &weights, "FILE",
			       "model to play with (no pick-up of newer ones)"),
		CLI_OPT_INT("--games", NULL, &games, 1, 1000000000, "N", "stop after N games", .def = ""),
		CLI_OPT_REAL("--minutes", NULL, &minutes, 0.001, 1e7, "M", "stop after M minutes",
			     .def = "until Ctrl-C"),
		CLI_OPT_CALL("--game", NULL, &gp.kind, cli_opt_game, "go|connect4", "which game",
			     .given = &game_given, .def = "the model's game, else connect4"),
		CLI_OPT_INT("--size", NULL, &size, GO_MIN_SIZE, GO_MAX_SIZE, "N", "Go board"),
		CLI_OPT_REAL("--komi", NULL, &komi, -1000, 1000, "K", "Go komi"),
		CLI_OPT_INT("--parallel-games", NULL, &o.parallel_games, 1, 1024, "K",
			    "games at once, one thread each"),
		CLI_OPT_INT("--visits", NULL, &o.visits, 1, 1000000, "V", "full search visits, recorded"),
		CLI_OPT_INT("--cheap-visits", NULL, &o.cheap_visits, 0, 1000000, "V",
			    "cheap search visits, not recorded; 0: every move gets the full search"),
		CLI_OPT_REAL("--full-fraction", NULL, &o.full_fraction, 0, 1, "F",
			     "chance of a full search per move"),
		CLI_OPT_INT("--temperature-moves", NULL, &o.temperature_moves, 0, 10000, "N",
			    "opening moves played at temperature 1", .given = &temp_given,
			    .def = "8 for Connect Four, the board size for Go"),
		CLI_OPT_REAL("--resign", NULL, &o.resign_pct, 0, 100, "PCT",
			     "resign below at most PCT% winrate; 0 never. The threshold in use is the "
			     "one that would have resigned at most 5% of the latest no-resign games "
			     "falsely; none before 50 such games, none in the opening, and only after "
			     "three searches in a row below it"),
		CLI_OPT_REAL("--no-resign-fraction", NULL, &o.no_resign_fraction, 0, 1, "F",
			     "games that never resign, to measure false resignations"),
		CLI_OPT_INT("--batch", "-b", &o.batch, 1, 4096, "N", "largest network batch"),
		CLI_OPT_INT("--nn-threads", NULL, &o.nn.threads, 1, 1024, "N", "network compute threads",
			    .def = "all cores"),
		CLI_OPT_NN_BACKEND(&o.nn, "auto: CUDA when a device is present, else the CPU",
				   "auto, cpu or cuda"),
		CLI_OPT_NN_GPUS(&o.nn, "0", "CUDA devices, e.g. 0,1"),
		CLI_OPT_NN_PRECISION(&o.nn, "fp32 on the CPU, fp16 on CUDA",
				     "fp32/bf16/int8 on the CPU, fp16/fp32 on CUDA"),
		CLI_OPT_STRING("--worker", NULL, &worker, "NAME", "name stored with each game",
			       .def = "host-pid"),
		CLI_OPT_INT("--seed", "-s", &o.seed, 0, 0x7fffffffL, "N", "random seed",
			    .def = "from the clock"),
		CLI_OPT_FLAG("--json", NULL, &json, "progress as JSON lines on stdout"),
		CLI_OPT_FLAG("--quiet", "-q", &quiet, "no progress on stderr"),
	};
	const cli_spec spec = { .cmd = "selfplay", .usage = "--db FILE [options]",
				.about = selfplay_about, .opts = opts, .n_opts = CLI_N(opts) };
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (!db_path)
		return cli_usage_error("selfplay", "--db FILE is required");

	char err[512], file[4096];
	rc = 1;
	sp_ctx c = { 0 };
	nn_net *net = NULL;
	c.db = store_open(db_path, err, sizeof(err));
	if (!c.db) {
		fprintf(stderr, "sente selfplay: %s\n", err);
		return 1;
	}
	int64_t model_id = 0, step = 0;
	if (weights) {
		net = nn_net_load_any(weights, NULL, err, sizeof(err));
		if (!net) {
			fprintf(stderr, "sente selfplay: %s\n", err);
			goto out;
		}
	} else if (store_latest_model(c.db, &model_id, file, sizeof(file), &step) == 1) {
		net = nn_net_load_any(file, NULL, err, sizeof(err));
		if (!net) {
			fprintf(stderr, "sente selfplay: model %lld: %s\n", (long long)model_id, err);
			goto out;
		}
		c.follow = true;
	} else {
		c.follow = true; /* a model may be registered later */
	}
	if (net) {
		if (game_given && net->arch.game != gp.kind) {
			fprintf(stderr, "sente selfplay: the model plays %s, not %s\n",
				game_kind_name(net->arch.game), game_kind_name(gp.kind));
			goto out;
		}
		gp.kind = net->arch.game;
		if (gp.kind == GAME_KIND_GO)
			size = net->arch.board_w;
	}
	if (gp.kind == GAME_KIND_GO) {
		gp.size = (int)size;
		gp.komi = komi;
	} else {
		gp = game_params_default(GAME_KIND_CONNECT4);
	}
	o.game = gp;
	if (!temp_given)
		o.temperature_moves = selfplay_options_default(&gp).temperature_moves;
	o.json = json;
	o.quiet = quiet;
	c.game = gp;
	if (worker)
		snprintf(c.worker, sizeof(c.worker), "%s", worker);
	else {
		char host[64] = "host";
		gethostname(host, sizeof(host) - 1);
		snprintf(c.worker, sizeof(c.worker), "%s-%d", host, (int)getpid());
	}
	c.sp = selfplay_new(&o, err, sizeof(err));
	if (!c.sp) {
		fprintf(stderr, "sente selfplay: %s\n", err);
		goto out;
	}
	if (net && selfplay_set_model(c.sp, net, model_id, err, sizeof(err)) != 0) {
		fprintf(stderr, "sente selfplay: %s\n", err);
		goto out;
	}
	c.model_id = model_id;
	c.next_poll = clock_now() + 10;
	if (!quiet) {
		char what[256];
		selfplay_backend(c.sp, what, sizeof(what));
		fprintf(stderr, "sente selfplay: %s, %d games at once, %d/%d visits, backend %s, %s\n",
			game_kind_name(gp.kind), o.parallel_games, o.visits, o.cheap_visits,
			net ? what : "none",
			net ? (weights ? weights : file) : "no model: uniform policy");
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	int64_t done = selfplay_run(c.sp, games, minutes * 60, on_game, &c, &stop_flag);
	selfplay_stats st;
	selfplay_get_stats(c.sp, &st);
	printf("{\"selfplay\":\"done\",\"games\":%lld,\"positions\":%lld,\"moves\":%lld,"
	       "\"seconds\":%.1f,\"first_wins\":%lld,\"second_wins\":%lld,\"draws\":%lld,"
	       "\"resigned\":%lld,\"no_resign_games\":%lld,\"would_resign\":%lld,"
	       "\"false_resign\":%lld,\"evals\":%llu,\"mean_batch\":%.2f}\n",
	       (long long)st.games, (long long)st.positions, (long long)st.moves, st.seconds,
	       (long long)st.wins[0], (long long)st.wins[1], (long long)st.wins[2],
	       (long long)st.resigned, (long long)st.no_resign_games, (long long)st.would_resign,
	       (long long)st.false_resign, (unsigned long long)st.evals,
	       st.batches ? (double)st.evals / (double)st.batches : 0.0);
	rc = done >= 0 && c.failures == 0 ? 0 : 1;
out:
	selfplay_free(c.sp);
	nn_net_free(net);
	store_close(c.db);
	return rc;
}
