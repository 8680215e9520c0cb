/* Matches: two small sente models (stored games, valid SGF, alternating
 * colours, varied openings), resumption in-process and after kill -9,
 * engines that misbehave (illegal move, crash, hang, garbage, resignation),
 * GNU Go on 9x9 when installed, and the match and tournament commands. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/store.h"
#include "engine/sgf.h"
#include "match/match.h"
#include "nn/net.h"

static char dir[64], db_path[128], net_a[128], net_b[128], net_c[128];

/* A tiny 9x9 Go network with random weights, saved with a learner step. */
static void make_net(const char *path, uint64_t seed, uint64_t step)
{
	char err[256];
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	nn_arch a = nn_arch_default(&gp, 1, 8);
	nn_net *net = nn_net_new(&a, err, sizeof(err));
	cr_assert(net, "%s", err);
	nn_net_init_random(net, seed);
	net->meta.train_step = step;
	cr_assert_eq(nn_net_save(net, path, err, sizeof(err)), 0, "%s", err);
	nn_net_free(net);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sente-match-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(db_path, sizeof(db_path), "%s/m.db", dir);
	snprintf(net_a, sizeof(net_a), "%s/a.sente", dir);
	snprintf(net_b, sizeof(net_b), "%s/b.sente", dir);
	snprintf(net_c, sizeof(net_c), "%s/c.sente", dir);
	make_net(net_a, 1, 100);
	make_net(net_b, 2, 200);
	make_net(net_c, 3, 300);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(match, .init = setup, .fini = teardown, .timeout = 120);

static match_options small_options(int games)
{
	game_params gp = { .kind = GAME_KIND_GO, .size = 9, .komi = 7 };
	match_options o = match_options_default(&gp);
	o.games = games;
	o.parallel = 2;
	o.visits = 6;
	o.max_moves = 120;
	o.nn_threads = 1;
	o.resign_pct = 0;
	return o;
}

typedef struct rows {
	int n;              /* games seen */
	int a_black[16];    /* per game number */
	int moves[16];
	int result[16];
	char first[16][32]; /* first moves of the SGF, for opening variety */
	char reason[16][128];
	double created[16];
	double score[16];   /* Black's score as stored */
} rows;

/* Checks each stored game's SGF: it parses, replays, and has the names. */
static int check_row(void *ctx, const store_match_game *g)
{
	rows *r = ctx;
	cr_assert(g->game_no >= 0 && g->game_no < 16);
	int k = g->game_no;
	r->n++;
	r->a_black[k] = g->a_black;
	r->moves[k] = g->moves;
	r->result[k] = g->result;
	r->created[k] = g->created;
	r->score[k] = g->score;
	snprintf(r->reason[k], sizeof(r->reason[k]), "%s", g->reason);
	cr_assert(g->sgf[0], "game %d has no SGF", k);
	sgf_record rec;
	char err[256];
	cr_assert_eq(sgf_read(g->sgf, strlen(g->sgf), &rec, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rec.size, 9);
	cr_assert_eq(rec.komi, 7);
	cr_assert_eq(rec.n_moves, g->moves, "SGF has %d moves, row says %d", rec.n_moves, g->moves);
	cr_assert(rec.pb[0] && rec.pw[0]);
	cr_assert(rec.re[0] == (g->result > 0 ? 'B' : g->result < 0 ? 'W' : '0'), "RE %s, result %d",
		  rec.re, g->result);
	static go_board b;
	cr_assert_eq(sgf_replay(&rec, &b, -1, err, sizeof(err)), 0, "%s", err);
	char *p = r->first[k];
	for (int i = 0; i < 4 && i < rec.n_moves; i++)
		p += sprintf(p, "%d,", rec.moves[i].point);
	sgf_record_free(&rec);
	return 0;
}

Test(match, two_small_models)
{
	char err[512];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	match_player a, b;
	cr_assert_eq(match_player_parse(net_a, db, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(match_player_parse(net_b, db, &b, err, sizeof(err)), 0, "%s", err);
	match_options o = small_options(4);
	match_summary s;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.games, 4);
	cr_assert_eq(s.wins + s.losses + s.draws, 4);
	cr_assert_eq(s.resumed, 0);
	cr_assert_str_eq(s.status, "done");
	cr_assert_eq(s.engine_faults, 0);
	rows r = { 0 };
	cr_assert_eq(store_match_games(db, s.match_id, check_row, &r), 4);
	/* Colours alternate; a pair shares its opening, pairs differ. */
	for (int k = 0; k < 4; k++)
		cr_assert_eq(r.a_black[k], k % 2 == 0);
	cr_assert_str_eq(r.first[0], r.first[1]);
	cr_assert_str_neq(r.first[0], r.first[2]);
	/* Elo agrees with the tally. */
	elo_estimate e = elo_estimate_wld(s.wins, s.losses, s.draws);
	cr_assert_float_eq(s.elo.elo, e.elo, 1e-9);
	store_close(db);
}

Test(match, resumes_in_process)
{
	char err[512];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	match_player a, b;
	cr_assert_eq(match_player_parse(net_a, db, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(match_player_parse(net_b, db, &b, err, sizeof(err)), 0, "%s", err);
	match_options o = small_options(2);
	match_summary s1, s2;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s1, err, sizeof(err)), 0, "%s", err);
	rows r1 = { 0 };
	store_match_games(db, s1.match_id, check_row, &r1);
	o.games = 4;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s2, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s2.match_id, s1.match_id);
	cr_assert_eq(s2.resumed, 2);
	cr_assert_eq(s2.games, 4);
	rows r2 = { 0 };
	cr_assert_eq(store_match_games(db, s1.match_id, check_row, &r2), 4);
	/* The first two games are the same rows, not played again. */
	for (int k = 0; k < 2; k++)
		cr_assert_eq(r2.created[k], r1.created[k]);
	/* Other settings make another match. */
	o.visits = 5;
	o.games = 1;
	match_summary s3;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s3, err, sizeof(err)), 0, "%s", err);
	cr_assert_neq(s3.match_id, s1.match_id);
	store_close(db);
}

