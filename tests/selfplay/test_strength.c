/* Connect Four error rates against the solver-labelled positions. */
#include <criterion/criterion.h>

#include "engine/clock.h"
#include "selfplay/strength.h"

Test(strength, sets_load_and_perfect_search_scores_low)
{
	char dir[4096], err[256];
	cr_assert_eq(c4bench_find(dir, sizeof(dir)), 0, "data/connect4 not found from the repository root");
	c4bench b;
	cr_assert_eq(c4bench_load(dir, &b, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(b.n_sets, 6);
	int total = 0;
	for (int i = 0; i < b.n_sets; i++)
		total += b.set[i].n;
	cr_assert_eq(total, 2758, "every labelled position loads (%d)", total);

	evaluator *ev = eval_new(NULL, 0, NN_ENC_C4, NULL, err, sizeof(err));
	cr_assert(ev);
	c4bench_result net[C4BENCH_MAX_SETS], srch[C4BENCH_MAX_SETS];
	/* Uniform "network": always the first legal column, a poor agent. */
	cr_assert_eq(c4bench_network(&b, ev, 60, NULL, net), 6);
	/* end-easy positions end within 14 moves: a uniform-policy search
	 * with enough visits sees most wins and losses and must do much better
	 * than the first-legal-column agent there. */
	cr_assert_eq(c4bench_search(&b, ev, 3000, 2, 60, 0, NULL, srch), 6);
	int e = 5; /* end-easy */
	cr_assert_str_eq(net[e].name, "end-easy");
	cr_assert_eq(net[e].n, 60);
	double net_rate = (double)net[e].errors / net[e].n;
	double srch_rate = (double)srch[e].errors / srch[e].n;
	cr_log_info("end-easy error rate: first legal column %.2f, search %.2f", net_rate, srch_rate);
	cr_assert(srch_rate < net_rate * 0.6, "search %.2f vs naive %.2f", srch_rate, net_rate);
	/* A deadline already past: cut short before the first position. */
	cr_assert_eq(c4bench_search(&b, ev, 3000, 2, 60, clock_now() - 1, NULL, srch),
		     C4BENCH_CUT_SHORT);
	/* A signal's flag set: both stop before the first position. */
	volatile sig_atomic_t stop = 1;
	cr_assert_eq(c4bench_network(&b, ev, 60, &stop, net), C4BENCH_CUT_SHORT);
	cr_assert_eq(c4bench_search(&b, ev, 3000, 2, 60, 0, &stop, srch), C4BENCH_CUT_SHORT);
	eval_free(ev);
	c4bench_free(&b);
}

Test(strength, malformed_file_is_refused)
{
	char err[256];
	c4bench b;
	cr_assert_eq(c4bench_load("/nonexistent", &b, err, sizeof(err)), -1);
	cr_assert(strstr(err, "no Connect Four position sets"), "%s", err);
}
