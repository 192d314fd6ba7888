/* jail/sync: the protocol table and the two calls that enforce it.  Used
 * on both sides of clone(): nothing here allocates or formats. */
#include "jail/sync.h"
#include "jail/raw.h"
#include "util/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Who may send a message. */
#define FROM_SUP (1u << SYNC_SUPERVISOR)
#define FROM_PID1 (1u << SYNC_PID1)
#define FROM_CMD (1u << SYNC_COMMAND)
#define ST(s) (1u << (s))
#define STAY (-1)

struct sync_rule {
	const char *name;
	unsigned senders; /* FROM_* */
	unsigned send_in; /* states (ST()) the sender may send it in */
	unsigned recv_in; /* states the receiver may accept it in */
	int min_fds, max_fds;
	int next; /* state both ends move to, or STAY */
};

/* The protocol.  send_in and recv_in differ only for EXEC: the supervisor
 * may queue a command behind the set-up (it is in MAPPED or SETUP by its
 * own count) or behind a vacant sandbox's ATTACH (ATTACHING), pid 1 reads
 * it only when IDLE.  Every other message is
 * legal in the same states at both ends. */
/* clang-format off */
static const struct sync_rule rules[SYNC__COUNT] = {
	[SYNC_GO]          = {"go",          FROM_SUP,  ST(SYNC_S_CLONED), ST(SYNC_S_CLONED), 0, 0, SYNC_S_MAPPED},
	[SYNC_CGROUP]      = {"cgroup",      FROM_SUP,  ST(SYNC_S_MAPPED), ST(SYNC_S_MAPPED), 0, SYNC_MAX_FDS, SYNC_S_SETUP},
	[SYNC_NET_READY]   = {"net-ready",   FROM_PID1, ST(SYNC_S_MAPPED) | ST(SYNC_S_SETUP),
					    ST(SYNC_S_MAPPED) | ST(SYNC_S_SETUP), 3, 3, STAY},
	[SYNC_READY]       = {"ready",       FROM_PID1, ST(SYNC_S_SETUP),  ST(SYNC_S_SETUP),  0, 0, SYNC_S_IDLE},
	[SYNC_ERROR]       = {"error",       FROM_PID1, ST(SYNC_S_CLONED) | ST(SYNC_S_MAPPED) | ST(SYNC_S_SETUP) | ST(SYNC_S_ATTACHING),
					    ST(SYNC_S_CLONED) | ST(SYNC_S_MAPPED) | ST(SYNC_S_SETUP) | ST(SYNC_S_ATTACHING), 0, 0, SYNC_S_DEAD},
	[SYNC_EXEC]        = {"exec",        FROM_SUP,  ST(SYNC_S_MAPPED) | ST(SYNC_S_SETUP) | ST(SYNC_S_IDLE) | ST(SYNC_S_ATTACHING),
					    ST(SYNC_S_IDLE), SYNC_EXEC_NFDS, SYNC_EXEC_NFDS, STAY},
	[SYNC_EXEC_FAILED] = {"exec-failed", FROM_CMD,  ST(SYNC_S_SENT),   ST(SYNC_S_SENT),   0, 0, STAY},
	[SYNC_KILL]        = {"kill",        FROM_SUP,  ST(SYNC_S_SENT),   ST(SYNC_S_SENT),   0, 0, STAY},
	[SYNC_EXIT]        = {"exit",        FROM_PID1, ST(SYNC_S_SENT),   ST(SYNC_S_SENT),   0, 0, SYNC_S_DONE},
	[SYNC_VACANT]      = {"vacant",      FROM_PID1, ST(SYNC_S_SETUP),  ST(SYNC_S_SETUP),  0, 0, SYNC_S_VACANT},
	[SYNC_ATTACH]      = {"attach",      FROM_SUP,  ST(SYNC_S_VACANT), ST(SYNC_S_VACANT), 1, 1, SYNC_S_ATTACHING},
	[SYNC_ATTACHED]    = {"attached",    FROM_PID1, ST(SYNC_S_ATTACHING), ST(SYNC_S_ATTACHING), 0, 0, SYNC_S_IDLE},
};
/* clang-format on */

static const char *const state_names[SYNC_S__COUNT] = {
    [SYNC_S_CLONED] = "cloned", [SYNC_S_MAPPED] = "mapped", [SYNC_S_SETUP] = "setup",
    [SYNC_S_IDLE] = "idle",	[SYNC_S_DEAD] = "dead",	    [SYNC_S_SENT] = "sent",
    [SYNC_S_DONE] = "done",	[SYNC_S_VACANT] = "vacant", [SYNC_S_ATTACHING] = "attaching",
};

const char *
sync_kind_name(unsigned kind)
{
	return kind < SYNC__COUNT && rules[kind].name ? rules[kind].name : "?";
}

const char *
sync_state_name(unsigned state)
{
	return state < SYNC_S__COUNT ? state_names[state] : "?";
}

void
sync_chan_init(struct sync_chan *c, int fd, enum sync_role role, enum sync_state state)
{
	c->fd = fd;
	c->role = role;
	c->state = state;
}

static const struct sync_rule *
rule_of(unsigned kind)
{
	return kind > 0 && kind < SYNC__COUNT && rules[kind].name ? &rules[kind] : NULL;
}

bool
sync_allowed(const struct sync_chan *c, enum sync_kind kind)
{
	const struct sync_rule *r = rule_of(kind);
	return r && (r->senders & (1u << c->role)) && (r->send_in & ST(c->state));
}

static void
advance(struct sync_chan *c, const struct sync_rule *r)
{
	if (r->next != STAY)
		c->state = (enum sync_state)r->next;
}

int
sync_send(struct sync_chan *c, const struct sync_msg *m, const int *fds, int nfds)
{
	const struct sync_rule *r = rule_of(m->kind);
	if (!r || !sync_allowed(c, m->kind) || nfds < r->min_fds || nfds > r->max_fds)
		return -EPROTO;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)m, .iov_len = sizeof(*m)};
	WD_FDPASS_BUF(SYNC_MAX_FDS) u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (wd_fdpass_put(&mh, &u, sizeof(u), fds, nfds) < 0)
		return -EPROTO;
	ssize_t n;
	while ((n = raw_sendmsg(c->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(*m))
		return n < 0 ? -errno : -EPIPE;
	advance(c, r);
	return 0;
}

int
sync_recv(struct sync_chan *c, struct sync_msg *m, int *fds, int *nfds, int flags)
{
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	WD_FDPASS_BUF(SYNC_MAX_FDS) u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	wd_fdpass_room(&mh, &u, sizeof(u));
	ssize_t n;
	*nfds = 0;
	while ((n = raw_recvmsg(c->fd, &mh, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	*nfds = wd_fdpass_take(&mh, fds, SYNC_MAX_FDS, raw_close);
	if (n != (ssize_t)sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		/* EOF, a torn record, or descriptors the kernel had to drop */
		for (int i = 0; i < *nfds; i++)
			raw_close(fds[i]);
		*nfds = 0;
		return -EPIPE;
	}
	const struct sync_rule *r = rule_of(m->kind);
	/* The sender's role is the other end's: a message is acceptable when
	 * someone other than us may send it, in our current state. */
	bool ok = r && (r->senders & ~(1u << c->role)) && (r->recv_in & ST(c->state)) &&
		  *nfds >= r->min_fds && *nfds <= r->max_fds;
	if (!ok) {
		for (int i = 0; i < *nfds; i++)
			raw_close(fds[i]);
		*nfds = 0;
		return -EPROTO;
	}
	advance(c, r);
	return 0;
}
