/* capture: head + tail windows, and the head handed to on_head (the
 * output events) as it arrives. */
#include "supervise/supervise.h"

#include <criterion/criterion.h>
#include <string.h>

struct seen {
	char buf[256];
	size_t len;
	int calls, stream;
};

static void
record(void *data, int stream, const char *buf, size_t n)
{
	struct seen *s = data;
	memcpy(s->buf + s->len, buf, n);
	s->len += n;
	s->calls++;
	s->stream = stream;
}

Test(capture_feed, head_goes_to_on_head_as_it_arrives)
{
	struct capture c;
	struct seen s = {0};
	capture_init(&c, 16, 2, -1); /* 8 bytes of head, 8 of tail */
	c.on_head = record;
	c.on_head_data = &s;
	capture_feed(&c, "abc", 3);
	cr_expect_eq(s.calls, 1);
	capture_feed(&c, "defghijklmnop", 13);
	cr_expect_eq(s.len, 8, "only the head is handed on: %zu", s.len);
	cr_expect(!memcmp(s.buf, "abcdefgh", 8));
	cr_expect_eq(s.stream, 2);
	capture_feed(&c, "qrstuvwxyz", 10);
	cr_expect_eq(s.calls, 2, "nothing more once the head is full");
	cr_expect_eq(capture_omitted(&c), 26 - 16);
	capture_fini(&c);
}
