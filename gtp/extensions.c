/* extensions.c: the GTP extensions GUIs and servers send besides GTP v2:
 * KataGo's (rules, komi, time settings, parameters, kata-search), Leela
 * Zero's (lz-setoption, lz-memory_report), KGS's (kgs-rules,
 * kgs-genmove_cleanup) and GoGui's list of analyze commands. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/game_desc.h"
#include "gtp/internal.h"

/* ---- rules ---------------------------------------------------------------- */

/* What sente plays: area scoring, positional superko, no suicide, no
 * handicap compensation (Tromp-Taylor counting; engine/go.h). */
const char gtp_rules_json[] = "{\"friendlyPassOk\":true,\"hasButton\":false,\"ko\":\"POSITIONAL\","
				 "\"scoring\":\"AREA\",\"suicide\":false,\"tax\":\"NONE\","
				 "\"whiteHandicapBonus\":\"0\"}";

bool gtp_cmd_kata_get_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, "%s", gtp_rules_json);
	return true;
}

/* Rule sets counted by area without a tax: sente plays them as its own
 * rules (they differ only in the kind of superko, suicide and handicap
 * compensation, which kata-get-rules reports as sente plays them). */
bool gtp_rules_area_name(const char *name)
{
	static const char *const area[] = { "tromp-taylor", "chinese", "chinese-ogs", "chinese-kgs",
					    "aga", "bga", "new-zealand", "new_zealand", "area", NULL };
	for (int i = 0; area[i]; i++)
		if (!strcasecmp(name, area[i]))
			return true;
	return false;
}

/* Arguments from..to-1 joined by spaces (a JSON object or a Leela Zero
 * option name may hold spaces). */
static void join_args(const gtp_command *c, int from, int to, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = from; i < to && i < c->argc && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i > from ? " " : "", c->argv[i]);
}

/* kata-set-rules NAME|JSON: accepted for area scoring without a tax or a
 * button; territory scoring is refused (sente counts by area only). */
bool gtp_cmd_kata_set_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	char text[GTP_MAX_LINE], squeezed[GTP_MAX_LINE];
	if (!gtp_need_args(c, 1, r))
		return false;
	join_args(c, 0, c->argc, text, sizeof(text));
	if (text[0] != '{') {
		if (gtp_rules_area_name(text))
			return true;
		gtp_reply_add(r, "rules %s not supported: sente scores by area only (%s)", text,
			      gtp_rules_json);
		return false;
	}
	size_t k = 0;
	for (const char *p = text; *p && k + 1 < sizeof(squeezed); p++)
		if (*p != ' ')
			squeezed[k++] = *p;
	squeezed[k] = '\0';
	if (strstr(squeezed, "\"scoring\":\"TERRITORY\"") || strstr(squeezed, "\"hasButton\":true") ||
	    strstr(squeezed, "\"tax\":\"SEKI\"") || strstr(squeezed, "\"tax\":\"ALL\"")) {
		gtp_reply_add(r, "rules not supported: sente scores by area only (%s)", gtp_rules_json);
		return false;
	}
	return true;
}

/* kgs-rules chinese|aga|japanese|new_zealand (kgsGtp). */
bool gtp_cmd_kgs_rules(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_need_args(c, 1, r))
		return false;
	if (gtp_rules_area_name(c->argv[0]))
		return true;
	return gtp_fail(r, "rules not supported: sente scores by area only");
}

bool gtp_cmd_get_komi(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, "%g", e->game.params.komi);
	return true;
}

/* ---- time settings -------------------------------------------------------- */

bool gtp_cmd_kata_list_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	gtp_reply_add(r, "none absolute byo-yomi canadian fischer");
	return true;
}

/* A number of seconds (finite, >= 0) from argument i. */
static bool seconds_arg(const gtp_command *c, int i, double *out)
{
	return i < c->argc && gtp_parse_real(c->argv[i], out) && *out >= 0 && *out <= 1e7;
}

/* kata-time_settings none | absolute MAIN | byo-yomi MAIN PERIOD N |
 * canadian MAIN PERIOD STONES | fischer MAIN INCREMENT (reals allowed). */
bool gtp_cmd_kata_time_settings(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	double main_t, t2, n;
	if (!gtp_need_args(c, 1, r))
		return false;
	const char *kind = c->argv[0];
	if (!strcmp(kind, "none") && c->argc == 1)
		timectl_set_canadian(&e->time, 0, 1, 0);
	else if (!strcmp(kind, "absolute") && c->argc == 2 && seconds_arg(c, 1, &main_t))
		timectl_set_absolute(&e->time, main_t);
	else if ((!strcmp(kind, "byo-yomi") || !strcmp(kind, "canadian")) && c->argc == 4 &&
		 seconds_arg(c, 1, &main_t) && seconds_arg(c, 2, &t2) && seconds_arg(c, 3, &n) &&
		 n == (int)n) {
		if (kind[0] == 'b')
			timectl_set_japanese(&e->time, main_t, t2, (int)n);
		else
			timectl_set_canadian(&e->time, main_t, t2, (int)n);
	} else if (!strcmp(kind, "fischer") && c->argc == 3 && seconds_arg(c, 1, &main_t) &&
		   seconds_arg(c, 2, &t2))
		timectl_set_fischer(&e->time, main_t, t2);
	else
		return gtp_fail(r, "syntax error (kata-list_time_settings lists the kinds)");
	return true;
}

