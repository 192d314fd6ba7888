/* net/socks.c: the SOCKS5 handshake (RFC 1928), no authentication, CONNECT
 * only.  Pure parsers over the bytes received so far. */
#include "net/net.h"

#include <arpa/inet.h>
#include <string.h>

int
net_socks_parse_greeting(const uint8_t *buf, size_t len, bool *noauth)
{
	*noauth = false;
	if (len < 1)
		return 0;
	if (buf[0] != 5)
		return -1; /* SOCKS4 and anything else */
	if (len < 2)
		return 0;
	if (buf[1] == 0)
		return -1;
	size_t need = 2 + (size_t)buf[1];
	if (len < need)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (buf[i] == 0)
			*noauth = true;
	return (int)need;
}

int
net_socks_parse_request(const uint8_t *buf, size_t len, struct net_socks_request *req)
{
	memset(req, 0, sizeof(*req));
	if (len < 4)
		return len >= 1 && buf[0] != 5 ? -NET_SOCKS_FAIL : 0;
	if (buf[0] != 5 || buf[2] != 0)
		return -NET_SOCKS_FAIL;
	req->cmd = buf[1];
	req->atyp = buf[3];
	size_t alen;
	switch (buf[3]) {
	case 1:
		alen = 4;
		break;
	case 4:
		alen = 16;
		break;
	case 3:
		if (len < 5)
			return 0;
		alen = 1 + (size_t)buf[4];
		if (buf[4] == 0)
			return -NET_SOCKS_FAIL;
		break;
	default:
		return -NET_SOCKS_ATYP;
	}
	size_t need = 4 + alen + 2;
	if (len < need)
		return 0;
	if (req->cmd != 1)
		return -NET_SOCKS_CMD; /* BIND and UDP ASSOCIATE: not offered */
	const uint8_t *a = buf + 4;
	if (buf[3] == 1) {
		inet_ntop(AF_INET, a, req->host, sizeof(req->host));
	} else if (buf[3] == 4) {
		inet_ntop(AF_INET6, a, req->host, sizeof(req->host));
	} else {
		size_t n = buf[4];
		memcpy(req->host, a + 1, n);
		req->host[n] = '\0';
		if (memchr(req->host, '\0', n))
			return -NET_SOCKS_FAIL;
	}
	req->port = (uint16_t)((buf[need - 2] << 8) | buf[need - 1]);
	if (req->port == 0)
		return -NET_SOCKS_FAIL;
	return (int)need;
}
