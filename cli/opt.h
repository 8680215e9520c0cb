/* opt.h: a `sente` subcommand's options as one declarative table, which
 * both parses argv and prints --help.
 *
 * A command fills its options struct with the defaults, builds a table
 * whose entries point at the fields, and calls cli_opt_parse:
 *
 *	cli_opt opts[] = {
 *		CLI_OPT_INT("--games", NULL, &o.games, 1, 10000000, "N", "games in the match"),
 *		CLI_OPT_FLAG("--quiet", "-q", &o.quiet, "no line per game"),
 *		CLI_OPT_INT("--blocks", NULL, &o.blocks, 1, 40, "B", "residual blocks",
 *			    .given = &blocks_given, .def = "4 on 9x9 and below, else 6"),
 *	};
 *	cli_spec spec = { .cmd = "demo", .usage = "[options]", .about = "...",
 *			  .opts = opts, .n_opts = CLI_N(opts) };
 *	int rc;
 *	if (!cli_opt_parse(&spec, argc, argv, &rc))
 *		return rc;  // 0 after --help, 2 after a usage error (reported)
 *
 * The help shows each option's default read from its field before parsing
 * (so the defaults are said once, where the struct is filled), unless the
 * entry's .def text overrides it: a default that depends on other options,
 * or a 0 that means "all cores". Dependent defaults are applied after the
 * parse, from the .given markers. Extra designated initializers after the
 * help text of every CLI_OPT_* macro (.given, .def) go into the entry. */
#ifndef SENTE_CLI_OPT_H
#define SENTE_CLI_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum cli_opt_type {
	CLI_OPT_FLAG,   /* no value: stores .hi into a bool or int field */
	CLI_OPT_INT,    /* integer in [.lo, .hi] into an int (4 bytes) or a
			 * long/int64_t/uint64_t/size_t (8 bytes) field */
	CLI_OPT_REAL,   /* finite number in [.rlo, .rhi] (or (.rlo, .rhi]
			 * with .open_lo; never NaN or infinity, even with
			 * infinite bounds) into a double or float field */
	CLI_OPT_STRING, /* the argument itself into a const char * field */
	CLI_OPT_BUF,    /* the argument copied into a char array of .size */
	CLI_OPT_CHOICE, /* one of .choices (NULL-terminated), its index into an
			 * int (or enum) field */
	CLI_OPT_CALL,   /* .call parses the value into .ptr */
} cli_opt_type;

typedef struct cli_opt cli_opt;

/* Parses `value` for option `o` into o->ptr. 0, or -1 with the message
 * (naming the option) in err; the parser adds "sente CMD: " and the hint. */
typedef int (*cli_opt_fn)(const cli_opt *o, const char *value, char *err, size_t errlen);

struct cli_opt {
	const char *name;          /* long name, "--games" */
	const char *alias;         /* short name, "-g", or NULL */
	cli_opt_type type;         /* what the value is */
	void *ptr;                 /* the field it sets */
	size_t size;               /* sizeof the field (a BUF's capacity) */
	int64_t lo, hi;            /* INT bounds; FLAG: hi is the value stored */
	double rlo, rhi;           /* REAL bounds */
	bool open_lo;              /* REAL: rlo itself is refused */
	const char *const *choices; /* CHOICE: names, NULL-terminated */
	cli_opt_fn call;           /* CALL: the parser */
	bool *given;               /* set to true when the option appears (or NULL) */
	const char *meta;          /* the value's name in help, "N", "FILE" */
	const char *def;           /* default as help shows it; NULL: read from the
				    * field (FLAG, CALL: none); "": none shown */
	const char *help;          /* the help line (wrapped; "\n" breaks) */
};

#define CLI_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

#define CLI_OPT_FLAG(nm, al, p, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_FLAG, .ptr = (p), .size = sizeof(*(p)), \
	  .hi = 1, .help = (h), __VA_ARGS__ }
/* A flag that stores 0 (false), e.g. --noponder. */
#define CLI_OPT_FLAG_OFF(nm, al, p, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_FLAG, .ptr = (p), .size = sizeof(*(p)), \
	  .hi = 0, .help = (h), __VA_ARGS__ }
#define CLI_OPT_INT(nm, al, p, l, u, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_INT, .ptr = (p), .size = sizeof(*(p)), \
	  .lo = (l), .hi = (u), .meta = (m), .help = (h), __VA_ARGS__ }
#define CLI_OPT_REAL(nm, al, p, l, u, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_REAL, .ptr = (p), .size = sizeof(*(p)), \
	  .rlo = (l), .rhi = (u), .meta = (m), .help = (h), __VA_ARGS__ }
#define CLI_OPT_STRING(nm, al, p, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_STRING, .ptr = (p), .size = sizeof(*(p)), \
	  .meta = (m), .help = (h), __VA_ARGS__ }
#define CLI_OPT_BUF(nm, al, arr, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_BUF, .ptr = (arr), .size = sizeof(arr), \
	  .meta = (m), .help = (h), __VA_ARGS__ }
#define CLI_OPT_CHOICE(nm, al, p, names, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_CHOICE, .ptr = (p), .size = sizeof(*(p)), \
	  .choices = (names), .meta = (m), .help = (h), __VA_ARGS__ }
/* Only the callback knows the field's type: help shows .def, if any. */
#define CLI_OPT_CALL(nm, al, p, fn, m, h, ...) \
	{ .name = (nm), .alias = (al), .type = CLI_OPT_CALL, .ptr = (p), .call = (fn), \
	  .meta = (m), .help = (h), __VA_ARGS__ }

