/* db.h: `sente db FILE stats|games|export-sgf|vacuum|models`, looking into
 * a run's store (data/store.h). Same signature and exit codes as the other
 * subcommands in cli/cli.h: 0 success, 1 the work failed (a missing or
 * corrupt database), 2 a usage error. */
#ifndef SENTE_CLI_DB_H
#define SENTE_CLI_DB_H

int cli_db(int argc, char **argv);

#endif
