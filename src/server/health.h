/* server/health.h - /healthz and /readyz (health.c). */
#ifndef WD_SERVER_HEALTH_H
#define WD_SERVER_HEALTH_H

#include <stddef.h>

struct srv;

/* health.c: /healthz and /readyz for an orchestrator (Kubernetes'
 * probes), served without the token. */
enum { HEALTH_PROBING, HEALTH_READY, HEALTH_UNREADY };
/* Start probing the isolation level (a thread); again from the timer
 * while unready, at most every HEALTH_REPROBE_S seconds. */
#define HEALTH_REPROBE_S 30
void health_start(struct srv *s);
void health_tick(struct srv *s);
/* Join a probe thread that has finished (loop thread). */
void health_reap(struct srv *s);
/* Probe again now, unready meanwhile (after an activation). */
void health_recheck(struct srv *s);
void health_stop(struct srv *s);
/* The answer to GET path (1: it was a health path, *status and body set;
 * 0: not one).  body is a short static-size text. */
int health_answer(struct srv *s, const char *path, int *status, char *body, size_t cap);

#endif
