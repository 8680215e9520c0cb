/* report.h: a run's report as one self-contained HTML page with SVG
 * charts (loss, positions, strength over time), from the store's metrics. */
#ifndef SENTE_CLI_REPORT_H
#define SENTE_CLI_REPORT_H

#include <stddef.h>

#include "data/store.h"
#include "engine/game.h"

/* Writes the report to path (through a temporary file and a rename).
 * 0, or -1 with a message. */
int report_write(store *db, const char *path, game_kind kind, char *err, size_t errlen);

#endif
