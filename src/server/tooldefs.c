/* server/tooldefs: the MCP tools, one entry each: name, the JSON
 * definition tools/list publishes (title, description, input and output
 * schemas, annotations), and the handlers tools/call dispatches to.
 *
 * The definitions are parsed once: the input schemas here are the ones
 * tools/call checks the arguments against (schema.c), so the description
 * a model reads and the check it meets cannot drift apart.  The
 * annotations follow MCP's ToolAnnotations: readOnlyHint (changes
 * nothing), destructiveHint (may change or delete what exists),
 * idempotentHint (the same call twice does nothing more), openWorldHint
 * (reaches beyond the workspace; run_command's is set from the policy's
 * network.allow when the server starts). */
#include "server/tools.h"
#include "server/base.h"

#include <pthread.h>
#include <string.h>

/* Handlers are left out of a build of the message layer alone (the fuzz
 * targets of fuzz/meson.build define WD_SERVER_SCHEMAS_ONLY): it checks
 * arguments against the schemas and never dispatches a call. */
#ifdef WD_SERVER_SCHEMAS_ONLY
#define H(f) NULL
#else
#define H(f) f
#endif

/* What a tool given a "sandbox" says of it: the property's description
 * (run there, or work on its view), and the end of the sentence added to
 * the tool's description. */
#define SANDBOX_RUN                                                                                \
	"a sandbox id from sandbox_create: run in that sandbox (packages and /tmp persist) "       \
	"instead of a fresh one"
#define SANDBOX_VIEW                                                                               \
	"a sandbox id from sandbox_create: work on that sandbox's view of the workspace "          \
	"instead of the project's"
#define DIFF_MORE                                                                                  \
	": a cow sandbox's diff is its exact change set (what a human would apply), git is "       \
	"not needed"

