/* server/http.h - HTTP/1.1 request heads (http.c, pure): parse a head,
 * read Accept, name a status.  The connections that serve them are
 * conn.h's. */
#ifndef WD_SERVER_HTTP_H
#define WD_SERVER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD 16384

struct http_req {
	char method[16];
	char path[256];
	int minor; /* HTTP/1.minor */
	bool has_length, chunked, keep_alive, expect_continue;
	uint64_t content_length;
	char auth[600];	   /* Authorization */
	char session[128]; /* Mcp-Session-Id */
	char version[40];  /* MCP-Protocol-Version */
	char origin[256];
	char host[256];
	char accept[256];
	char content_type[128];
	size_t head_len; /* bytes of the head, blank line included */
};

/* Parse the request head at buf.  1: complete, r filled; 0: incomplete;
 * negative: -HTTP status to answer with (400, 431, 501, 505). */
int http_parse_head(const char *buf, size_t len, struct http_req *r);
/* Whether accept lists type (or a wildcard covering it). */
bool http_accepts(const char *accept, const char *type);
const char *http_reason(int status);

#endif
