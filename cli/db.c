/* db.c: `sente db`, a look into a run's store: statistics, recent games,
 * models, SGF export, and compaction. One small function per subcommand,
 * dispatched through a table. */
#include "cli/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/opt.h"
#include "data/export.h"
#include "data/store.h"
#include "serve/serve.h"

static const char db_help[] =
	"usage: sente db FILE [SUBCOMMAND] [options]\n"
	"       sente db FILE SUBCOMMAND --help\n"
	"\n"
	"Looks into the store of a run (DIR/sente.db). The file must exist and be\n"
	"a regular file. Every subcommand but vacuum opens it read-only and\n"
	"changes nothing (a read-only file is fine); a file that is not a sente\n"
	"database, or of a newer schema, is refused, and one of an older schema\n"
	"is migrated only by vacuum. Safe while a run is writing to it.\n"
	"\n"
	"subcommands:\n"
	"  stats        counts, game lengths, results, size (the default)\n"
	"  games        a table of the most recent games\n"
	"  models       the registered models\n"
	"  export-sgf   write games to a folder: Go as SGF, Connect Four as text\n"
	"  export-metrics  every metric to stdout as CSV or JSON lines\n"
	"  check        the integrity check of every page and index\n"
	"  vacuum       compact the file and empty its write-ahead log\n"
	"\n"
	"exit status: 0 done, 1 the database is missing or corrupt, 2 bad usage\n";

/* Options a subcommand may take (db_command.options). */
enum {
	DB_OPT_JSON = 1,    /* --json */
	DB_OPT_LIMIT = 2,   /* --limit N */
	DB_OPT_GAME_ID = 4, /* --game-id ID */
	DB_OPT_DIR = 8,     /* one positional folder, required */
};

/* The parsed options; each subcommand reads the ones it takes. */
typedef struct db_opts {
	const char *path;  /* the database file */
	bool json;         /* --json */
	long limit;        /* --limit, 0 = all */
	long game_id;      /* --game-id, 0 = any */
	const char *dir;   /* export folder */
} db_opts;

/* A subcommand. Its options are all parsed before the database is opened,
 * so a usage error never touches the file. */
typedef struct db_command {
	const char *name;     /* as typed after FILE */
	const char *usage;    /* after "usage: sente db " */
	const char *about;    /* what it does, for --help */
	unsigned options;     /* DB_OPT_* it accepts */
	bool writes;          /* opens the file read-write (else read-only) */
	long default_limit;   /* --limit when not given */
	const char *limit_help; /* --limit's help line */
	int (*run)(store *s, const db_opts *o);
} db_command;

static const char db_stats_about[] =
	"Prints the schema version, models (count and latest), games per game\n"
	"and board size with their recorded (full-search) positions, mean game\n"
	"length, results (Black/first player, White/second player, draws),\n"
	"resignations, and the size of the database and its WAL.\n";

static const char db_games_about[] =
	"A table of the most recent games, newest first: id, model, worker, game,\n"
	"size, komi, result (B+R: Black won by resignation; W+3.5: White by 3.5\n"
	"points; draw), length in moves, recorded positions, creation time.\n";

static const char db_models_about[] =
	"Lists the registered models, oldest first: id, parent, training step,\n"
	"creation time, file, notes.\n";

static const char db_export_about[] =
	"Writes games into DIR (created if missing), newest first:\n"
	"  Go games as DIR/game-ID.sgf (FF[4]; RE from the result; each move's\n"
	"    comment holds the search's root value for the side that played it,\n"
	"    and whether the move was searched fully, with its visits);\n"
	"  Connect Four games as DIR/game-ID.c4.txt: one line of the columns\n"
	"    played, 1..7 from the left (the notation Connect Four solvers read).\n"
	"A row whose record is corrupt is reported and skipped (exit status 1).\n";

static const char db_check_about[] =
	"Runs SQLite's integrity check over every page, table and index and\n"
	"prints \"ok\", or the problems it found (exit status 1): a flipped bit\n"
	"that the other subcommands would read past unnoticed.\n";

static const char db_vacuum_about[] =
	"Rebuilds the file without free pages (VACUUM) and then empties the\n"
	"write-ahead log (wal_checkpoint(TRUNCATE)). Needs room for a copy of the\n"
	"database; fails, losing nothing, while another process uses it.\n";

/* ---- helpers -------------------------------------------------------------- */

