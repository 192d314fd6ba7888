/* server/tools.h - the MCP tool table (tooldefs.c): per tool its
 * definition (schemas, annotations) and its handlers, declared here and
 * defined where each tool is answered.  Pure without the
 * handlers: the fuzz target builds tooldefs.c with WD_SERVER_SCHEMAS_ONLY,
 * and this header names the server's calls, sandboxes and server object
 * only as incomplete types. */
#ifndef WD_SERVER_TOOLS_H
#define WD_SERVER_TOOLS_H

#include "server/rpc.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct srv;
struct call;
struct live;

/* tooldefs.c: the MCP tools, one entry each; tools/list and tools/call
 * both read this table (adding a tool is adding an entry). */
enum {
	MCP_T_LISTS = 1u << 0, /* reads the peer's sandboxes (taken on the loop thread) */
	MCP_T_TAKES = 1u << 1, /* takes its sandbox out of the peer's table (ends it) */
};
typedef json_t *(*mcp_call_fn)(struct call *c, const char *name, json_t *args, struct rpc_err *e);
typedef json_t *(*mcp_live_fn)(struct call *c, struct live *l, const char *name, json_t *args,
			       struct rpc_err *e);
struct mcp_tool {
	const char *name;
	unsigned flags; /* MCP_T_* */
	/* takes an optional "sandbox": the property's description, and the
	 * end of the sentence added to the tool's (NULL: takes none) */
	const char *sandbox_arg, *sandbox_more;
	/* tools/list: fits the definition to this server (or NULL) */
	void (*offer)(struct srv *s, json_t *def);
	mcp_call_fn call; /* tools/call without a sandbox (NULL: its schema requires one) */
	mcp_live_fn live; /* ... with the live sandbox "sandbox" names (NULL: takes none) */
	const char *def;  /* JSON: name, title, description, schemas, annotations */
};
extern const struct mcp_tool mcp_tools[];
extern const size_t mcp_ntools;
const struct mcp_tool *mcp_tool_find(const char *name);

/* The tools as tools/list shows them (a new array). */
json_t *tooldefs_load(void);
/* The tools' JSON Schemas, for mcp.c and the fuzz target. */
const json_t *mcp_tool_schema(const char *tool);
/* The MCP protocol versions this server speaks, newest first. */
extern const char *const mcp_versions[4];
bool mcp_version_known(const char *v);

/* The handlers of the table's entries, where each tool is answered. */
void mcp_offer_network(struct srv *s, json_t *def); /* server.c */
void mcp_offer_images(struct srv *s, json_t *def);  /* server.c */
json_t *mcp_run_command(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *mcp_file_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *mcp_diff_tool(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_create(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_list(struct call *c, const char *name, json_t *args, struct rpc_err *e);
json_t *session_run(struct call *c, struct live *l, const char *name, json_t *args,
		    struct rpc_err *e);
json_t *session_file(struct call *c, struct live *l, const char *name, json_t *args,
		     struct rpc_err *e);
json_t *session_diff(struct call *c, struct live *l, const char *name, json_t *args,
		     struct rpc_err *e);
json_t *session_destroy(struct call *c, struct live *l, const char *name, json_t *args,
			struct rpc_err *e);
json_t *session_discard(struct call *c, struct live *l, const char *name, json_t *args,
			struct rpc_err *e);

#endif
