/* net/resolve.c: a small pool of resolver threads (see net-internal.h). */
#include "net/net-internal.h"

#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>

#define MAX_QUEUED 256

struct net_resolver {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned refs; /* the proxy's, plus one per worker */
	bool closed;
	int efd;
	struct net_job *queue, **queue_tail;
	size_t queued;
	struct net_job *done;
};

static void
unref_locked(struct net_resolver *r)
{
	if (--r->refs > 0) {
		pthread_mutex_unlock(&r->lock);
		return;
	}
	pthread_mutex_unlock(&r->lock);
	for (struct net_job *j = r->queue, *n; j; j = n) {
		n = j->next;
		free(j);
	}
	for (struct net_job *j = r->done, *n; j; j = n) {
		n = j->next;
		free(j);
	}
	close(r->efd);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static void
lookup(struct net_job *j)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	j->err = getaddrinfo(j->host, NULL, &hints, &res);
	if (j->err)
		return;
	for (struct addrinfo *ai = res; ai && j->n_addrs < NET_JOB_MAX_ADDRS; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		bool dup = false;
		for (size_t i = 0; i < j->n_addrs; i++)
			dup |= memcmp(&j->addrs[i], &ss, sizeof(ss)) == 0;
		if (!dup)
			j->addrs[j->n_addrs++] = ss;
	}
	freeaddrinfo(res);
	if (j->n_addrs == 0)
		j->err = EAI_NONAME;
}

static void *
worker(void *arg)
{
	struct net_resolver *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->closed && !r->queue)
			pthread_cond_wait(&r->cond, &r->lock);
		if (r->closed)
			break;
		struct net_job *j = r->queue;
		r->queue = j->next;
		if (!r->queue)
			r->queue_tail = &r->queue;
		r->queued--;
		pthread_mutex_unlock(&r->lock);
		lookup(j);
		pthread_mutex_lock(&r->lock);
		if (r->closed) {
			free(j);
			break;
		}
		j->next = r->done;
		r->done = j;
		uint64_t one = 1;
		/* The counter cannot overflow in practice; a failed write
		 * only delays delivery to the next completion. */
		if (write(r->efd, &one, sizeof(one)) < 0)
			wd_log(WD_LOG_DEBUG, "resolver eventfd: %d", errno);
	}
	unref_locked(r);
	return NULL;
}

int
net_resolver_new(unsigned threads, struct net_resolver **out, int *event_fd, struct wd_err *err)
{
	struct net_resolver *r = wd_xcalloc(1, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->queue_tail = &r->queue;
	r->refs = 1;
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd < 0) {
		int e = errno;
		free(r);
		return wd_err_sys(err, e, "resolver eventfd");
	}
	/* Workers block every signal: they belong to a library, and SIGPIPE or
	 * the host's handlers must not land on them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < threads; i++) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		pthread_mutex_lock(&r->lock);
		r->refs++;
		pthread_mutex_unlock(&r->lock);
		int rc = pthread_create(&t, &attr, worker, r);
		pthread_attr_destroy(&attr);
		if (rc != 0) {
			pthread_mutex_lock(&r->lock);
			r->refs--;
			pthread_mutex_unlock(&r->lock);
			if (i == 0) {
				pthread_sigmask(SIG_SETMASK, &old, NULL);
				close(r->efd);
				free(r);
				return wd_err_sys(err, rc, "resolver thread");
			}
			break; /* fewer workers still work */
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	*event_fd = r->efd;
	*out = r;
	return 0;
}

int
net_resolver_submit(struct net_resolver *r, struct net_job *job)
{
	pthread_mutex_lock(&r->lock);
	if (r->queued >= MAX_QUEUED) {
		pthread_mutex_unlock(&r->lock);
		return -EAGAIN;
	}
	job->next = NULL;
	*r->queue_tail = job;
	r->queue_tail = &job->next;
	r->queued++;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

struct net_job *
net_resolver_take_done(struct net_resolver *r)
{
	uint64_t v;
	/* Drain the counter; EAGAIN just means nothing was signalled. */
	if (read(r->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		wd_log(WD_LOG_DEBUG, "resolver eventfd read: %d", errno);
	pthread_mutex_lock(&r->lock);
	struct net_job *d = r->done;
	r->done = NULL;
	pthread_mutex_unlock(&r->lock);
	return d;
}

void
net_resolver_release(struct net_resolver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->closed = true;
	pthread_cond_broadcast(&r->cond);
	unref_locked(r);
}