static const char *db_time_text(double t, char *buf, size_t len)
{
	time_t sec = (time_t)t;
	struct tm tm;
	if (!localtime_r(&sec, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "?");
	return buf;
}

static int64_t db_file_size(const char *path, const char *suffix)
{
	char name[4096];
	struct stat sb;
	snprintf(name, sizeof(name), "%s%s", path, suffix);
	return stat(name, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

static double db_pct(int64_t part, int64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Writes s as a JSON string. */
static void db_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* ---- stats ---------------------------------------------------------------- */

static int db_stats(store *s, const db_opts *o)
{
	const char *path = o->path;
	bool json = o->json;
	static store_stats st; /* large: kinds[] */
	if (store_get_stats(s, &st)) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	int64_t model_id = 0, model_step = 0;
	char model_file[1024] = "";
	int have_model = store_latest_model(s, &model_id, model_file, sizeof(model_file), &model_step);
	if (have_model < 0) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	int64_t bytes = db_file_size(path, ""), wal = db_file_size(path, "-wal");
	store_kind_stats all = { .games = st.games, .positions = st.positions };
	for (int i = 0; i < st.n_kinds; i++) {
		all.moves += st.kinds[i].moves;
		all.black_wins += st.kinds[i].black_wins;
		all.white_wins += st.kinds[i].white_wins;
		all.draws += st.kinds[i].draws;
		all.resignations += st.kinds[i].resignations;
	}
	if (json) {
		printf("{\"file\":");
		db_json_str(stdout, path);
		printf(",\"schema\":%d,\"bytes\":%lld,\"wal_bytes\":%lld,\"free_bytes\":%lld,\"models\":%lld,"
		       "\"latest_model\":",
		       st.schema_version, (long long)bytes, (long long)wal, (long long)st.free_bytes,
		       (long long)st.models);
		if (have_model) {
			printf("{\"id\":%lld,\"file\":", (long long)model_id);
			db_json_str(stdout, model_file);
			printf(",\"train_step\":%lld}", (long long)model_step);
		} else {
			printf("null");
		}
		printf(",\"games\":%lld,\"positions\":%lld,\"mean_length\":%.2f,\"black_wins\":%lld,"
		       "\"white_wins\":%lld,\"draws\":%lld,\"resignations\":%lld,\"metrics\":%lld,"
		       "\"matches\":%lld,\"kinds\":[",
		       (long long)all.games, (long long)all.positions,
		       all.games ? (double)all.moves / (double)all.games : 0.0, (long long)all.black_wins,
		       (long long)all.white_wins, (long long)all.draws, (long long)all.resignations,
		       (long long)st.metrics, (long long)st.matches);
		for (int i = 0; i < st.n_kinds; i++) {
			const store_kind_stats *k = &st.kinds[i];
			printf("%s{\"game\":", i ? "," : "");
			db_json_str(stdout, k->game);
			printf(",\"size\":%d,\"games\":%lld,\"positions\":%lld,\"mean_length\":%.2f,"
			       "\"black_wins\":%lld,\"white_wins\":%lld,\"draws\":%lld,\"resignations\":%lld}",
			       k->size, (long long)k->games, (long long)k->positions,
			       k->games ? (double)k->moves / (double)k->games : 0.0, (long long)k->black_wins,
			       (long long)k->white_wins, (long long)k->draws, (long long)k->resignations);
		}
		printf("]}\n");
		return 0;
	}
	printf("database      %s\n", path);
	printf("size          %.2f MiB (WAL %.2f MiB, free pages %.2f MiB)\n", bytes / 1048576.0,
	       wal / 1048576.0, st.free_bytes / 1048576.0);
	printf("schema        %d\n", st.schema_version);
	if (have_model)
		printf("models        %lld (latest #%lld: %s, step %lld)\n", (long long)st.models,
		       (long long)model_id, model_file, (long long)model_step);
	else
		printf("models        0\n");
	printf("games         %lld (%lld recorded positions)\n", (long long)all.games,
	       (long long)all.positions);
	for (int i = -1; i < st.n_kinds; i++) {
		const store_kind_stats *k = i < 0 ? &all : &st.kinds[i];
		if (i < 0 && st.n_kinds < 2)
			continue; /* the one kind's line says it all */
		char label[32];
		if (i < 0)
			snprintf(label, sizeof(label), "all");
		else if (!strcmp(k->game, "go"))
			snprintf(label, sizeof(label), "go %dx%d", k->size, k->size);
		else
			snprintf(label, sizeof(label), "%s", k->game);
		printf("  %-11s %lld games, %lld positions, mean length %.1f, B %.1f%% W %.1f%% draw %.1f%%, "
		       "resigned %lld (%.1f%%)\n",
		       label, (long long)k->games, (long long)k->positions,
		       k->games ? (double)k->moves / (double)k->games : 0.0, db_pct(k->black_wins, k->games),
		       db_pct(k->white_wins, k->games), db_pct(k->draws, k->games), (long long)k->resignations,
		       db_pct(k->resignations, k->games));
	}
	if (st.n_kinds == STORE_MAX_KINDS)
		printf("  (more game kinds not shown)\n");
	printf("metrics       %lld rows\n", (long long)st.metrics);
	printf("matches       %lld\n", (long long)st.matches);
	return 0;
}

/* ---- games ---------------------------------------------------------------- */

static int db_games_row(void *ctx, const store_game_info *g)
{
	(void)ctx;
	char model[24], res[32], when[32];
	if (g->model_id > 0)
		snprintf(model, sizeof(model), "%lld", (long long)g->model_id);
	else
		snprintf(model, sizeof(model), "-");
	printf("%8lld %6s %-12.12s %-9s %4d %6.1f %-7s %6d %6d  %s\n", (long long)g->id, model,
	       g->worker[0] ? g->worker : "-", g->game, g->size, g->komi,
	       export_result_text(g->game, g->result, g->score, g->resigned, res, sizeof(res)), g->length,
	       g->n_positions, db_time_text(g->created, when, sizeof(when)));
	return 0;
}

static int db_games(store *s, const db_opts *o)
{
	printf("%8s %6s %-12s %-9s %4s %6s %-7s %6s %6s  %s\n", "id", "model", "worker", "game", "size",
	       "komi", "result", "length", "recpos", "created");
	if (store_list_games(s, 0, o->limit, db_games_row, NULL) < 0) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	return 0;
}

/* ---- models --------------------------------------------------------------- */

static int db_models_row(void *ctx, const store_model *m)
{
	(void)ctx;
	char parent[24], when[32];
	if (m->parent_id > 0)
		snprintf(parent, sizeof(parent), "%lld", (long long)m->parent_id);
	else
		snprintf(parent, sizeof(parent), "-");
	printf("%6lld %6s %10lld  %s  %s%s%s\n", (long long)m->id, parent, (long long)m->train_step,
	       db_time_text(m->created, when, sizeof(when)), m->file, m->notes[0] ? "  # " : "",
	       m->notes);
	return 0;
}

static int db_models(store *s, const db_opts *o)
{
	printf("%6s %6s %10s  %-19s  %s\n", "id", "parent", "step", "created", "file");
	if (store_list_models(s, db_models_row, NULL) < 0) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	return 0;
}

/* ---- export-sgf ----------------------------------------------------------- */

static int db_export_sgf(store *s, const db_opts *o)
{
	export_counts c;
	char err[4600];
	int rc = export_games(s, o->dir, o->game_id, o->limit, stderr, "sente db: ", &c, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "sente db: %s\n", err);
	if (rc == 0 && o->game_id && c.listed == 0) {
		fprintf(stderr, "sente db: %s: no game with id %ld\n", o->path, o->game_id);
		return 1;
	}
	printf("exported %lld games as SGF and %lld as move lists (.txt) to %s",
	       (long long)c.sgf, (long long)c.lines, o->dir);
	if (c.skipped)
		printf("; %lld corrupt rows skipped", (long long)c.skipped);
	printf("\n");
	return rc != 0 || c.skipped ? 1 : 0;
}

/* ---- export-metrics -------------------------------------------------------- */

static const char db_export_metrics_about[] =
	"Writes every training and measurement metric to stdout, in the order\n"
	"recorded: CSV (step,time,name,value; time in Unix seconds), or with\n"
	"--json one JSON object per line (JSON lines).\n";

static int db_export_metrics(store *s, const db_opts *o)
{
	char err[600];
	if (serve_export_metrics(s, stdout, o->json ? SERVE_FORMAT_JSONL : SERVE_FORMAT_CSV, err,
				 sizeof(err)) < 0) {
		fprintf(stderr, "sente db: %s\n", err);
		return 1;
	}
	return 0;
}

/* ---- check ---------------------------------------------------------------- */

static int db_check(store *s, const db_opts *o)
{
	char msg[512];
	if (store_integrity_check(s, msg, sizeof(msg))) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	printf("%s: %s\n", o->path, msg);
	return 0;
}

/* ---- vacuum --------------------------------------------------------------- */

static int db_vacuum(store *s, const db_opts *o)
{
	const char *path = o->path;
	int64_t before = db_file_size(path, "") + db_file_size(path, "-wal");
	if (store_vacuum(s)) {
		fprintf(stderr, "sente db: %s\n", store_errmsg(s));
		return 1;
	}
	int64_t after = db_file_size(path, "") + db_file_size(path, "-wal");
	printf("vacuumed %s: %.2f MiB -> %.2f MiB (file and WAL)\n", path, before / 1048576.0,
	       after / 1048576.0);
	return 0;
}

/* ---- dispatch ------------------------------------------------------------- */

static const db_command db_commands[] = {
	{ "stats", "FILE stats [--json]", db_stats_about, DB_OPT_JSON, false, 0, NULL, db_stats },
	{ "games", "FILE games [--limit N]", db_games_about, DB_OPT_LIMIT, false, 20,
	  "games to list; 0 lists all", db_games },
	{ "models", "FILE models", db_models_about, 0, false, 0, NULL, db_models },
	{ "export-sgf", "FILE export-sgf DIR [--limit N] [--game-id ID]", db_export_about,
	  DB_OPT_LIMIT | DB_OPT_GAME_ID | DB_OPT_DIR, false, 0, "games to export; 0: all",
	  db_export_sgf },
	{ "export-metrics", "FILE export-metrics [--json]", db_export_metrics_about, DB_OPT_JSON,
	  false, 0, NULL, db_export_metrics },
	{ "check", "FILE check", db_check_about, 0, false, 0, NULL, db_check },
	{ "vacuum", "FILE vacuum", db_vacuum_about, 0, true, 0, NULL, db_vacuum },
};
#define DB_N_COMMANDS (sizeof(db_commands) / sizeof(db_commands[0]))

static const db_command *db_find(const char *name)
{
	for (size_t i = 0; i < DB_N_COMMANDS; i++)
		if (!strcmp(name, db_commands[i].name))
			return &db_commands[i];
	return NULL;
}

/* Parses the subcommand's options (argv[0] is its name, or FILE when none
 * was named) into o, or prints its help; false with the exit status in
 * *rc when the command should not go on. */
static bool db_parse(const db_command *cmd, int argc, char **argv, db_opts *o, int *rc)
{
	char who[32];
	snprintf(who, sizeof(who), "db %s", cmd->name);
	o->limit = cmd->default_limit;
	cli_opt opts[3];
	int n = 0;
	if (cmd->options & DB_OPT_JSON)
		opts[n++] = (cli_opt)CLI_OPT_FLAG("--json", NULL, &o->json,
						  "one JSON object on one line instead of text");
	if (cmd->options & DB_OPT_LIMIT)
		opts[n++] = (cli_opt)CLI_OPT_INT("--limit", NULL, &o->limit, 0, INT64_MAX, "N",
						 cmd->limit_help);
	if (cmd->options & DB_OPT_GAME_ID)
		opts[n++] = (cli_opt)CLI_OPT_INT("--game-id", NULL, &o->game_id, 1, INT64_MAX, "ID",
						 "only this game", .def = "");
	int n_pos = 0;
	const cli_spec spec = {
		.cmd = who, .prog = "db", .usage = cmd->usage, .about = cmd->about,
		.opts = opts, .n_opts = n,
		.pos = (cmd->options & DB_OPT_DIR) ? &o->dir : NULL, .pos_max = 1, .pos_n = &n_pos,
	};
	if (!cli_opt_parse(&spec, argc, argv, rc))
		return false;
	if ((cmd->options & DB_OPT_DIR) && !o->dir) {
		*rc = cli_usage_error(who, "expected the folder to write into");
		return false;
	}
	return true;
}

int cli_db(int argc, char **argv)
{
	/* FILE comes first, then the subcommand (stats when none is named). */
	const db_command *cmd = argc > 2 ? db_find(argv[2]) : NULL;
	db_opts o = { 0 };
	int rc;
	if (cli_wants_help(argc, argv)) {
		/* `sente db stats --help` names no file: look for the subcommand anywhere. */
		for (int i = 1; i < argc && !cmd; i++)
			cmd = db_find(argv[i]);
		if (!cmd) {
			fputs(db_help, stdout);
			return 0;
		}
		char *help_argv[] = { (char *)cmd->name, "--help", NULL };
		db_parse(cmd, 2, help_argv, &o, &rc);
		return rc;
	}
	if (argc < 2)
		return cli_usage_error("db", "expected the database file");
	const char *path = argv[1];
	if (path[0] == '-')
		return cli_usage_error("db", "unknown option '%s'", path);
	if (argc == 2 && db_find(path))
		return cli_usage_error("db", "expected the database file before '%s'", path);
	int first = 2; /* argv index of the subcommand's name */
	if (!cmd) {
		if (argc > 2 && argv[2][0] != '-')
			return cli_usage_error("db", "unknown subcommand '%s' (stats, games, models, "
						     "export-sgf, export-metrics, check, vacuum)", argv[2]);
		cmd = &db_commands[0]; /* `sente db FILE [--json]` is stats */
		first = 1;
	}
	o.path = path;
	if (!db_parse(cmd, argc - first, argv + first, &o, &rc))
		return rc;
	char err[600];
	store *s = store_open_ex(path, cmd->writes ? 0 : STORE_OPEN_READONLY, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "sente db: %s\n", err);
		return 1;
	}
	rc = cmd->run(s, &o);
	store_close(s);
	return rc;
}
