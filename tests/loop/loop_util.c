#include "tests/loop/loop_util.h"

#include <stdio.h>
#include <stdlib.h>

loop_options loop_test_options(const char *dir)
{
	game_params g = game_params_default(GAME_KIND_CONNECT4);
	loop_options o = loop_options_default(&g);
	snprintf(o.dir, sizeof(o.dir), "%s", dir);
	o.minutes = 10; /* a bound on self-play, not a duration */
	o.blocks = 1;
	o.channels = 8;
	o.parallel_games = 8;
	o.visits = 16;
	o.cheap_visits = 4;
	o.positions_per_iter = 60;
	o.window = 2000;
	o.batch = 32;
	o.eval_visits = 8;
	o.eval_positions = 3;
	o.measure_share = 1; /* every due measurement, whatever it costs */
	o.nn.kind = NN_BACKEND_CPU;
	o.quiet = true;
	return o;
}

void loop_test_rmdir(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}
