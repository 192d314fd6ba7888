/* Placeholder until the policy layer (issue 3) lands: these subcommands
 * refuse with status 125 rather than pretend to work. */
#include "cli/cli.h"

int
cli_check(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_fail("check", "not built yet");
}
int
cli_approve(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_fail("approve", "not built yet");
}
int
cli_audit(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_fail("audit", "not built yet");
}
int
cli_policy(int argc, char **argv)
{
	(void)argc, (void)argv;
	return cli_fail("policy", "not built yet");
}
