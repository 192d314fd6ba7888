/* Fuzz target: the proxy's HTTP/1.1 request-head parser, the target
 * parsers, the response-head parser and chunked body framing. */
#include "net/net-internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct net_http_head *h = malloc(sizeof(*h));
	if (!h)
		return 0;
	int rc = net_http_parse_request(buf, size, h);
	if (rc == 1) {
		struct net_target t;
		net_http_parse_absolute(buf + h->target.off, h->target.len, &t);
		net_http_parse_authority(buf + h->target.off, h->target.len, &t);
		for (unsigned i = 0; i < h->n_headers; i++)
			(void)net_http_hop_by_hop(buf, h, i, true);
		/* whatever follows the head, as a body of the framing parsed */
		struct net_body b;
		net_body_init(&b, h->body == NET_BODY_NONE ? NET_BODY_CHUNKED : h->body,
			      h->content_length);
		size_t off = h->head_len;
		while (off < size && !b.done) {
			size_t step = 1 + (size - off) / 3;
			ssize_t k =
			    net_body_feed(&b, buf + off, step < size - off ? step : size - off);
			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	rc = net_http_parse_response(buf, size, size & 1, h);
	if (rc == 1)
		for (unsigned i = 0; i < h->n_headers; i++)
			(void)net_http_hop_by_hop(buf, h, i, false);
	free(h);
	return 0;
}