/* A fake GTP engine in sh that misbehaves on genmove (or final_score) as
 * `mode` says. */
static void fake_engine(const char *path)
{
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fputs("mode=$1\n"
	      "while read -r cmd rest; do\n"
	      "  case \"$cmd\" in\n"
	      "    name) printf '= fake-%s\\n\\n' \"$mode\" ;;\n"
	      "    quit) printf '=\\n\\n'; exit 0 ;;\n"
	      "    final_score)\n"
	      "      case \"$mode\" in\n"
	      "        nanscore) printf '= B+nan\\n\\n' ;;\n"
	      "        infscore) printf '= W+inf\\n\\n' ;;\n"
	      "        *) printf '= B+1\\n\\n' ;;\n"
	      "      esac ;;\n"
	      "    genmove)\n"
	      "      case \"$mode\" in\n"
	      "        illegal) printf '= E5\\n\\n' ;;\n"
	      "        crash) exit 3 ;;\n"
	      "        hang) sleep 4 ;;\n"
	      "        garbage) printf '= ZZ99\\n\\n' ;;\n"
	      "        resign) printf '= resign\\n\\n' ;;\n"
	      "        nanscore|infscore) printf '= pass\\n\\n' ;;\n"
	      "      esac ;;\n"
	      "    *) printf '=\\n\\n' ;;\n"
	      "  esac\n"
	      "done\n", f);
	fclose(f);
}

/* The store, the fake engine's script (script, 160 bytes) and model A as
 * player a, for the fake engine tests. */
static store *fake_setup(char *script, match_player *a)
{
	char err[512];
	snprintf(script, 160, "%s/fake.sh", dir);
	fake_engine(script);
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	cr_assert_eq(match_player_parse(net_a, db, a, err, sizeof(err)), 0, "%s", err);
	return db;
}

Test(match, misbehaving_engines_lose_and_are_restarted)
{
	char err[512], script[160], spec[256];
	match_player a, b;
	store *db = fake_setup(script, &a);
	const char *modes[] = { "illegal", "crash", "hang", "garbage", "resign" };
	const char *want[] = { "illegal move", "engine died", "no move in", "not a move", "resigned" };
	for (int m = 0; m < 5; m++) {
		snprintf(spec, sizeof(spec), "gtp:sh %s %s", script, modes[m]);
		cr_assert_eq(match_player_parse(spec, db, &b, err, sizeof(err)), 0, "%s", err);
		match_options o = small_options(2);
		o.parallel = 1;
		o.move_timeout = 1;
		/* The opening plays E5 already (it is in the middle): use none. */
		o.opening_moves = 0;
		match_summary s;
		cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s, err, sizeof(err)), 0, "%s: %s",
			     modes[m], err);
		cr_assert_eq(s.games, 2, "%s", modes[m]);
		rows r = { 0 };
		cr_assert_eq(store_match_games(db, s.match_id, check_row, &r), 2);
		for (int k = 0; k < 2; k++) {
			cr_assert(strstr(r.reason[k], want[m]), "%s: game %d: '%s'", modes[m], k, r.reason[k]);
			/* The engine lost, whatever its colour. */
			int for_a = r.a_black[k] ? r.result[k] : -r.result[k];
			if (strcmp(modes[m], "illegal") != 0 || k == 1)
				cr_assert_eq(for_a, 1, "%s: game %d: '%s'", modes[m], k, r.reason[k]);
		}
		if (!strcmp(modes[m], "resign"))
			cr_assert_eq(s.engine_faults, 0);
		else
			cr_assert(s.engine_faults >= 1, "%s", modes[m]);
		if (!strcmp(modes[m], "crash") || !strcmp(modes[m], "hang"))
			cr_assert(s.restarts >= 1, "%s: %d restarts", modes[m], s.restarts);
		if (!strcmp(modes[m], "garbage"))
			cr_assert_eq(s.protocol_errors, 2);
	}
	/* An engine that does not take the board size stops the match at once. */
	snprintf(spec, sizeof(spec), "gtp:sh -c 'while read c r; do case $c in boardsize) printf \"? unacceptable size\\n\\n\";; *) printf \"=\\n\\n\";; esac; done'");
	cr_assert_eq(match_player_parse(spec, db, &b, err, sizeof(err)), 0, "%s", err);
	match_options o = small_options(2);
	match_summary s;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s, err, sizeof(err)), -1);
	cr_assert(strstr(err, "does not play 9x9"), "%s", err);
	store_close(db);
}

