/* net/addr.c: host-name normalization, address literals and address
 * classes.  Pure functions; no I/O. */
#include "net/net.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

/* A destination class is judged on the IPv4 address an IPv6 address
 * carries when it is IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or
 * 6to4 (2002::/16): otherwise "[::ffff:127.0.0.1]" or "[::ffff:a9fe:a9fe]"
 * would reach loopback or the metadata service past a v4-only check, the
 * classic SSRF filter bypass. */
static bool
embedded_v4(const struct in6_addr *a, struct in_addr *out)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
	if (memcmp(a->s6_addr, mapped, 12) == 0 || memcmp(a->s6_addr, nat64, 12) == 0) {
		memcpy(&out->s_addr, a->s6_addr + 12, 4);
		return true;
	}
	if (a->s6_addr[0] == 0x20 && a->s6_addr[1] == 0x02) {
		memcpy(&out->s_addr, a->s6_addr + 2, 4);
		return true;
	}
	return false;
}

static enum net_addr_class
classify4(uint32_t a /* host order */)
{
	uint8_t b0 = a >> 24, b1 = (a >> 16) & 0xff, b2 = (a >> 8) & 0xff;
	if (b0 == 0)
		return NET_ADDR_UNSPECIFIED; /* 0.0.0.0/8, "this network" */
	if (b0 == 127)
		return NET_ADDR_LOOPBACK;
	if (b0 == 169 && b1 == 254)
		return NET_ADDR_LINK_LOCAL; /* cloud metadata 169.254.169.254 */
	if (b0 == 10 || (b0 == 172 && (b1 & 0xf0) == 16) || (b0 == 192 && b1 == 168))
		return NET_ADDR_PRIVATE;
	if (b0 == 100 && (b1 & 0xc0) == 64)
		return NET_ADDR_CGNAT;
	if (a == 0xffffffffu)
		return NET_ADDR_BROADCAST;
	if ((b0 & 0xf0) == 224)
		return NET_ADDR_MULTICAST;
	if ((b0 & 0xf0) == 240)
		return NET_ADDR_RESERVED;
	/* IETF protocol assignments, TEST-NETs and benchmarking: never a
	 * legitimate public destination. */
	if ((b0 == 192 && b1 == 0 && (b2 == 0 || b2 == 2)) ||
	    (b0 == 198 && b1 == 51 && b2 == 100) || (b0 == 203 && b1 == 0 && b2 == 113) ||
	    (b0 == 198 && (b1 & 0xfe) == 18))
		return NET_ADDR_RESERVED;
	return NET_ADDR_PUBLIC;
}

static enum net_addr_class
classify6(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;
	struct in_addr v4;
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return NET_ADDR_UNSPECIFIED;
	if (IN6_IS_ADDR_LOOPBACK(a))
		return NET_ADDR_LOOPBACK;
	if (embedded_v4(a, &v4))
		return classify4(ntohl(v4.s_addr));
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return NET_ADDR_LINK_LOCAL; /* fe80::/10 */
	if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0))
		return NET_ADDR_PRIVATE; /* fc00::/7, and deprecated site-local fec0::/10 */
	if (b[0] == 0xff)
		return NET_ADDR_MULTICAST;
	/* ::/96 (IPv4-compatible), 100::/64 (discard), 2001::/32 (Teredo, which
	 * hides an obfuscated IPv4 address), 2001:db8::/32 (documentation). */
	static const uint8_t zero12[12] = {0};
	if (memcmp(b, zero12, 12) == 0)
		return NET_ADDR_RESERVED;
	if (b[0] == 0x01 && b[1] == 0 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 &&
	    b[6] == 0 && b[7] == 0)
		return NET_ADDR_RESERVED;
	if (b[0] == 0x20 && b[1] == 0x01 &&
	    ((b[2] == 0 && b[3] == 0) || (b[2] == 0x0d && b[3] == 0xb8)))
		return NET_ADDR_RESERVED;
	return NET_ADDR_PUBLIC;
}

