#include "tests/cli/cli_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "train/comm.h"

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
	return cli_test_shell(cmd, out, len);
}

int cli_test_shell(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen %s", cmd);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	int st = pclose(f);
	cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
	return WEXITSTATUS(st);
}

void cli_test_need_mpirun(void)
{
#if defined(__SANITIZE_ADDRESS__)
	cr_skip_test("not under AddressSanitizer: Open MPI's start-up leaks");
#endif
	if (!comm_mpi_built())
		cr_skip_test("sente was built without MPI (apt-get install libopenmpi-dev)");
	if (system("command -v mpirun >/dev/null 2>&1") != 0)
		cr_skip_test("mpirun not found (apt-get install openmpi-bin)");
	/* CI runs as root, which Open MPI refuses unless told twice. */
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	/* hwloc's OpenCL probe loads vendor ICDs at MPI_Init, which is slow
	 * and, on some machines, refused under sanitizers: ranks need none. */
	setenv("HWLOC_COMPONENTS", "-opencl", 1);
}