/* An engine whose final_score is not a number (NaN, infinity) made a
 * protocol error: the game is stored, scored by area, and the match goes
 * on (it used to abort on storing the NaN, on every rerun). */
Test(match, a_final_score_that_is_not_finite_is_a_protocol_error)
{
	char err[512], script[160], spec[256];
	match_player a, b;
	store *db = fake_setup(script, &a);
	const char *modes[] = { "nanscore", "infscore" };
	for (int m = 0; m < 2; m++) {
		snprintf(spec, sizeof(spec), "gtp:sh %s %s", script, modes[m]);
		cr_assert_eq(match_player_parse(spec, db, &b, err, sizeof(err)), 0, "%s", err);
		match_options o = small_options(2);
		o.parallel = 1;
		o.max_moves = 12; /* the engine passes: the move limit ends it */
		match_summary s;
		cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s, err, sizeof(err)), 0, "%s: %s",
			     modes[m], err);
		cr_assert_eq(s.games, 2, "%s", modes[m]);
		cr_assert_eq(s.protocol_errors, 2, "%s", modes[m]);
		cr_assert_eq(s.engine_faults, 0, "%s: scored, not forfeited", modes[m]);
		rows r = { 0 };
		cr_assert_eq(store_match_games(db, s.match_id, check_row, &r), 2);
		for (int k = 0; k < 2; k++) {
			cr_assert(strstr(r.reason[k], "area score"), "%s: game %d: '%s'", modes[m], k,
				  r.reason[k]);
			cr_assert(strstr(r.reason[k], "final_score"), "%s: game %d: '%s'", modes[m], k,
				  r.reason[k]);
			cr_assert(isfinite(r.score[k]), "%s: game %d: score %g", modes[m], k, r.score[k]);
			cr_assert_eq(r.result[k], r.score[k] > 0 ? 1 : r.score[k] < 0 ? -1 : 0,
				     "%s: game %d: result %d, score %g", modes[m], k, r.result[k], r.score[k]);
		}
	}
	store_close(db);
}

static const char *find_gnugo(void)
{
	if (access("/usr/games/gnugo", X_OK) == 0)
		return "/usr/games/gnugo";
	if (system("command -v gnugo >/dev/null 2>&1") == 0)
		return "gnugo";
	return NULL;
}

