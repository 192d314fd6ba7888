/* server/harness.h - the JSON-RPC methods for harnesses (harness.c):
 * sandbox.*, policy.*, tool.route, approval.*, audit.verify. */
#ifndef WD_SERVER_HARNESS_H
#define WD_SERVER_HARNESS_H

#include "server/rpc.h"

#include <jansson.h>

struct srv;
struct call;

/* harness.c: the images a caller may choose (--image, --allow-image) */
json_t *srv_images_offered(const struct srv *s);

json_t *h_sandbox_create(struct call *c, struct rpc_err *e);
/* sandbox.create with these params (the MCP tool's): c->created is set. */
json_t *sandbox_create_with(struct call *c, json_t *params, struct rpc_err *e);
json_t *h_sandbox_destroy(struct call *c, struct rpc_err *e);
json_t *h_sandbox_files(struct call *c, struct rpc_err *e);
json_t *h_policy_check(struct call *c, struct rpc_err *e);
json_t *h_tool_route(struct call *c, struct rpc_err *e);
json_t *h_approval_list(struct call *c, struct rpc_err *e);
json_t *h_approval_grant(struct call *c, struct rpc_err *e);
json_t *h_audit_verify(struct call *c, struct rpc_err *e);

#endif
