/* match.c: `sente match`, two players (models or GTP engines) against each
 * other, with Elo, LOS and SPRT, every game stored and resumable. */
#include "cli/match.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "data/store.h"

static const char match_help[] =
	"usage: sente match A B [options]\n"
	"\n"
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
	"one loses that game (the reason is stored) and is restarted.\n"
	"\n"
	"options:\n"
	"  --games N               games in the match (default 100)\n"
	"  --parallel K            games at once (default 2)\n"
	"  --visits V              sente visits per move (default 100)\n"
	"  --visits-b V            B's visits when it differs from A's\n"
	"  --time T                seconds per move instead of visits (engines get\n"
	"                          time_settings 0 T 1)\n"
	"  --game go|connect4      (default go)\n"
	"  --size S, --komi K      Go board and komi (default 9, 7)\n"
	"  --openings random:N|FILE  N random opening moves per pair (default 4 on\n"
	"                          9x9 and up), or a book: one opening per line, moves\n"
	"                          separated by spaces ('#' comments)\n"
	"  --sprt elo0,elo1,alpha,beta  stop when the SPRT decides (as Leela Zero's\n"
	"                          validation: 0,35,0.05,0.05)\n"
	"  --db FILE               where games are stored (default sente-matches.db)\n"
	"  --sgf-dir DIR           also write each game's SGF into DIR\n"
	"  --resign PCT            sente resigns below PCT%% winrate; 0 never (default 5)\n"
	"  --move-timeout S        an engine that takes longer for a move loses (default 120)\n"
	"  --max-moves N           scored as it stands after N moves (default 3 x points)\n"
	"  --batch N               largest network batch (default 32)\n"
	"  --nn-threads N          network compute threads (default: all cores)\n"
	"  --seed N                openings and searches (default 1)\n"
	"  --new                   start a new match even when this one can be resumed\n"
	"  -q, --quiet             no line per game\n"
	"\n"
	"The last line on stdout is the result as JSON.\n";

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = 1; (void)sig; }

void cli_match_settings_init(cli_match_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->kind = GAME_KIND_GO;
	s->size = -1;
	s->komi = NAN;
	s->games = s->parallel = s->visits = s->visits_b = s->openings = s->max_moves = -1;
	s->db = "sente-matches.db";
	game_params gp = game_params_default(GAME_KIND_GO);
	s->o = match_options_default(&gp);
	s->o.book[0] = '\0';
}

int cli_match_option(const char *cmd, int argc, char **argv, int *i, cli_match_settings *s)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	long n;
	double d;
#define FLAG(x) (!strcmp(a, x) && v && (++*i, 1))
#define INT(lo, hi) (cli_parse_int(v, lo, hi, &n) ? 1 : (cli_usage_error(cmd, "%s takes an integer %ld..%ld, got '%s'", a, (long)(lo), (long)(hi), v), 0))
#define REAL(lo, hi) (cli_parse_double(v, &d) && d >= (lo) && d <= (hi) ? 1 : (cli_usage_error(cmd, "%s takes a number %g..%g, got '%s'", a, (double)(lo), (double)(hi), v), 0))
	if (FLAG("--games")) {
		if (!INT(1, 10000000)) return -1;
		s->games = n;
	} else if (FLAG("--parallel")) {
		if (!INT(1, 256)) return -1;
		s->parallel = n;
	} else if (FLAG("--visits")) {
		if (!INT(1, 10000000)) return -1;
		s->visits = n;
	} else if (FLAG("--visits-b")) {
		if (!INT(1, 10000000)) return -1;
		s->visits_b = n;
	} else if (FLAG("--time")) {
		if (!REAL(0.01, 3600)) return -1;
		s->o.move_seconds = d;
	} else if (FLAG("--game")) {
		if (!game_kind_from_name(v, &s->kind)) {
			cli_usage_error(cmd, "unknown game '%s' (go or connect4)", v);
			return -1;
		}
	} else if (FLAG("--size")) {
		if (!INT(GO_MIN_SIZE, GO_MAX_SIZE)) return -1;
		s->size = n;
	} else if (FLAG("--komi")) {
		if (!REAL(-1000, 1000)) return -1;
		if (d * 2 != floor(d * 2)) {
			cli_usage_error(cmd, "--komi must be a multiple of 0.5, got '%s'", v);
			return -1;
		}
		s->komi = d;
	} else if (FLAG("--openings")) {
		if (!strncmp(v, "random:", 7)) {
			if (!cli_parse_int(v + 7, 0, 1000, &n)) {
				cli_usage_error(cmd, "--openings random:N takes N in 0..1000, got '%s'", v);
				return -1;
			}
			s->openings = n;
			s->o.book[0] = '\0';
		} else {
			struct stat st;
			if (stat(v, &st) != 0 || strlen(v) >= sizeof(s->o.book)) {
				cli_usage_error(cmd, "--openings takes random:N or a book file; cannot read '%s'", v);
				return -1;
			}
			snprintf(s->o.book, sizeof(s->o.book), "%s", v);
		}
	} else if (FLAG("--sprt")) {
		if (!elo_sprt_parse(v, &s->o.sprt_params)) {
			cli_usage_error(cmd, "--sprt takes elo0,elo1,alpha,beta with elo0 < elo1 and "
				       "alpha, beta in (0, 0.5), e.g. 0,35,0.05,0.05; got '%s'", v);
			return -1;
		}
		s->o.sprt = true;
	} else if (FLAG("--db")) {
		s->db = v;
	} else if (FLAG("--sgf-dir")) {
		struct stat st;
		if (stat(v, &st) != 0 || !S_ISDIR(st.st_mode) || strlen(v) >= sizeof(s->o.sgf_dir)) {
			cli_usage_error(cmd, "--sgf-dir: '%s' is not a folder", v);
			return -1;
		}
		snprintf(s->o.sgf_dir, sizeof(s->o.sgf_dir), "%s", v);
	} else if (FLAG("--resign")) {
		if (!REAL(0, 100)) return -1;
		s->o.resign_pct = (float)d;
	} else if (FLAG("--move-timeout")) {
		if (!REAL(0.1, 86400)) return -1;
		s->o.move_timeout = d;
	} else if (FLAG("--max-moves")) {
		if (!INT(1, 100000)) return -1;
		s->max_moves = n;
	} else if (FLAG("--batch")) {
		if (!INT(1, 4096)) return -1;
		s->o.batch = (int)n;
	} else if (FLAG("--nn-threads")) {
		if (!INT(1, 1024)) return -1;
		s->o.nn_threads = (int)n;
	} else if (FLAG("--seed")) {
		if (!INT(0, 0x7fffffffL)) return -1;
		s->o.seed = (uint64_t)n;
	} else if (!strcmp(a, "--new")) {
		s->o.fresh = true;
	} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
		s->quiet = true;
	} else {
		return 0;
	}
