/* selfplay.c: `sente selfplay`, self-play games into the store. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "data/store.h"
#include "selfplay/selfplay.h"

static const char selfplay_help[] =
	"usage: sente selfplay --db FILE [options]\n"
	"\n"
	"Plays self-play games, many at once sharing one network evaluator, and\n"
	"stores each finished game in the database in its own transaction. The\n"
	"model is -w FILE, else the newest model registered in the database (a\n"
	"newer one is taken up between games), else a uniform policy. Ctrl-C\n"
	"stops at once; finished games are kept, unfinished ones dropped.\n"
	"\n"
	"options:\n"
	"  --db FILE               the run's database (created when missing)\n"
	"  -w, --weights FILE      model to play with (no pick-up of newer ones)\n"
	"  --games N               stop after N games\n"
	"  --minutes M             stop after M minutes (default: until Ctrl-C)\n"
	"  --game go|connect4      (default: the model's game, else connect4)\n"
	"  --size N, --komi K      Go board and komi (default 9, 7)\n"
	"  --parallel-games K      games at once, one thread each (default 16)\n"
	"  --visits V              full search visits, recorded (default 200)\n"
	"  --cheap-visits V        cheap search visits, not recorded; 0: every move\n"
	"                          gets the full search (default 40)\n"
	"  --full-fraction F       chance of a full search per move (default 0.25)\n"
	"  --temperature-moves N   opening moves played at temperature 1\n"
	"  --resign PCT            resign below at most PCT% winrate; 0 never\n"
	"                          (default 5). The threshold in use is the one\n"
	"                          that would have resigned at most 5% of the\n"
	"                          latest no-resign games falsely; none before 50\n"
	"                          such games, none in the opening, and only after\n"
	"                          three searches in a row below it\n"
	"  --no-resign-fraction F  games that never resign, to measure false\n"
	"                          resignations (default 0.1)\n"
	"  -b, --batch N           largest network batch (default 16)\n"
	"  --nn-threads N          network compute threads (default: all cores)\n"
	"  --backend B             auto, cpu or cuda (default auto: CUDA when a\n"
	"                          device is present, else the CPU)\n"
	"  --gpus LIST             CUDA devices, e.g. 0,1 (default 0)\n"
	"  --precision P           fp32/bf16/int8 on the CPU, fp16/fp32 on CUDA\n"
	"                          (default fp32 on the CPU, fp16 on CUDA)\n"
	"  --worker NAME           name stored with each game (default host-pid)\n"
	"  -s, --seed N            random seed (default: from the clock)\n"
	"  --json                  progress as JSON lines on stdout\n"
	"  -q, --quiet             no progress on stderr\n";

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

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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
	if (c->follow && mono() >= c->next_poll) {
		c->next_poll = mono() + 10;
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
	if (cli_wants_help(argc, argv)) {
		fputs(selfplay_help, stdout);
		return 0;
	}
	const char *db_path = NULL, *weights = NULL, *worker = NULL;
	long games = 0, size = 9, n;
	double minutes = 0, komi = 7, d;
	bool game_given = false, json = false, quiet = false;
	game_params gp = game_params_default(GAME_KIND_CONNECT4);
	selfplay_options o = selfplay_options_default(&gp);
	o.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	bool temp_given = false;
	int r;
	char berr[256];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define FLAG(s) (!strcmp(a, s) && v && (i++, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) ? 1 : (cli_usage_error("selfplay", "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) (cli_parse_double(v, &d) && d >= (lo) && d <= (hi) ? 1 : (cli_usage_error("selfplay", "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
		if (FLAG("--db")) {
			db_path = v;
		} else if (FLAG("-w") || FLAG("--weights")) {
			weights = v;
		} else if (FLAG("--games")) {
			if (!INT(1, 1000000000)) return 2;
			games = n;
		} else if (FLAG("--minutes")) {
			if (!REAL(0.001, 1e7)) return 2;
			minutes = d;
		} else if (FLAG("--game")) {
			if (!game_kind_from_name(v, &gp.kind))
				return cli_usage_error("selfplay", "unknown game '%s' (go or connect4)", v);
			game_given = true;
		} else if (FLAG("--size")) {
			if (!INT(GO_MIN_SIZE, GO_MAX_SIZE)) return 2;
			size = n;
		} else if (FLAG("--komi")) {
			if (!REAL(-1000, 1000)) return 2;
			komi = d;
		} else if (FLAG("--parallel-games")) {
			if (!INT(1, 1024)) return 2;
			o.parallel_games = (int)n;
		} else if (FLAG("--visits")) {
			if (!INT(1, 1000000)) return 2;
			o.visits = (int)n;
		} else if (FLAG("--cheap-visits")) {
			if (!INT(0, 1000000)) return 2;
			o.cheap_visits = (int)n;
		} else if (FLAG("--full-fraction")) {
			if (!REAL(0, 1)) return 2;
			o.full_fraction = d;
		} else if (FLAG("--temperature-moves")) {
			if (!INT(0, 10000)) return 2;
			o.temperature_moves = (int)n;
			temp_given = true;
		} else if (FLAG("--resign")) {
			if (!REAL(0, 100)) return 2;
			o.resign_pct = (float)d;
		} else if (FLAG("--no-resign-fraction")) {
			if (!REAL(0, 1)) return 2;
			o.no_resign_fraction = d;
		} else if (FLAG("-b") || FLAG("--batch")) {
			if (!INT(1, 4096)) return 2;
			o.batch = (int)n;
		} else if (FLAG("--nn-threads")) {
			if (!INT(1, 1024)) return 2;
			o.nn.threads = (int)n;
		} else if (v && (r = nn_backend_parse_flag(a, v, &o.nn, berr, sizeof(berr))) != 0) {
			if (r < 0)
				return cli_usage_error("selfplay", "%s", berr);
			i++;
		} else if (FLAG("--worker")) {
			worker = v;
		} else if (FLAG("-s") || FLAG("--seed")) {
			if (!INT(0, 0x7fffffffL)) return 2;
			o.seed = (uint64_t)n;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else {
			return cli_usage_error("selfplay", "unknown or incomplete option '%s'", a);
		}
#undef FLAG
#undef INT
#undef REAL
	}
	if (!db_path)
		return cli_usage_error("selfplay", "--db FILE is required");

	char err[512], file[4096];
	int rc = 1;
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
	c.next_poll = mono() + 10;
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
