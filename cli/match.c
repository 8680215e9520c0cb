/* match.c: `sente match`, two players (models or GTP engines) against each
 * other, with Elo, LOS and SPRT, every game stored and resumable. */
#include "engine/game_desc.h"
#include "cli/match.h"

#include <assert.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "data/store.h"

static const char match_about[] =
	"Plays A against B and reports the Elo difference with a 95% interval,\n"
	"the likelihood of superiority and, with --sprt, a sequential test that\n"
	"stops as soon as it decides. A and B are each:\n"
	"  FILE                    a model file (.sente, or Leela Zero weights)\n"
	"  ID or model:ID          a model registered in --db (e.g. a run's checkpoints)\n"
	"  gtp:\"COMMAND\"           an external GTP engine, e.g.\n"
	"                          gtp:\"/usr/games/gnugo --mode gtp --level 1\"\n"
	"                          gtp:\"leelaz -g -w net.gz --noponder -v 400\"\n"
	"Colours alternate; each pair of games starts from the same opening with\n"
	"the colours swapped. Games of sente models share one evaluator per model.\n"
	"Every game is stored in --db with its SGF; running the same command again\n"
	"(same players and settings) resumes the match, playing only missing games.\n"
	"An engine that crashes, hangs, plays an illegal move or refuses a legal\n"
	"one loses that game (the reason is stored) and is restarted.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

void cli_match_settings_init(cli_match_settings *s)
{
	memset(s, 0, sizeof(*s));
	game_params gp = game_desc_by_name("go")->defaults;
	s->kind = gp.kind;
	s->size = -1;
	s->komi = NAN;
	s->o = match_options_default(&gp);
	s->o.book[0] = '\0';
	s->games = s->o.games;
	s->parallel = s->o.parallel;
	s->visits = s->o.visits;
	s->visits_b = 0;
	s->openings = s->max_moves = -1;
	s->db = "sente-matches.db";
}

/* --openings random:N|FILE (ptr: the settings). */
static int openings_arg(const cli_opt *o, const char *v, char *err, size_t errlen)
{
	cli_match_settings *s = o->ptr;
	long n;
	if (!strncmp(v, "random:", 7)) {
		if (!cli_parse_int(v + 7, 0, 1000, &n)) {
			snprintf(err, errlen, "--openings random:N takes N in 0..1000, got '%s'", v);
			return -1;
		}
		s->openings = n;
		s->o.book[0] = '\0';
		return 0;
	}
	struct stat st;
	if (stat(v, &st) != 0 || strlen(v) >= sizeof(s->o.book)) {
		snprintf(err, errlen, "--openings takes random:N or a book file; cannot read '%s'", v);
		return -1;
	}
	snprintf(s->o.book, sizeof(s->o.book), "%s", v);
	return 0;
}

/* --sprt elo0,elo1,alpha,beta (ptr: the match options). */
static int sprt_arg(const cli_opt *o, const char *v, char *err, size_t errlen)
{
	match_options *m = o->ptr;
	if (!elo_sprt_parse(v, &m->sprt_params)) {
		snprintf(err, errlen, "--sprt takes elo0,elo1,alpha,beta with elo0 < elo1 and "
			 "alpha, beta in (0, 0.5), e.g. 0,35,0.05,0.05; got '%s'", v);
		return -1;
	}
	m->sprt = true;
	return 0;
}

/* --sgf-dir DIR, a folder, made (with its parents) when missing (ptr: the
 * match options). */
static int sgf_dir_arg(const cli_opt *o, const char *v, char *err, size_t errlen)
{
	match_options *m = o->ptr;
	struct stat st;
	char path[sizeof(m->sgf_dir)];
	if (strlen(v) >= sizeof(m->sgf_dir) || !*v) {
		snprintf(err, errlen, "--sgf-dir: '%s' is not a folder name", v);
		return -1;
	}
	snprintf(path, sizeof(path), "%s", v);
	for (char *p = path + 1; *p; p++) /* each parent, then the folder */
		if (*p == '/') {
			*p = '\0';
			if (mkdir(path, 0777) != 0 && errno != EEXIST)
				break; /* the stat below says what is wrong */
			*p = '/';
		}
	mkdir(path, 0777);
	if (stat(v, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--sgf-dir: '%s' is not a folder and cannot be made (%s)", v,
			 strerror(errno));
		return -1;
	}
	snprintf(m->sgf_dir, sizeof(m->sgf_dir), "%s", v);
	return 0;
}