/* ---- parameters ----------------------------------------------------------- */

/* The parameters kata-get-param/kata-set-param and lz-setoption reach:
 * the search limits and the resignation threshold. */
typedef struct gtp_param {
	const char *kata; /* KataGo's name, NULL when none */
	const char *lz;   /* Leela Zero's lz-setoption name, NULL when none */
	int kind;         /* PARAM_* */
} gtp_param;

enum { PARAM_VISITS, PARAM_PLAYOUTS, PARAM_TIME, PARAM_THREADS, PARAM_RESIGN, PARAM_LAG,
       PARAM_PONDER };

static const gtp_param params[] = {
	{ "maxVisits", "visits", PARAM_VISITS },
	{ "maxPlayouts", "playouts", PARAM_PLAYOUTS },
	{ "maxTime", NULL, PARAM_TIME },
	{ "numSearchThreads", NULL, PARAM_THREADS },
	{ NULL, "resign percentage", PARAM_RESIGN },
	{ NULL, "lagbuffer", PARAM_LAG },
	{ NULL, "pondering", PARAM_PONDER },
};

static const gtp_param *find_param(const char *name, bool lz)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		const char *n = lz ? params[i].lz : params[i].kata;
		if (n && !strcasecmp(n, name))
			return &params[i];
	}
	return NULL;
}

static void param_get(const gtp_engine *e, const gtp_param *p, gtp_reply *r)
{
	const mcts_options *o = &e->opt.search;
	switch (p->kind) {
	case PARAM_VISITS: gtp_reply_add(r, "%d", o->max_visits); break;
	case PARAM_PLAYOUTS: gtp_reply_add(r, "%d", o->max_playouts); break;
	case PARAM_TIME: gtp_reply_add(r, "%g", o->max_seconds); break;
	case PARAM_THREADS: gtp_reply_add(r, "%d", o->threads); break;
	case PARAM_RESIGN: gtp_reply_add(r, "%g", e->opt.resign_pct); break;
	case PARAM_LAG: gtp_reply_add(r, "%g", e->opt.lag); break;
	case PARAM_PONDER: gtp_reply_add(r, "%s", e->opt.ponder ? "true" : "false"); break;
	}
}

/* Sets p from text; false with the answer set when the value is bad. */
static bool param_set(gtp_engine *e, const gtp_param *p, const char *text, gtp_reply *r)
{
	mcts_options *o = &e->opt.search;
	double v = 0;
	bool b = false;
	if (p->kind == PARAM_PONDER) {
		if (!strcasecmp(text, "true") || !strcmp(text, "1"))
			b = true;
		else if (strcasecmp(text, "false") && strcmp(text, "0"))
			return gtp_fail(r, "syntax error (true or false)");
	} else if (!gtp_parse_real(text, &v) || v < 0 || v > 1e8) {
		return gtp_fail(r, "syntax error (a number >= 0)");
	}
	switch (p->kind) {
	case PARAM_VISITS:
	case PARAM_PLAYOUTS:
		if (v != (int)v)
			return gtp_fail(r, "syntax error (an integer)");
		*(p->kind == PARAM_VISITS ? &o->max_visits : &o->max_playouts) = (int)v;
		e->opt.limits_set = o->max_visits > 0 || o->max_playouts > 0;
		break;
	case PARAM_TIME: o->max_seconds = v; break;
	case PARAM_THREADS:
		if (v != (int)v || v < 1 || v > 256)
			return gtp_fail(r, "syntax error (threads 1..256)");
		o->threads = (int)v;
		break;
	case PARAM_RESIGN:
		if (v > 100)
			return gtp_fail(r, "syntax error (a percentage)");
		e->opt.resign_pct = (float)v;
		break;
	case PARAM_LAG: e->opt.lag = e->time.lag = v; break;
	case PARAM_PONDER: e->opt.ponder = b; break;
	}
	mcts_set_options(e->search, o);
	return true;
}

bool gtp_cmd_kata_get_param(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_need_args(c, 1, r))
		return false;
	const gtp_param *p = find_param(c->argv[0], false);
	if (!p)
		return gtp_fail(r, "unknown parameter (kata-list-params lists them)");
	param_get(e, p, r);
	return true;
}

bool gtp_cmd_kata_set_param(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	if (!gtp_need_args(c, 2, r))
		return false;
	const gtp_param *p = find_param(c->argv[0], false);
	if (!p)
		return gtp_fail(r, "unknown parameter (kata-list-params lists them)");
	return param_set(e, p, c->argv[1], r);
}