/* clang-format off */
const struct mcp_tool mcp_tools[] = {
{"run_command", 0, SANDBOX_RUN, "", H(mcp_offer_network), H(mcp_run_command), H(session_run),
"{\"name\":\"run_command\",\"title\":\"Run a command in a sandbox\","
"\"description\":\"Run one command in a fresh, isolated sandbox whose working directory is the "
"workspace (/workspace). The command is one program with its arguments, split into words as a "
"shell would (quotes work) but never run by a shell: pipes, redirections, ;, &&, ||, $VAR, "
"globs and backquotes are refused, so run several commands as several calls. A policy decides "
"which programs may run; a refusal says which rule refused it and what to do instead. Some "
"commands (git push) pause until a human approves them. There is no network unless the policy "
"allows hosts. Output is kept as head and tail windows; the middle of a long output is omitted "
"and counted.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":65536,\"description\":"
"\"the program and its arguments, e.g. \\\"pytest -q tests/test_api.py\\\"\"},"
"\"cwd\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"working directory, "
"relative to the workspace (default: its root)\"},"
"\"timeout\":{\"type\":\"number\",\"minimum\":0.001,\"maximum\":86400,\"description\":"
"\"seconds before the command is killed (default, and at most: the server's)\"}},"
"\"required\":[\"command\"],\"additionalProperties\":false},"
"\"outputSchema\":{\"type\":\"object\",\"properties\":{"
"\"outcome\":{\"type\":\"string\",\"enum\":[\"ran\",\"denied\",\"paused\"]},"
"\"status\":{\"type\":\"integer\",\"description\":\"exit status as a shell reports it; 124 "
"timed out, 126 refused, 123 paused\"},"
"\"exit_code\":{\"type\":[\"integer\",\"null\"]},\"signal\":{\"type\":[\"integer\",\"null\"]},"
"\"timed_out\":{\"type\":\"boolean\"},\"oom_killed\":{\"type\":\"boolean\"},"
"\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
"\"stdout_total_bytes\":{\"type\":\"integer\"},\"stdout_omitted_bytes\":{\"type\":\"integer\"},"
"\"stderr_total_bytes\":{\"type\":\"integer\"},\"stderr_omitted_bytes\":{\"type\":\"integer\"},"
"\"wall_ms\":{\"type\":\"number\"},\"sandbox_id\":{\"type\":\"string\"},"
"\"policy\":{\"type\":\"string\"},\"rule\":{\"type\":\"string\"},\"reason\":{\"type\":\"string\"},"
"\"advice\":{\"type\":\"string\"},\"approval_id\":{\"type\":\"string\"},"
"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
"\"protections\":{\"type\":\"object\"},"
"\"pooled\":{\"type\":\"boolean\",\"description\":\"the sandbox came from the server's warm "
"pool (built ahead, used once)\"}},"
"\"required\":[\"outcome\",\"status\"]},"
"\"annotations\":{\"title\":\"Run a command\",\"readOnlyHint\":false,\"destructiveHint\":true,"
"\"idempotentHint\":false,\"openWorldHint\":false}}"},
{"read_file", 0, SANDBOX_VIEW, "", NULL, H(mcp_file_tool), H(session_file),
"{\"name\":\"read_file\",\"title\":\"Read a workspace file\","
"\"description\":\"Read a text file of the workspace, by lines: offset is the first line "
"(1-based), limit the number of lines. At most 64 KiB are returned per call; the rest is "
"counted, and the reply says which offset to ask for next.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"relative "
"to the workspace, or absolute below /workspace\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"first line, 1-based "
"(default 1)\"},"
"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000,\"description\":\"lines "
"(default 2000)\"}},"
"\"required\":[\"path\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Read a file\",\"readOnlyHint\":true,\"destructiveHint\":false,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"write_file", 0, SANDBOX_VIEW, "", NULL, H(mcp_file_tool), H(session_file),
"{\"name\":\"write_file\",\"title\":\"Write a workspace file\","
"\"description\":\"Create or replace a file of the workspace with the given text, atomically. "
"Missing parent directories are created. Protected paths (.git at any depth, "
".gitmodules, .envrc, .vscode, .idea, and those the policy's workspace.protect names), "
"paths with a .. component and symlinks are refused.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
"\"content\":{\"type\":\"string\",\"maxLength\":8388608}},"
"\"required\":[\"path\",\"content\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Write a file\",\"readOnlyHint\":false,\"destructiveHint\":true,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"edit_file", 0, SANDBOX_VIEW, "", NULL, H(mcp_file_tool), H(session_file),
"{\"name\":\"edit_file\",\"title\":\"Edit a workspace file\","
"\"description\":\"Replace an exact string in a file of the workspace. old_string must occur "
"exactly once (give more context to make it unique), unless replace_all is true.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096},"
"\"old_string\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1048576},"
"\"new_string\":{\"type\":\"string\",\"maxLength\":1048576},"
"\"replace_all\":{\"type\":\"boolean\",\"description\":\"replace every occurrence "
"(default false)\"}},"
"\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Edit a file\",\"readOnlyHint\":false,\"destructiveHint\":true,"
"\"idempotentHint\":false,\"openWorldHint\":false}}"},
{"list_dir", 0, SANDBOX_VIEW, "", NULL, H(mcp_file_tool), H(session_file),
"{\"name\":\"list_dir\",\"title\":\"List a workspace directory\","
"\"description\":\"List a directory of the workspace: names, types and sizes, directories "
"first, to the given depth. At most 1000 entries.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"default: the "
"workspace's root\"},"
"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5,\"description\":\"levels "
"(default 1)\"}},"
"\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"List a directory\",\"readOnlyHint\":true,\"destructiveHint\":false,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"search_files", 0, SANDBOX_VIEW, "", NULL, H(mcp_file_tool), H(session_file),
"{\"name\":\"search_files\",\"title\":\"Search the workspace\","
"\"description\":\"Search the text files of the workspace for a string (or an extended regular "
"expression with regex true), like grep -rn. Binary files, .git and files over 8 MiB are "
"skipped; at most max_results matching lines are returned.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1000},"
"\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"a directory or file "
"(default: the workspace)\"},"
"\"regex\":{\"type\":\"boolean\",\"description\":\"pattern is a POSIX extended regular "
"expression (default: a plain string)\"},"
"\"ignore_case\":{\"type\":\"boolean\"},"
"\"glob\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"only files whose name "
"matches, e.g. *.py\"},"
"\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":"
"\"default 100\"}},"
"\"required\":[\"pattern\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Search files\",\"readOnlyHint\":true,\"destructiveHint\":false,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"workspace_diff", 0, SANDBOX_VIEW, DIFF_MORE, NULL, H(mcp_diff_tool), H(session_diff),
"{\"name\":\"workspace_diff\",\"title\":\"Show the workspace's changes\","
"\"description\":\"Show what changed in the workspace: the files git sees as changed, then a "
"unified diff against HEAD (git runs in a sandbox). The workspace must be a git repository.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"only this file or "
"directory\"}},"
"\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Workspace diff\",\"readOnlyHint\":true,\"destructiveHint\":false,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"sandbox_create", 0, NULL, NULL, H(mcp_offer_images), H(session_create), NULL,
"{\"name\":\"sandbox_create\",\"title\":\"Create a sandbox that lasts\","
"\"description\":\"Create a live sandbox that lasts across calls, and return its id. Pass the id "
"as the sandbox argument of run_command, the file tools and workspace_diff to work in it: "
"installed packages, files in /tmp and the home directory persist between commands. With "
"workspace_mode cow (the default where the host can make one) the sandbox works on its own "
"copy-on-write layer over the workspace: nothing you write reaches the project until a human "
"reviews the change set (workspace_diff shows it) and applies it; you cannot apply it yourself. "
"With direct, writes go to the project at once. The sandbox ends with sandbox_destroy or when "
"this connection ends, its unapplied changes with it.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"workspace_mode\":{\"type\":\"string\",\"enum\":[\"cow\",\"direct\"],\"description\":"
"\"cow: a reviewable layer over the workspace (default where the host can make one); direct: "
"the workspace itself\"},"
"\"limits\":{\"type\":\"object\",\"properties\":{"
"\"memory\":{\"type\":\"number\",\"minimum\":1,\"description\":\"bytes\"},"
"\"pids\":{\"type\":\"number\",\"minimum\":1},"
"\"cpus\":{\"type\":\"number\",\"minimum\":0.001},"
"\"timeout\":{\"type\":\"number\",\"minimum\":0.001,\"description\":\"seconds per command\"},"
"\"output_limit\":{\"type\":\"number\",\"minimum\":1,\"description\":\"bytes\"},"
"\"tmp_size\":{\"type\":\"number\",\"minimum\":1,\"description\":\"bytes\"}},"
"\"additionalProperties\":false,\"description\":\"each at most the server's (default: the "
"server's)\"},"
"\"image\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200,\"description\":\"the "
"environment (programs, libraries) the sandbox runs: one of the images this server offers "
"(default: the server's own; another is refused with the list)\"}},"
"\"additionalProperties\":false},"
"\"outputSchema\":{\"type\":\"object\",\"properties\":{"
"\"sandbox\":{\"type\":\"string\"},\"workspace_mode\":{\"type\":\"string\",\"enum\":[\"cow\","
"\"direct\"]},\"isolation\":{\"type\":\"string\"},\"disk\":{\"type\":\"integer\"},"
"\"image\":{\"type\":[\"string\",\"null\"]},\"image_digest\":{\"type\":[\"string\",\"null\"]}},"
"\"required\":[\"sandbox\",\"workspace_mode\"]},"
"\"annotations\":{\"title\":\"Create a sandbox\",\"readOnlyHint\":false,\"destructiveHint\":false,"
"\"idempotentHint\":false,\"openWorldHint\":false}}"},
{"sandbox_list", MCP_T_LISTS, NULL, NULL, NULL, H(session_list), NULL,
"{\"name\":\"sandbox_list\",\"title\":\"List your sandboxes\","
"\"description\":\"List the live sandboxes this connection created, with their workspace "
"modes.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
"\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\","
"\"items\":{\"type\":\"object\"}}},\"required\":[\"sandboxes\"]},"
"\"annotations\":{\"title\":\"List sandboxes\",\"readOnlyHint\":true,\"destructiveHint\":false,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"sandbox_destroy", MCP_T_TAKES, NULL, NULL, NULL, NULL, H(session_destroy),
"{\"name\":\"sandbox_destroy\",\"title\":\"Destroy a sandbox\","
"\"description\":\"End a sandbox made by sandbox_create: its processes are killed and its "
"files in /tmp and home go. A cow sandbox's changes that a human has not applied are lost.\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"sandbox\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,\"description\":\"the id "
"sandbox_create returned\"}},"
"\"required\":[\"sandbox\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Destroy a sandbox\",\"readOnlyHint\":false,"
"\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}}"},
{"workspace_discard", 0, NULL, NULL, NULL, NULL, H(session_discard),
"{\"name\":\"workspace_discard\",\"title\":\"Discard a sandbox's changes\","
"\"description\":\"Drop the changes of a copy-on-write sandbox (all of them, or those at or "
"below paths): the sandbox sees the project's files again. What is discarded cannot be "
"recovered. (Applying changes to the project is a human's decision: there is no tool for "
"it.)\","
"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
"\"sandbox\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64},"
"\"paths\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1,"
"\"maxLength\":4096},\"maxItems\":256,\"description\":\"only these files or directories "
"(default: every change)\"}},"
"\"required\":[\"sandbox\"],\"additionalProperties\":false},"
"\"annotations\":{\"title\":\"Discard changes\",\"readOnlyHint\":false,\"destructiveHint\":true,"
"\"idempotentHint\":true,\"openWorldHint\":false}}"},
};
/* clang-format on */
const size_t mcp_ntools = ARRAY_SIZE(mcp_tools);