Test(match, against_gnugo)
{
	const char *gnugo = find_gnugo();
	if (!gnugo)
		cr_skip_test("gnugo is not installed (apt-get install gnugo)");
	char err[512], spec[256];
	store *db = store_open(db_path, err, sizeof(err));
	cr_assert(db, "%s", err);
	match_player a, b;
	cr_assert_eq(match_player_parse(net_a, db, &a, err, sizeof(err)), 0, "%s", err);
	snprintf(spec, sizeof(spec), "gtp:%s --mode gtp --level 0 --chinese-rules", gnugo);
	cr_assert_eq(match_player_parse(spec, db, &b, err, sizeof(err)), 0, "%s", err);
	match_options o = small_options(2);
	o.max_moves = 243;
	match_summary s;
	cr_assert_eq(match_run(db, &a, &b, &o, NULL, NULL, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.games, 2);
	cr_assert_eq(s.protocol_errors, 0);
	cr_assert_eq(s.engine_faults, 0);
	rows r = { 0 };
	cr_assert_eq(store_match_games(db, s.match_id, check_row, &r), 2);
	cr_log_info("tiny random net against GNU Go: %d-%d-%d (%s; %s)", s.wins, s.losses, s.draws,
		    r.reason[0], r.reason[1]);
	store_close(db);
}

/* ---- the commands ------------------------------------------------------------- */

static char out[1 << 16];

static int run_sente(const char *args)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", bin, args);
	FILE *f = popen(cmd, "r");
	cr_assert(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(match, command_usage_errors)
{
	char args[1024];
	cr_assert_eq(run_sente("match --help"), 0);
	cr_assert(strstr(out, "usage: sente match A B"), "%s", out);
	cr_assert_eq(run_sente("tournament --help"), 0);
	cr_assert(strstr(out, "--gauntlet"), "%s", out);
	snprintf(args, sizeof(args), "match %s --db %s", net_a, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "match %s %s --db %s --sprt 35,0,0.05,0.05", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	cr_assert(strstr(out, "--sprt"), "%s", out);
	snprintf(args, sizeof(args), "match %s %s/none.sente --db %s", net_a, dir, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "match %s 77 --db %s", net_a, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	cr_assert(strstr(out, "no model with id 77"), "%s", out);
	snprintf(args, sizeof(args), "match %s %s --db %s --games 0", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "match %s %s --db %s --openings random:x", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "match %s %s --db %s --bogus", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	snprintf(args, sizeof(args), "tournament %s --db %s", net_a, db_path);
	cr_assert_eq(run_sente(args), 2, "%s", out);
	/* A model for another board is refused with a reason (exit 1). */
	snprintf(args, sizeof(args), "match %s %s --db %s --size 7 --games 1", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 1, "%s", out);
}

/* Counts stored games of every match in the database. */
static int count_rows(void *ctx, const store_match *m)
{
	*(int *)ctx += m->games;
	return 0;
}

Test(match, killed_match_resumes)
{
	const char *bin = getenv("SENTE_BIN");
	if (!bin)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "exec %s match %s %s --db %s --games 12 --parallel 1 --visits 6 "
		 "--max-moves 120 --resign 0 --nn-threads 1 -q >/dev/null 2>&1", bin, net_a, net_b, db_path);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* Kill it once two games are stored (twelve in all, so that a poll
	 * that waits for a loaded machine's cores still finds it running). */
	int stored = 0;
	for (int t = 0; t < 600 && stored < 2; t++) {
		usleep(50000);
		char err[256];
		store *db = store_open_ex(db_path, 0, err, sizeof(err));
		stored = 0;
		if (db) {
			store_list_matches(db, count_rows, &stored);
			store_close(db);
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert(stored >= 2 && stored < 12, "%d games stored before the kill", stored);
	char args[1024];
	snprintf(args, sizeof(args), "match %s %s --db %s --games 12 --parallel 1 --visits 6 "
		 "--max-moves 120 --resign 0 --nn-threads 1", net_a, net_b, db_path);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	char *json = strstr(out, "{\"match\"");
	cr_assert(json, "%s", out);
	int games = 0, resumed = -1;
	char *g = strstr(json, "\"games\":"), *r = strstr(json, "\"resumed\":");
	cr_assert(g && r);
	games = atoi(g + 8);
	resumed = atoi(r + 10);
	cr_assert_eq(games, 12, "%s", out);
	cr_assert(resumed >= stored, "resumed %d, %d were stored", resumed, stored);
	cr_assert(strstr(out, "Elo difference A - B"), "%s", out);
	/* Exactly twelve rows: nothing played twice. */
	char err[256];
	store *db = store_open(db_path, err, sizeof(err));
	int rows_n = 0;
	store_list_matches(db, count_rows, &rows_n);
	store_close(db);
	cr_assert_eq(rows_n, 12);
}

Test(match, tournament_table_and_plot)
{
	char args[1024], html[160];
	snprintf(html, sizeof(html), "%s/t.html", dir);
	snprintf(args, sizeof(args), "tournament %s %s %s --db %s --games 2 --visits 4 --max-moves 60 "
		 "--resign 0 --nn-threads 1 -q --html %s", net_a, net_b, net_c, db_path, html);
	cr_assert_eq(run_sente(args), 0, "%s", out);
	/* Three players rated, each from 4 games, steps known from the files. */
	int players = 0;
	for (char *p = out; (p = strstr(p, "{\"rank\":")); p++) {
		players++;
		cr_assert(strstr(p, "\"games\":4"), "%s", p);
	}
	cr_assert_eq(players, 3, "%s", out);
	cr_assert(strstr(out, "\"step\":200"), "%s", out);
	FILE *f = fopen(html, "r");
	cr_assert(f, "no %s", html);
	static char page[1 << 16];
	size_t n = fread(page, 1, sizeof(page) - 1, f);
	page[n] = '\0';
	fclose(f);
	cr_assert(strstr(page, "<table>") && strstr(page, "<svg"), "%s", page);
	cr_assert(strstr(page, "Elo against training step"));
}