bool gtp_cmd_kata_list_params(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (params[i].kata)
			gtp_reply_add(r, "%s%s", r->len ? " " : "", params[i].kata);
	return true;
}

/* lz-setoption name NAME [value VALUE] (NAME may hold spaces, as Leela
 * Zero's "resign percentage"). */
bool gtp_cmd_lz_setoption(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	char name[256], value[256];
	int v = 1;
	if (c->argc < 2 || strcmp(c->argv[0], "name"))
		return gtp_fail(r, "syntax error (lz-setoption name NAME value VALUE)");
	while (v < c->argc && strcmp(c->argv[v], "value"))
		v++;
	join_args(c, 1, v, name, sizeof(name));
	join_args(c, v + 1, c->argc, value, sizeof(value));
	if (v == c->argc)
		v = -1;
	const gtp_param *p = find_param(name, true);
	if (!p)
		return gtp_fail(r, "unknown option");
	if (v < 0)
		return gtp_fail(r, "syntax error (value missing)");
	return param_set(e, p, value, r);
}

/* Leela Zero's memory report: the network, the search tree, the cache. */
bool gtp_cmd_lz_memory_report(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	size_t mib = 1u << 20;
	size_t net = e->net ? e->net->n_floats * sizeof(float) : 0;
	mcts_stats st;
	mcts_get_stats(e->search, &st);
	size_t tree = e->opt.search.max_memory, cache = e->opt.cache_bytes;
	gtp_reply_add(r, "Estimated total memory consumption: %zu MiB.\n"
		      "Network with overhead: %zu MiB / Search tree: %zu MiB (%llu of %llu nodes used) / "
		      "Network cache: %zu MiB",
		      (net + tree + cache) / mib, net / mib, tree / mib, (unsigned long long)st.nodes,
		      (unsigned long long)st.node_capacity, cache / mib);
	return true;
}

/* ---- moves ---------------------------------------------------------------- */

/* kata-search COLOR: genmove's choice without playing it. */
bool gtp_cmd_kata_search(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	game saved = e->game;
	bool ok = gtp_genmove_common(e, c, r, false);
	e->game = saved; /* kata-search never changes the game */
	return ok;
}

/* kata-search_cancellable COLOR: kata-search that the next input line (a
 * command, or a blank line) cancels: the answer is then `cancelled`, and
 * the line runs as the next command. Never ponders afterwards (KataGo). */
bool gtp_cmd_kata_search_cancellable(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	e->cancellable = true;
	bool ok = gtp_cmd_kata_search(e, c, r);
	e->cancellable = false;
	return ok;
}

/* kgs-genmove_cleanup COLOR: genmove that neither passes (while another
 * move is legal) nor resigns, so that dead stones get captured before
 * the game is scored (KGS asks for it after a scoring dispute). */
bool gtp_cmd_kgs_genmove_cleanup(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	int color;
	if (!gtp_parse_color_arg(c, &color, r))
		return false;
	mcts_avoid *ban = calloc(1, sizeof(*ban));
	if (!ban)
		return gtp_fail(r, "out of memory");
	ban->until_ply[color][game_pass_move(&e->game)] = 1;
	mcts_set_avoid(e->search, ban);
	float resign = e->opt.resign_pct;
	e->opt.resign_pct = 0;
	/* The game may stand at two passes (the GUI disputes the score): the
	 * cleanup plays on, as the next move would reset the count anyway. */
	e->game.u.go.passes = 0;
	bool ok = gtp_genmove_common(e, c, r, true);
	e->opt.resign_pct = resign;
	gtp_stop_pondering(e);
	mcts_set_avoid(e->search, NULL);
	gtp_start_pondering(e);
	free(ban);
	return ok;
}

/* ---- GoGui ---------------------------------------------------------------- */

/* gogui-analyze_commands: TYPE/LABEL/COMMAND lines GoGui adds to its
 * Analyze menu; only the commands this game answers. */
bool gtp_cmd_gogui_analyze_commands(gtp_engine *e, const gtp_command *c, gtp_reply *r)
{
	static const struct {
		const char *line;
		bool go_only;
	} cmds[] = {
		{ "dboard/Policy (network)/gogui-sente-policy", true },
		{ "dboard/Ownership (playout estimate)/gogui-sente-ownership", true },
		{ "string/Heatmap (policy per mille)/heatmap", false },
		{ "string/Raw network output/kata-raw-nn 0", false },
		{ "plist/Dead stones/final_status_list dead", true },
		{ "string/Final score/final_score", false },
		{ "string/Rules/kata-get-rules", true },
		{ "string/Memory report/lz-memory_report", false },
		{ "none/Clear cache/clear_cache", false },
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!cmds[i].go_only || gtp_is_go(e))
			gtp_reply_add(r, "%s%s", r->len ? "\n" : "", cmds[i].line);
	return true;
}