int cli_match_opts(cli_match_settings *s, bool with_visits_b, cli_opt *opts)
{
	const cli_opt shared[] = {
		CLI_OPT_INT("--games", NULL, &s->games, 1, 10000000, "N",
			    with_visits_b ? "games in the match" : "games per pair"),
		CLI_OPT_INT("--parallel", NULL, &s->parallel, 1, 256, "K", "games at once"),
		CLI_OPT_INT("--visits", NULL, &s->visits, 1, 10000000, "V", "sente visits per move"),
		CLI_OPT_INT("--visits-b", NULL, &s->visits_b, 1, 10000000, "V",
			    "B's visits when it differs from A's", .def = "A's"),
		CLI_OPT_REAL("--time", NULL, &s->o.move_seconds, 0.01, 3600, "T",
			     "seconds per move instead of visits (engines get time_settings 0 T 1)",
			     .def = ""),
		CLI_OPT_CALL("--game", NULL, &s->kind, cli_opt_game, "go|connect4", "which game",
			     .def = "the models', else go", .given = &s->game_given),
		CLI_OPT_INT("--size", NULL, &s->size, GO_MIN_SIZE, GO_MAX_SIZE, "S", "Go board",
			    .def = "the models', else 9"),
		CLI_OPT_REAL("--komi", NULL, &s->komi, -1000, 1000, "K", "Go komi, a multiple of 0.5",
			     .def = "7.5, the game's"),
		CLI_OPT_CALL("--openings", NULL, s, openings_arg, "random:N|FILE",
			     "N random opening moves per pair, or a book: one opening per line, moves "
			     "separated by spaces ('#' comments)",
			     .def = "random:4 on 9x9 and up, else random:2"),
		CLI_OPT_CALL("--sprt", NULL, &s->o, sprt_arg, "elo0,elo1,alpha,beta",
			     "stop when the SPRT decides (as Leela Zero's validation: 0,35,0.05,0.05)"),
		CLI_OPT_STRING("--db", NULL, &s->db, "FILE", "where games are stored"),
		CLI_OPT_CALL("--sgf-dir", NULL, &s->o, sgf_dir_arg, "DIR",
			     "also write each game's SGF into DIR (made when missing)"),
		CLI_OPT_REAL("--resign", NULL, &s->o.resign_pct, 0, 100, "PCT",
			     "sente resigns below PCT% winrate; 0 never"),
		CLI_OPT_REAL("--move-timeout", NULL, &s->o.move_timeout, 0.1, 86400, "S",
			     "an engine that takes longer for a move loses"),
		CLI_OPT_INT("--max-moves", NULL, &s->max_moves, 1, 100000, "N",
			    "scored as it stands after N moves", .def = "3 x points; 42 for Connect Four"),
		CLI_OPT_INT("--batch", NULL, &s->o.batch, 1, 4096, "N", "largest network batch"),
		CLI_OPT_INT("--nn-threads", NULL, &s->o.nn_threads, 1, 1024, "N",
			    "network compute threads", .def = "all cores"),
		CLI_OPT_INT("--seed", NULL, &s->o.seed, 0, 0x7fffffffL, "N", "openings and searches"),
		CLI_OPT_FLAG("--new", NULL, &s->o.fresh,
			     "start a new match even when this one can be resumed"),
		CLI_OPT_FLAG("--quiet", "-q", &s->quiet, "no line per game"),
	};
	int n = 0;
	for (int k = 0; k < CLI_N(shared); k++)
		if (with_visits_b || strcmp(shared[k].name, "--visits-b"))
			opts[n++] = shared[k];
	assert(n <= CLI_MATCH_OPTS);
	return n;
}