/* A tool that takes an optional "sandbox" (one made by sandbox_create,
 * session.c) gets the property and a sentence of description here, once,
 * so that the schema the model reads is the one its arguments are
 * checked against. */
static void
add_sandbox_arg(json_t *t, const struct mcp_tool *m)
{
	json_t *props = json_object_get(json_object_get(t, "inputSchema"), "properties");
	json_object_set_new(props, "sandbox",
			    json_pack("{s:s, s:i, s:i, s:s}", "type", "string", "minLength", 1,
				      "maxLength", 64, "description", m->sandbox_arg));
	const char *d = json_string_value(json_object_get(t, "description"));
	char *more = xasprintf(
	    "%s With sandbox (an id from sandbox_create) it works in that sandbox%s; in a cow "
	    "sandbox the project itself is untouched until a human applies the changes.",
	    d, m->sandbox_more);
	json_object_set_new(t, "description", json_string(more));
	free(more);
}

json_t *
tooldefs_load(void)
{
	json_t *all = json_array();
	for (size_t i = 0; i < mcp_ntools; i++) {
		json_error_t je;
		json_t *t = json_loads(mcp_tools[i].def, JSON_REJECT_DUPLICATES, &je);
		/* a broken built-in table is a broken invariant: its JSON, or an
		 * entry whose name is not its definition's */
		const char *name = json_string_value(json_object_get(t, "name"));
		if (!json_is_object(t) || !name || strcmp(name, mcp_tools[i].name))
			abort();
		if (mcp_tools[i].sandbox_arg)
			add_sandbox_arg(t, &mcp_tools[i]);
		json_array_append_new(all, t);
	}
	return all;
}

const struct mcp_tool *
mcp_tool_find(const char *name)
{
	for (size_t i = 0; i < mcp_ntools; i++)
		if (!strcmp(mcp_tools[i].name, name))
			return &mcp_tools[i];
	return NULL;
}

static json_t *builtin_tools;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void
load_builtin(void)
{
	builtin_tools = tooldefs_load();
}

const json_t *
mcp_tool_schema(const char *tool)
{
	pthread_once(&builtin_once, load_builtin);
	size_t i;
	json_t *t;
	json_array_foreach(builtin_tools, i, t)
	{
		if (!strcmp(json_string_value(json_object_get(t, "name")), tool))
			return json_object_get(t, "inputSchema");
	}
	return NULL;
}

/* The MCP protocol versions warden speaks, newest first. */
const char *const mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

bool
mcp_version_known(const char *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(mcp_versions); i++)
		if (!strcmp(v, mcp_versions[i]))
			return true;
	return false;
}
