#include "tests/cli/cli_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

const char *cli_test_bin(void)
{
	const char *b = getenv("SENTE_BIN");
	if (!b)
		cr_skip_test("SENTE_BIN is not set (run through make test)");
	return b;
}

int cli_test_run(const char *args, char *out, size_t len)
{
	return cli_test_run_within(0, args, out, len);
}

int cli_test_run_within(double seconds, const char *args, char *out, size_t len)
{
	char cmd[1024], limit[64] = "";
	if (seconds > 0)
		snprintf(limit, sizeof(limit), "timeout -k 1 %g ", seconds);
	snprintf(cmd, sizeof(cmd), "%s%s %s 2>&1", limit, cli_test_bin(), args);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
	return WEXITSTATUS(st);
}