enum net_addr_class
net_addr_classify(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return classify4(
		    ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return classify6(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return NET_ADDR_RESERVED;
}

const char *
net_addr_class_name(enum net_addr_class c)
{
	switch (c) {
	case NET_ADDR_PUBLIC:
		return "public";
	case NET_ADDR_LOOPBACK:
		return "loopback";
	case NET_ADDR_LINK_LOCAL:
		return "link-local";
	case NET_ADDR_PRIVATE:
		return "private";
	case NET_ADDR_CGNAT:
		return "cgnat";
	case NET_ADDR_UNSPECIFIED:
		return "unspecified";
	case NET_ADDR_MULTICAST:
		return "multicast";
	case NET_ADDR_BROADCAST:
		return "broadcast";
	case NET_ADDR_RESERVED:
		return "reserved";
	}
	return "?";
}

/* Strict dotted quad: exactly four decimal parts 0..255 without leading
 * zeros.  inet_aton() would also take "0x7f.1" and "2130706433", and a
 * resolver would then turn those into 127.0.0.1 behind a name check. */
static bool
parse_v4(const char *s, size_t len, struct in_addr *out)
{
	uint32_t v = 0;
	unsigned parts = 0;
	size_t i = 0;
	while (parts < 4) {
		size_t start = i;
		unsigned n = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9' && i - start < 3)
			n = n * 10 + (unsigned)(s[i++] - '0');
		if (i == start || n > 255 || (i - start > 1 && s[start] == '0'))
			return false;
		v = (v << 8) | n;
		parts++;
		if (parts < 4) {
			if (i >= len || s[i] != '.')
				return false;
			i++;
		}
	}
	if (i != len)
		return false;
	out->s_addr = htonl(v);
	return true;
}

bool
net_addr_parse(const char *s, size_t len, uint16_t port, struct sockaddr_storage *sa)
{
	char tmp[64];
	memset(sa, 0, sizeof(*sa));
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
		if (len == 0 || len >= sizeof(tmp) || !memchr(s, ':', len))
			return false;
	}
	if (len == 0 || len >= sizeof(tmp))
		return false;
	struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)sa;
	if (parse_v4(s, len, &s4->sin_addr)) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		return true;
	}
	if (!memchr(s, ':', len))
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	/* A zone index ("fe80::1%eth0") names a host interface: refuse. */
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)sa;
	if (inet_pton(AF_INET6, tmp, &s6->sin6_addr) != 1)
		return false;
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	return true;
}

int
net_host_normalize(const char *host, size_t len, char *out, size_t cap)
{
	struct sockaddr_storage ss;
	if (len > 0 && host[len - 1] == '.' && !(len >= 2 && host[len - 2] == '.'))
		len--; /* one trailing dot: the root, "example.com." */
	if (len == 0)
		return -EINVAL;
	if (net_addr_parse(host, len, 0, &ss)) {
		const void *a =
		    ss.ss_family == AF_INET
			? (const void *)&((struct sockaddr_in *)(void *)&ss)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)(void *)&ss)->sin6_addr;
		char buf[INET6_ADDRSTRLEN];
		if (!inet_ntop(ss.ss_family, a, buf, sizeof(buf)) || strlen(buf) >= cap)
			return -EINVAL;
		strcpy(out, buf);
		return 0;
	}
	if (len > 253 || len >= cap)
		return -EINVAL;
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)host[i];
		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
		} else if (isalnum(c) || c == '-' || c == '_') {
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return -EINVAL;
	out[len] = '\0';
	/* An all-numeric last label is not a host name but a mangled address
	 * ("127.1", "0177.0.0.1"): some resolvers would map it to loopback. */
	const char *last = strrchr(out, '.');
	last = last ? last + 1 : out;
	if (strspn(last, "0123456789") == strlen(last) ||
	    (last[0] == '0' && (last[1] == 'x') &&
	     strspn(last + 2, "0123456789abcdef") == strlen(last + 2)))
		return -EINVAL;
	return 0;
}
