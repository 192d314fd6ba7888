/* server/mcp.h - MCP on a peer (mcp.c: initialize, tools/list,
 * tools/call) and the tools on live sandboxes (session.c); the handlers
 * they answer with are tools.h's. */
#ifndef WD_SERVER_MCP_H
#define WD_SERVER_MCP_H

#include "server/rpc.h"
#include "server/tools.h"

#include <jansson.h>
#include <stdbool.h>

struct srv;
struct call;
struct peer;

/* mcp.c */
bool mcp_tool_blocked(struct srv *s, const char *tool);
json_t *mcp_initialize(struct call *c, struct rpc_err *e);
json_t *mcp_tools_list(struct call *c, struct rpc_err *e);
json_t *mcp_tools_call(struct call *c, struct rpc_err *e);
/* A tool result: content text (sanitised here), structuredContent, isError. */
json_t *mcp_tool_result(struct srv *s, const char *text, json_t *structured, bool is_error);

/* session.c: the MCP tools on live sandboxes (sandbox_create, _list,
 * _destroy, workspace_discard, and the tools given a "sandbox") */
/* On the loop thread, as tools/call is admitted: the sandbox its
 * arguments name, if this peer has it, becomes c->live (taken out of the
 * table by a tool that ends it); a tool that lists them gets the
 * table's ids. */
void session_admit(struct peer *p, struct call *c);
/* tools/call of t with a "sandbox": the live sandbox's handler, or a
 * tool error naming an id this peer does not have. */
json_t *session_tool(struct call *c, const struct mcp_tool *t, json_t *args, struct rpc_err *e);

#endif
