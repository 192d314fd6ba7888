/* server/mcp: the Model Context Protocol methods (initialize, tools/list,
 * tools/call) over whatever transport the peer uses.
 *
 * Protocol versions: the client proposes one in initialize; warden
 * answers with the same when it speaks it, else with its newest, and the
 * client decides whether to go on (MCP's lifecycle, "Version
 * Negotiation").  What changed between the versions warden speaks does
 * not touch the methods it offers: tools with structuredContent and
 * outputSchema (2025-06-18) are sent to every client, and older clients
 * ignore the members they do not know.
 *
 * A connection that sent initialize is a model's channel from then on:
 * approval.grant and approval.list are refused on it (dispatch.c). */
#include "server/mcp.h"
#include "server/rpc.h"
#include "server/sanitize.h"
#include "server/schema.h"
#include "server/tools.h"
#include "server/srv.h"
#include "server/run.h"

#include <stdio.h>
#include <string.h>

json_t *
mcp_initialize(struct call *c, struct rpc_err *e)
{
	struct srv *s = c->srv;
	struct peer *p = c->peer;
	const char *want = NULL;
	if (!p_str(c->params, "protocolVersion", true, &want, e))
		return NULL;
	json_t *caps = json_object_get(c->params, "capabilities");
	if (caps && !json_is_object(caps)) {
		rpc_err_set(e, RPC_INVALID_PARAMS,
			    "Invalid params: 'capabilities' must be an object");
		return NULL;
	}
	const char *v = mcp_version_known(want) ? want : mcp_versions[0];
	p->mcp = true;
	snprintf(p->proto, sizeof(p->proto), "%s", v);
	const char *name =
	    json_string_value(json_object_get(json_object_get(c->params, "clientInfo"), "name"));
	snprintf(p->client, sizeof(p->client), "%s", name ? name : "?");
	srv_log(s, WD_LOG_INFO, "MCP session %llu: client '%s', protocol %s",
		(unsigned long long)p->seq, p->client, v);
	return json_pack(
	    "{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", v, "capabilities",
	    "tools", "listChanged", 0, "serverInfo", "name", "warden", "title",
	    "warden: a sandbox for an agent's commands", "version", "0.1.0", "instructions",
	    "Commands run in a fresh sandbox with the workspace at /workspace, behind a policy, "
	    "or in a sandbox of yours that lasts (sandbox_create; its copy-on-write changes reach "
	    "the project only when a human applies them). "
	    "One program per run_command call, never a shell: no pipes, redirections, ; or &&. "
	    "A refusal says why and what to do instead; a pause needs a human's approval, which "
	    "you cannot give. Use the file tools for reading and editing files.");
}

json_t *
mcp_tools_list(struct call *c, struct rpc_err *e)
{
	(void)e;
	return json_pack("{s:O}", "tools", c->srv->tools);
}

json_t *
mcp_tool_result(struct srv *s, const char *text, json_t *structured, bool is_error)
{
	size_t n = 0;
	char *clean = sanitize_text(text, strlen(text), true, NULL, &n);
	if (s->o.sanitize_images) {
		size_t na = 0;
		const char *const *allow =
		    s->policy ? wd_policy_network_allow(s->policy, &na) : NULL;
		char *safe = sanitize_images(clean, allow, na);
		free(clean);
		clean = safe;
	}
	json_t *r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", clean,
			      "isError", is_error);
	free(clean);
	if (!r)
		abort();
	if (structured && s->o.sanitize_images) {
		size_t na = 0;
		const char *const *allow =
		    s->policy ? wd_policy_network_allow(s->policy, &na) : NULL;
		sanitize_images_json(structured, allow, na);
	}
	if (structured)
		json_object_set_new(r, "structuredContent", structured);
	return r;
}

/* Is the tool refused by the policy's own definition of it?  A policy
 * that defines a tool as blocked removes it; one that does not define
 * it leaves warden's built-in tools available (they are direct tools by
 * nature: file tools in warden, commands through the policy). */
bool
mcp_tool_blocked(struct srv *s, const char *tool)
{
	struct route rt;
	route_lookup(s, tool, &rt);
	return rt.defined && rt.klass == WD_TOOL_BLOCKED;
}

void
route_lookup(const struct srv *s, const char *tool, struct route *out)
{
	struct wd_err err = {0};
	*out = (struct route){.tool = tool};
	out->defined =
	    s->policy && tool &&
	    wd_policy_route(s->policy, tool, &out->klass, &out->profile, &out->limits, &err) == 0;
	if (out->defined)
		out->image = wd_policy_tool_image(s->policy, tool);
}

json_t *
mcp_tools_call(struct call *c, struct rpc_err *e)
{
	struct srv *s = c->srv;
	const char *name = NULL;
	if (!p_str(c->params, "name", true, &name, e))
		return NULL;
	json_t *args = json_object_get(c->params, "arguments");
	if (args && !json_is_object(args)) {
		rpc_err_set(e, RPC_INVALID_PARAMS, "Invalid params: 'arguments' must be an object");
		return NULL;
	}
	const struct mcp_tool *t = mcp_tool_find(name);
	const json_t *schema = mcp_tool_schema(name);
	/* the one look-up of the tool's route for this call: the handlers
	 * read c->route */
	route_lookup(s, name, &c->route);
	if (!t || !schema || (c->route.defined && c->route.klass == WD_TOOL_BLOCKED)) {
		rpc_err_set(e, RPC_INVALID_PARAMS, "Unknown tool: '%.100s'", name);
		return NULL;
	}
	json_t *empty = json_object();
	if (!args)
		args = empty;
	char why[300];
	if (schema_check(schema, args, why, sizeof(why)) < 0) {
		char text[400];
		snprintf(text, sizeof(text), "invalid arguments for %s: %s", name, why);
		json_decref(empty);
		return mcp_tool_result(s, text, NULL, true);
	}
	json_t *r;
	/* given a sandbox (or a tool of one alone): the live sandbox's
	 * handler (session.c) */
	if (t->live && (!t->call || json_object_get(args, "sandbox")))
		r = session_tool(c, t, args, e);
	else
		r = t->call(c, t->name, args, e);
	json_decref(empty);
	return r;
}

/* The table's handlers for the tools on the server's own workspace. */
json_t *
mcp_run_command(struct call *c, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	return run_command_tool(c, args, e);
}

json_t *
mcp_file_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e)
{
	return file_tool(c, c->srv->ws, name, args, true, e);
}

json_t *
mcp_diff_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e)
{
	(void)name;
	return diff_tool(c, args, e);
}