#undef FLAG
#undef INT
#undef REAL
	return 1;
}

bool cli_match_finish(const char *cmd, cli_match_settings *s)
{
	game_params gp = game_params_default(s->kind);
	if (s->kind == GAME_KIND_GO) {
		gp.size = s->size > 0 ? (int)s->size : 9;
		gp.komi = isnan(s->komi) ? 7 : s->komi;
	} else if (s->size > 0 || !isnan(s->komi)) {
		cli_usage_error(cmd, "--size and --komi are for Go");
		return false;
	}
	match_options d = match_options_default(&gp);
	match_options *o = &s->o;
	o->game = gp;
	o->games = s->games > 0 ? (int)s->games : d.games;
	o->parallel = s->parallel > 0 ? (int)s->parallel : d.parallel;
	o->visits = s->visits > 0 ? (int)s->visits : d.visits;
	o->opening_moves = s->openings >= 0 ? (int)s->openings : d.opening_moves;
	o->max_moves = s->max_moves > 0 ? (int)s->max_moves : d.max_moves;
	o->stop = &stop_flag;
	return true;
}

void cli_match_progress(void *ctx, const match_summary *s, const store_match_game *g)
{
	bool quiet = ctx && *(bool *)ctx;
	if (quiet)
		return;
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
	if (cli_wants_help(argc, argv)) {
		fputs(match_help, stdout);
		return 0;
	}
	cli_match_settings s;
	cli_match_settings_init(&s);
	const char *pos[2] = { NULL, NULL };
	int npos = 0;
	for (int i = 1; i < argc; i++) {
		int r = cli_match_option("match", argc, argv, &i, &s);
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("match", "unknown or incomplete option '%s'", argv[i]);
		if (npos == 2)
			return cli_usage_error("match", "two players are wanted, '%s' is a third", argv[i]);
		pos[npos++] = argv[i];
	}
	if (npos < 2)
		return cli_usage_error("match", "give two players, A and B");
	if (!cli_match_finish("match", &s))
		return 2;
	char err[1024];
	store *db = store_open(s.db, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "sente match: %s\n", err);
		return 1;
	}
	int rc = 2;
	match_player a, b;
	if (match_player_parse(pos[0], db, &a, err, sizeof(err)) != 0 ||
	    match_player_parse(pos[1], db, &b, err, sizeof(err)) != 0) {
		cli_usage_error("match", "%s", err);
		goto out;
	}
	if (s.visits_b > 0)
		b.visits = (int)s.visits_b;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!s.quiet)
		fprintf(stderr, "sente match: A = %s, B = %s, %d games, %d at once, %s\n", a.spec, b.spec,
			s.o.games, s.o.parallel, s.db);
	match_summary sum;
	rc = 1;
	int r = match_run(db, &a, &b, &s.o, cli_match_progress, &s.quiet, &sum, err, sizeof(err));
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