/* Callbacks for options several commands share. */
/* --backend, --gpus, --precision into an nn_backend_options (ptr), through
 * nn_backend_parse_flag; --precision also sets precision_given. */
int cli_opt_nn_flag(const cli_opt *o, const char *value, char *err, size_t errlen);
/* --game go|connect4 into a game_kind (ptr). */
int cli_opt_game(const cli_opt *o, const char *value, char *err, size_t errlen);
/* A comma-separated list of integers in [o->lo, o->hi] into a cli_int_list
 * (ptr); at least one. */
typedef struct cli_int_list {
	int *v;   /* the values */
	int cap;  /* room in v */
	int *n;   /* out: how many */
} cli_int_list;
int cli_opt_int_list(const cli_opt *o, const char *value, char *err, size_t errlen);

/* The training heads' weights of sente run and sente train (doubles);
 * own_def says the command's ownership default. */
#define CLI_OPT_HEAD_WEIGHTS(opp, own, score, own_def)                                        \
	CLI_OPT_REAL("--opp-weight", NULL, opp, 0, 10, "W",                                   \
		     "weight of the opponent-reply loss (KataGo's auxiliary policy head, 0.15 " \
		     "there); W > 0 gives a new network the head (both learners; the GPU's "    \
		     "not yet run on a device)"),                                              \
	CLI_OPT_REAL("--own-weight", NULL, own, 0, 10, "W",                                   \
		     "weight of the ownership loss (KataGo's ownership head); W > 0 gives a "   \
		     "new Go network the head (both learners), 0 none",                        \
		     .def = (own_def)),                                                         \
	CLI_OPT_REAL("--score-weight", NULL, score, 0, 10, "W",                               \
		     "weight of the score loss; W > 0 gives a new Go network a score head (the " \
		     "final score over the board's points; both learners)")

/* --se-channels into *p (an int), as sente run and sente train take it. */
#define CLI_OPT_SE_CHANNELS(p)                                                                 \
	CLI_OPT_INT("--se-channels", NULL, p, 0, 512, "N",                                    \
		    "squeeze-excitation in every block of a new network (Leela Chess Zero's "   \
		    "global pooling: each block scales and shifts its channels by FCs of "      \
		    "their means over the board), N the bottleneck; 0 plain blocks (both "      \
		    "learners)")

/* The three backend options with their usual help; `p` is an
 * nn_backend_options *, the def_* texts say the command's defaults. */
#define CLI_OPT_NN_BACKEND(p, d, h) CLI_OPT_CALL("--backend", NULL, p, cli_opt_nn_flag, "B", h, .def = (d))
#define CLI_OPT_NN_GPUS(p, d, h) CLI_OPT_CALL("--gpus", NULL, p, cli_opt_nn_flag, "LIST", h, .def = (d))
#define CLI_OPT_NN_PRECISION(p, d, h) CLI_OPT_CALL("--precision", NULL, p, cli_opt_nn_flag, "P", h, .def = (d))
/* Self-play's CPU lanes and their worker threads, as sente selfplay and
 * sente run take them: `nn` an nn_backend_options *, `per` an int *. */
#define CLI_OPT_SELFPLAY_LANES(nn, per)                                                        \
	CLI_OPT_INT("--nn-lanes", NULL, &(nn)->lanes, 1, 16, "N",                                \
		    "CPU: independent copies of the network, the compute threads split among "   \
		    "them, each fed by its share of the games (1: one copy on every thread)",    \
		    .def = "one per compute thread"),                                            \
	CLI_OPT_INT("--games-per-thread", NULL, per, 1, 1024, "K",                               \
		    "games one worker thread plays, their leaves evaluated as one batch",         \
		    .def = "the games split evenly over the CPU lanes, else 1")

/* A command (or a subcommand such as "bench nn"): its table, its help
 * text and where positional arguments go. */
typedef struct cli_spec {
	const char *cmd;        /* "match", "bench nn": in messages and the usage line */
	const char *prog;       /* the usage line's command when not cmd ("db" for
				 * "usage: sente db FILE stats"), or NULL */
	const char *usage;      /* after "usage: sente CMD ", e.g. "A B [options]" */
	const char *about;      /* paragraphs after the usage line, or NULL */
	const cli_opt *opts;    /* the table */
	int n_opts;             /* its entries */
	const char *after;      /* text after the option lines, or NULL */
	const char **pos;       /* positional arguments out; NULL: none taken */
	int pos_max;            /* room in pos */
	int *pos_n;             /* out: positional arguments found */
	const char *pos_extra;  /* message for one too many, with a %s for it;
				 * NULL: "unexpected argument '%s'" */
} cli_spec;

/* Parses argv (argv[0] is the command's name) into the table's fields, in
 * order, the last of a repeated option winning; "--" ends the options.
 * Returns true when the command should go on. Otherwise *rc is the exit
 * status: 0 when -h or --help was given (the help is printed on stdout),
 * 2 on a usage error (reported on stderr as
 * "sente CMD: ... (see 'sente CMD --help')"): an unknown option, a
 * missing value, a value out of bounds or not a choice, a positional
 * argument too many. */
bool cli_opt_parse(const cli_spec *spec, int argc, char **argv, int *rc);

/* Prints the help: the usage line, the about text, the option lines
 * (aligned, wrapped, each with its default) and the after text. Call it
 * before parsing so that the defaults shown are the fields' values. */
void cli_opt_help(const cli_spec *spec, FILE *f);

#endif
