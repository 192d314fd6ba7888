#include "util/util.h"

#include <stdio.h>

int wd_log_level = WD_LOG_WARN;
__thread const struct wd_log_sink *wd_log_tls;
static wd_log_fn log_handler;
static void *log_handler_data;

WD_API void
wd_set_log_handler(wd_log_fn fn, void *data, int level)
{
	log_handler = fn;
	log_handler_data = data;
	wd_log_level = level;
}

const char *
wd_log_level_name(int level)
{
	static const char *const names[] = {"error", "warning", "info", "debug", "trace"};
	return level >= 0 && (size_t)level < WD_ARRAY_SIZE(names) ? names[level] : "?";
}

void
wd_log_emit(int level, const char *func, const char *fmt, ...)
{
	const struct wd_log_sink *s = wd_log_tls;
	wd_log_fn fn = s ? s->fn : log_handler;
	if (!fn)
		return; /* the library never writes to stderr on its own */
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(level, func, msg, s ? s->data : log_handler_data);
}
