/*
 * sampling_poll.c: where a JavaThread keeps its safepoint polling word,
 * which says whether the VM asks anything of the thread (a safepoint, a
 * handshake, a GC's stack processing). The stack-walk recoveries that
 * change a thread's frame anchor for a moment (sampling_walk.c) need to
 * know that no other thread is walking it, and the word is what tells.
 *
 * HotSpot keeps it in SafepointMechanism::ThreadData (the word, then the
 * polling page), which its structure table does not list and which
 * moved between JDKs: right after the thread's state in JDK 17 and 21,
 * among Thread's first fields in JDK 25. So it is found, as where a
 * JavaThread keeps its JNIEnv is: the one place among the thread's
 * fields holding the disarmed word (~1) followed by a page address, the
 * same place and page seen twice (a thread looked at while its poll is
 * armed matches elsewhere, if anywhere: such tries are made again at
 * later samples, in the handler, whose system calls cannot fault);
 * every later thread's words
 * there must be a polling word (disarmed, armed, or a GC's stack
 * watermark in its stack) beside one of HotSpot's two polling pages
 * (the armed one a page below the disarmed one), or the word is not
 * used again. Unused, the recoveries that need it are not made.
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "sampling_priv.h"

/* The polling word when nothing is asked of the thread (HotSpot's
 * ~poll_bit); armed, its low bit is set; a GC that processes stacks
 * concurrently (ZGC, Shenandoah) keeps a stack watermark in it. */
#define JP_POLL_DISARMED (~(uintptr_t)1)
/* Tries at finding it before giving up. */
#define JP_POLL_TRIES 8

static uintptr_t jp_page_size(void)
{
	long n = sysconf(_SC_PAGESIZE);
	return n > 0 ? (uintptr_t)n : 4096;
}

/* jp_find_poll finds the one place among a thread's fields (up to the
 * last one the table or the JNIEnv places) holding a disarmed polling
 * word and a page address: its offset, and the page in *page; -1 when
 * there is none (its poll may be armed now), -2 when there are two. */
static long jp_find_poll(uintptr_t thread, long env_off, uintptr_t *page)
{
	uintptr_t w[64 + 1], pg = jp_page_size();
	long lim = (jps.state_off > env_off ? jps.state_off : env_off) + 64, found = -1;
	for (long at = 0; at < lim; at += 64 * 8) {
		long n = (lim - at) / 8 + 1;
		if (n > 64)
			n = 64;
		if (jp_peek(thread + (uintptr_t)at, w, ((size_t)n + 1) * sizeof w[0]) != 0)
			return -1;
		for (long i = 0; i < n; i++) {
			if (w[i] != JP_POLL_DISARMED || w[i + 1] == 0 || (w[i + 1] & (pg - 1)) != 0)
				continue;
			if (found >= 0)
				return -2;
			found = at + i * 8;
			*page = w[i + 1];
		}
	}
	return found;
}

/* jp_poll_find tries to find the word on the thread at thread: a place
 * found twice (on any threads, at any times) is taken; a place other
 * than the one found before counts against it, JP_POLL_TRIES of those
 * and the word is not used. A thread whose poll is armed now finds
 * nothing, and a later try may. */
static void jp_poll_find(uintptr_t thread, long env_off)
{
	static int busy, tries, cand;
	static long cand_off;
	static uintptr_t cand_page;
	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return;
	uintptr_t page = 0;
	long off = jp_find_poll(thread, env_off, &page);
	if (off >= 0 && cand && off == cand_off && page == cand_page) {
		jps.poll_off = off;
		jps.poll_page = page;
		__atomic_store_n(&jps.poll_ok, 1, __ATOMIC_RELEASE);
	} else if (off != -1 && (cand || off == -2) && ++tries >= JP_POLL_TRIES) {
		__atomic_store_n(&jps.poll_ok, -1, __ATOMIC_RELEASE);
	} else if (off >= 0) {
		cand = 1;
		cand_off = off;
		cand_page = page;
	}
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

void jp_poll_check(const jp_sthread *s)
{
	long env_off = __atomic_load_n(&jps.env_off, __ATOMIC_ACQUIRE);
	int ok = __atomic_load_n(&jps.poll_ok, __ATOMIC_ACQUIRE);
	if (env_off < 0 || jps.state_off < 0 || s->env == NULL || ok < 0)
		return;
	uintptr_t thread = (uintptr_t)s->env - (uintptr_t)env_off;
	if (ok == 0) {
		jp_poll_find(thread, env_off);
		return;
	}
	uintptr_t w[2] = { 0, 0 };
	int word = jp_peek(thread + (uintptr_t)jps.poll_off, w, sizeof w) == 0 &&
		   (w[0] == JP_POLL_DISARMED || (w[0] & 1) != 0 || (w[0] >= s->stack_lo && w[0] <= s->stack_hi));
	if (!word || (w[1] != jps.poll_page && w[1] != jps.poll_page - jp_page_size()))
		__atomic_store_n(&jps.poll_ok, -1, __ATOMIC_RELEASE);
}

int jp_poll_disarmed(const char *thread)
{
	int ok = __atomic_load_n(&jps.poll_ok, __ATOMIC_ACQUIRE);
	if (ok == 0) {
		/* Not found yet (the threads' polls were armed when they were
		 * looked at): this thread may tell, for a later sample. */
		long env_off = __atomic_load_n(&jps.env_off, __ATOMIC_ACQUIRE);
		if (env_off >= 0 && jps.state_off >= 0)
			jp_poll_find((uintptr_t)thread, env_off);
		return 0;
	}
	if (ok != 1)
		return 0;
	const volatile uintptr_t *w = (const volatile uintptr_t *)(thread + jps.poll_off);
	return w[0] == JP_POLL_DISARMED && w[1] == jps.poll_page;
}

int jp_poll_known(void)
{
	return __atomic_load_n(&jps.poll_ok, __ATOMIC_ACQUIRE) == 1;
}
