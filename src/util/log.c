#include "util/util.h"

#include <stdio.h>

int wd_log_level = WD_LOG_WARN;
static wd_log_fn log_handler;
static void *log_handler_data;

WD_API void
wd_set_log_handler(wd_log_fn fn, void *data, int level)
{
	log_handler = fn;
	log_handler_data = data;
	wd_log_level = level;
}

void
wd_log_emit(int level, const char *func, const char *fmt, ...)
{
	if (!log_handler)
		return; /* the library never writes to stderr on its own */
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_handler(level, func, msg, log_handler_data);
}
