#include "cli/cli.h"

int
cli_run(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_fail("run", "not built yet");
}
