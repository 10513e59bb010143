#include <unistd.h>
#include <sys/syscall.h>
#include "ptt.h"

jp_ptt_config jp_ptt;

int jp_ptt_thread_init(jp_ptt_thread *t)
{
	t->tid = (int)syscall(SYS_gettid);
	t->slot = -1;
	t->perf_page = 0;
	t->perf_fd = -1;
	t->fallback = 0;
	return 0;
}

void jp_ptt_thread_fini(jp_ptt_thread *t)
{
	(void)t;
}