bool cli_match_finish(const char *cmd, cli_match_settings *s, const match_player *pl, int n)
{
	const match_player *first = NULL; /* the first model */
	for (int i = 0; i < n; i++) {
		if (!pl[i].has_game)
			continue;
		if (!first) {
			first = &pl[i];
			continue;
		}
		if (pl[i].game.kind != first->game.kind || pl[i].game.size != first->game.size) {
			cli_usage_error(cmd, "%s plays %s %dx%d, %s plays %s %dx%d", first->spec,
					game_kind_name(first->game.kind), first->game.size, first->game.size,
					pl[i].spec, game_kind_name(pl[i].game.kind), pl[i].game.size,
					pl[i].game.size);
			return false;
		}
	}
	if (first && !s->game_given)
		s->kind = first->game.kind;
	if (first && s->size <= 0 && first->game.kind == s->kind &&
	    game_desc_by_kind(s->kind)->has_size)
		s->size = first->game.size;
	const game_desc *desc = game_desc_by_kind(s->kind);
	/* Komi not given: the game's (7.5 for Go), as gtp, run and selfplay. */
	game_params gp = game_params_sized(s->kind, s->size > 0 ? (int)s->size : 9, s->komi);
	if (desc->has_size || desc->has_komi) {
		if (gp.komi * 2 != floor(gp.komi * 2)) {
			cli_usage_error(cmd, "--komi must be a multiple of 0.5, got '%g'", gp.komi);
			return false;
		}
	} else if (s->size > 0 || !isnan(s->komi)) {
		cli_usage_error(cmd, "--size and --komi are not for %s", desc->title);
		return false;
	}
	match_options d = match_options_default(&gp);
	match_options *o = &s->o;
	o->game = gp;
	o->games = (int)s->games;
	o->parallel = (int)s->parallel;
	o->visits = (int)s->visits;
	o->opening_moves = s->openings >= 0 ? (int)s->openings : d.opening_moves;
	o->max_moves = s->max_moves > 0 ? (int)s->max_moves : d.max_moves;
	o->stop = &stop_flag;
	progress_init(&s->prog, s->quiet ? NULL : stderr, 0, 0);
	o->progress = &s->prog;
	return true;
}

void cli_match_progress(void *ctx, const match_summary *s, const store_match_game *g)
{
	cli_match_settings *m = ctx;
	if (m->quiet)
		return;
	progress_clear(&m->prog);
	const char *res = g->result > 0 ? "B+" : g->result < 0 ? "W+" : "draw";
	int for_a = g->a_black ? g->result : -g->result;
	fprintf(stderr, "game %3d (A %s): %s, %s, %d moves | A %d-%d-%d %.1f%% Elo %+.0f [%+.0f, %+.0f] "
		"LOS %.0f%% | LLR %.2f [%.2f, %.2f]\n",
		g->game_no, g->a_black ? "black" : "white", for_a > 0 ? "A won" : for_a < 0 ? "B won" : res,
		g->reason, g->moves, s->wins, s->losses, s->draws, 100 * s->elo.score, s->elo.elo, s->elo.lo,
		s->elo.hi, 100 * s->elo.los, s->sprt.llr, s->sprt.lower, s->sprt.upper);
}

void cli_match_print(const match_player *a, const match_player *b, const match_summary *s,
		     const match_options *o)
{
	fprintf(stderr, "match %lld: A = %s, B = %s\n", (long long)s->match_id, a->spec, b->spec);
	fprintf(stderr, "  %d games (%d resumed, %d this session in %.0f s): A %d wins, %d losses, %d draws, "
		"score %.1f%%\n", s->games, s->resumed, s->games - s->resumed, s->seconds, s->wins, s->losses,
		s->draws, 100 * s->elo.score);
	fprintf(stderr, "  Elo difference A - B: %+.1f, 95%% interval [%+.1f, %+.1f] (+-%.1f), LOS %.1f%%\n",
		s->elo.elo, s->elo.lo, s->elo.hi, (s->elo.hi - s->elo.lo) / 2, 100 * s->elo.los);
	fprintf(stderr, "  Black won %d of %d\n", s->black_wins, s->games);
	if (o->sprt)
		fprintf(stderr, "  SPRT H0 %g, H1 %g, alpha %g, beta %g: LLR %.2f in [%.2f, %.2f]: %s\n",
			o->sprt_params.elo0, o->sprt_params.elo1, o->sprt_params.alpha, o->sprt_params.beta,
			s->sprt.llr, s->sprt.lower, s->sprt.upper,
			s->sprt.state == ELO_SPRT_H1 ? "H1 accepted (A is stronger)"
			: s->sprt.state == ELO_SPRT_H0 ? "H0 accepted (A is not stronger)" : "undecided");
	fprintf(stderr, "  engine faults %d (protocol errors %d), engine restarts %d; status %s\n",
		s->engine_faults, s->protocol_errors, s->restarts, s->status);
}

int cli_match(int argc, char **argv)
{
	cli_match_settings s;
	cli_match_settings_init(&s);
	cli_opt opts[CLI_MATCH_OPTS];
	const char *pos[2] = { NULL, NULL };
	int npos = 0;
	const cli_spec spec = {
		.cmd = "match", .usage = "A B [options]", .about = match_about,
		.opts = opts, .n_opts = cli_match_opts(&s, true, opts),
		.after = "The last line on stdout is the result as JSON.\n",
		.pos = pos, .pos_max = 2, .pos_n = &npos,
		.pos_extra = "two players are wanted, '%s' is a third",
	};
	int rc;
	if (!cli_opt_parse(&spec, argc, argv, &rc))
		return rc;
	if (npos < 2)
		return cli_usage_error("match", "give two players, A and B");
	char err[1024];
	store *db = store_open(s.db, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "sente match: %s\n", err);
		return 1;
	}
	rc = 2;
	match_player pl[2];
	if (match_player_parse(pos[0], db, &pl[0], err, sizeof(err)) != 0 ||
	    match_player_parse(pos[1], db, &pl[1], err, sizeof(err)) != 0) {
		cli_usage_error("match", "%s", err);
		goto out;
	}
	if (!cli_match_finish("match", &s, pl, 2))
		goto out;
	match_player a = pl[0], b = pl[1];
	if (s.visits_b > 0)
		b.visits = (int)s.visits_b;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!s.quiet)
		fprintf(stderr, "sente match: A = %s, B = %s, %d games, %d at once, %s\n", a.spec, b.spec,
			s.o.games, s.o.parallel, s.db);
	match_summary sum;
	rc = 1;
	int r = match_run(db, &a, &b, &s.o, cli_match_progress, &s, &sum, err, sizeof(err));
	progress_clear(&s.prog);
	if (r != 0) {
		fprintf(stderr, "sente match: %s\n", err);
		goto out;
	}
	cli_match_print(&a, &b, &sum, &s.o);
	printf("{\"match\":%lld,\"games\":%d,\"wins\":%d,\"losses\":%d,\"draws\":%d,\"score\":%.4f,"
	       "\"elo\":%.1f,\"elo_lo\":%.1f,\"elo_hi\":%.1f,\"los\":%.4f,\"llr\":%.3f,\"llr_lower\":%.3f,"
	       "\"llr_upper\":%.3f,\"resumed\":%d,\"engine_faults\":%d,\"protocol_errors\":%d,"
	       "\"restarts\":%d,\"status\":\"%s\"}\n",
	       (long long)sum.match_id, sum.games, sum.wins, sum.losses, sum.draws, sum.elo.score, sum.elo.elo,
	       sum.elo.lo, sum.elo.hi, sum.elo.los, sum.sprt.llr, sum.sprt.lower, sum.sprt.upper, sum.resumed,
	       sum.engine_faults, sum.protocol_errors, sum.restarts, sum.status);
	rc = stop_flag ? 1 : 0;
out:
	store_close(db);
	return rc;
}
