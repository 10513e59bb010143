/*
 * sampling_walk.c: recovering the walks AsyncGetCallTrace fails, as
 * async-profiler does. Two failures are common and have a cause the
 * handler can undo for one more walk: a top frame the walker cannot place
 * (its pc in a stub, an adapter, or a frame being built or torn down),
 * walked again from its caller (jp_agct_retry); and a thread in the VM
 * whose last Java frame was recorded without its pc, walked once the pc
 * is filled in (jp_anchor_retry). Both read HotSpot's structure table
 * (vmflags.c): the code cache's bounds, to tell a return address from any
 * other word on a stack, and where a JavaThread keeps its frame anchor; and
 * each thread's stack bounds, so that no guess reads outside its stack.
 * A third case is a thread in the VM called from a runtime stub (a
 * compiled method's counters overflowed, an allocation's slow path):
 * its last Java frame is the stub's, which the walker does not place, and
 * it is walked from the stub's caller (jp_stub_retry), changing the
 * thread's frame anchor for the walk: only when nothing else can be
 * walking it (jp_anchor_private, its polling word: sampling_poll.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "sampling_priv.h"

/* process_vm_readv on this process. */
int jp_peek(uintptr_t addr, void *out, size_t n)
{
	struct iovec local = { out, n }, remote = { (void *)addr, n };
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

/*
 * jp_find_env_off finds where a JavaThread keeps its JNIEnv, on a Java
 * thread whose env is env: the one distance d back from env at which a
 * JavaThread's OSThread (whose offsets the table does list) names this
 * thread's tid. Memory is probed with jp_peek, so a wrong guess faults
 * nothing; two distances that fit, or none, leave it unknown (-1).
 */
static long jp_find_env_off(JNIEnv *env)
{
	long os_off = jp_vm_offset("JavaThread", "_osthread");
	if (os_off < 0)
		os_off = jp_vm_offset("Thread", "_osthread");
	long tid_off = jp_vm_offset("OSThread", "_thread_id");
	if (os_off < 0 || tid_off < 0)
		return -1;
	pid_t me = (pid_t)syscall(SYS_gettid);
	long found = -1;
	for (long d = 8; d <= 8192; d += 8) {
		uintptr_t os = 0;
		pid_t tid = 0;
		if (jp_peek((uintptr_t)env - (uintptr_t)d + (uintptr_t)os_off, &os, sizeof os) != 0 || os == 0 || (os & 7) != 0)
			continue;
		if (jp_peek(os + (uintptr_t)tid_off, &tid, sizeof tid) != 0 || tid != me)
			continue;
		if (found >= 0)
			return -1;
		found = d;
	}
	return found;
}

void jp_walk_setup(void)
{
	jps.code_lo = (const volatile uintptr_t *)jp_vm_static("CodeCache", "_low_bound");
	jps.code_hi = (const volatile uintptr_t *)jp_vm_static("CodeCache", "_high_bound");
	long anchor = jp_vm_offset("JavaThread", "_anchor");
	long sp = jp_vm_offset("JavaFrameAnchor", "_last_Java_sp"), pc = jp_vm_offset("JavaFrameAnchor", "_last_Java_pc");
	long fp = jp_vm_offset("JavaFrameAnchor", "_last_Java_fp");
	/* HotSpot's table does not list where a JavaThread keeps its
	 * JNIEnv: the first sampled thread finds it (jp_find_env_off). */
	jps.env_off = jp_vm_offset("JavaThread", "_jni_environment");
	jps.last_sp_off = anchor < 0 || sp < 0 ? -1 : anchor + sp;
	jps.last_pc_off = anchor < 0 || pc < 0 ? -1 : anchor + pc;
	jps.last_fp_off = anchor < 0 || fp < 0 ? -1 : anchor + fp;
	jps.state_off = jp_vm_offset("JavaThread", "_thread_state");
	jps.suspend_off = jp_vm_offset("JavaThread", "_suspend_flags");
	if (jps.suspend_off < 0)
		jps.suspend_off = jp_vm_offset("Thread", "_suspend_flags");
	jps.stack_base_off = jp_vm_offset("JavaThread", "_stack_base");
	if (jps.stack_base_off < 0)
		jps.stack_base_off = jp_vm_offset("Thread", "_stack_base");
	jps.stack_size_off = jp_vm_offset("JavaThread", "_stack_size");
	if (jps.stack_size_off < 0)
		jps.stack_size_off = jp_vm_offset("Thread", "_stack_size");
}

/*
 * jp_walk_thread_found is jp_walk_thread_start for a thread that ran
 * before an attach, once its handler found its JNIEnv: in the handler,
 * so only what is async-signal-safe (jp_find_env_off's and the polling
 * word's probes are system calls that cannot fault). Its stack's bounds
 * are HotSpot's (the thread's _stack_base, the top, and _stack_size):
 * pthread_getattr_np is not safe here.
 */
void jp_walk_thread_found(jp_sthread *s)
{
	static int env_off_tried;
	if (jps.env_off < 0 && jps.last_sp_off >= 0 && !__atomic_exchange_n(&env_off_tried, 1, __ATOMIC_RELAXED))
		__atomic_store_n(&jps.env_off, jp_find_env_off(s->env), __ATOMIC_RELEASE);
	long env_off = __atomic_load_n(&jps.env_off, __ATOMIC_ACQUIRE);
	if (env_off < 0 || jps.stack_base_off < 0 || jps.stack_size_off < 0 || s->env == NULL)
		return;
	uintptr_t thread = (uintptr_t)s->env - (uintptr_t)env_off, base = 0, size = 0;
	if (jp_peek(thread + (uintptr_t)jps.stack_base_off, &base, sizeof base) != 0 ||
	    jp_peek(thread + (uintptr_t)jps.stack_size_off, &size, sizeof size) != 0 || base == 0 || size == 0 || size > base)
		return;
	/* The handler runs on this stack: a wrong field would not hold it. */
	uintptr_t here = (uintptr_t)&here;
	if (here >= base || here < base - size)
		return;
	s->stack_lo = base - size;
	s->stack_hi = base;
	jp_poll_check(s);
}

void jp_walk_thread_start(jp_sthread *s)
{
	static int env_off_tried;
	if (jps.env_off < 0 && jps.last_sp_off >= 0 && !__atomic_exchange_n(&env_off_tried, 1, __ATOMIC_RELAXED))
		__atomic_store_n(&jps.env_off, jp_find_env_off(s->env), __ATOMIC_RELEASE);
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		void *base = NULL;
		size_t size = 0;
		if (pthread_attr_getstack(&attr, &base, &size) == 0 && base != NULL) {
			s->stack_lo = (uintptr_t)base;
			s->stack_hi = (uintptr_t)base + size;
		}
		pthread_attr_destroy(&attr);
	}
	jp_poll_check(s);
}

static int jp_in_code(uintptr_t pc)
{
	uintptr_t lo = *jps.code_lo, hi = *jps.code_hi;
	return lo != 0 && pc >= lo && pc < hi;
}

/*
 * jp_agct_retry walks the stack again from the caller of a top frame that
 * AsyncGetCallTrace could not place (ticks_unknown_Java: the pc is in a
 * stub, an adapter or a frame being built or torn down; ticks_not_walkable
 * _Java). It pops that frame the three ways x86-64 code leaves one, in the
 * signal's own context (restored before it returns): the return address on
 * top of the stack (before the frame pushed rbp, or after it popped it),
 * the one under the saved rbp (just after that push, or before that pop),
 * then the frame-pointer link. A popped pc must lie in the code cache, and
 * every word read must lie in the thread's stack, so that a wrong guess
 * costs a failed walk, never a fault.
 */
int jp_agct_retry(jp_sthread *s, jp_agct_trace *tr, void *uc)
{
#if defined(__x86_64__)
	if (jps.code_lo == NULL || jps.code_hi == NULL || s->stack_hi == 0 || jps.depth < 2)
		return 0;
	greg_t *g = ((ucontext_t *)uc)->uc_mcontext.gregs;
	const greg_t pc = g[REG_RIP], sp = g[REG_RSP], fp = g[REG_RBP];
	const uintptr_t usp = (uintptr_t)sp, ufp = (uintptr_t)fp;
	int ok = 0;
	if (usp < s->stack_lo || usp + 8 > s->stack_hi || (usp & 7) != 0)
		return 0;
	uintptr_t ra = *(const uintptr_t *)usp;
	if (jp_in_code(ra)) {
		g[REG_RIP] = (greg_t)ra;
		g[REG_RSP] = (greg_t)(usp + 8);
		jps.agct(tr, (jint)jps.depth - 1, uc);
		ok = tr->num_frames > 0;
	}
	if (!ok && usp + 16 <= s->stack_hi && jp_in_code(ra = ((const uintptr_t *)usp)[1])) {
		/* Between a frame's pop of its locals and its pop of rbp (or
		 * its push of rbp and its allocation of locals). */
		g[REG_RIP] = (greg_t)ra;
		g[REG_RSP] = (greg_t)(usp + 16);
		g[REG_RBP] = (greg_t)((const uintptr_t *)usp)[0];
		jps.agct(tr, (jint)jps.depth - 1, uc);
		ok = tr->num_frames > 0;
	}
	if (!ok && ufp > usp && ufp + 16 <= s->stack_hi && (ufp & 7) == 0) {
		ra = ((const uintptr_t *)ufp)[1];
		if (jp_in_code(ra)) {
			g[REG_RIP] = (greg_t)ra;
			g[REG_RSP] = (greg_t)(ufp + 16);
			g[REG_RBP] = (greg_t)((const uintptr_t *)ufp)[0];
			jps.agct(tr, (jint)jps.depth - 1, uc);
			ok = tr->num_frames > 0;
		}
	}
	g[REG_RIP] = pc;
	g[REG_RSP] = sp;
	g[REG_RBP] = fp;
	return ok;
#else
	(void)s;
	(void)tr;
	(void)uc;
	return 0;
#endif
}

#if defined(__x86_64__)
/* jp_walk_thread is the JavaThread of a sampled Java thread, whose frame
 * anchor the retries below read and change, or NULL when HotSpot's table
 * did not give where it keeps that anchor, the code cache or its JNIEnv. */
static char *jp_walk_thread(const jp_sthread *s)
{
	long env_off = __atomic_load_n(&jps.env_off, __ATOMIC_ACQUIRE);
	if (env_off < 0 || jps.last_sp_off < 0 || jps.last_pc_off < 0 || jps.code_lo == NULL || jps.code_hi == NULL ||
	    s->stack_hi == 0 || s->env == NULL)
		return NULL;
	return (char *)s->env - env_off;
}

/*
 * jp_anchor_retry walks a thread that is in the VM (a runtime call from
 * the interpreter or compiled code) and whose last Java frame is recorded
 * without its pc, which AsyncGetCallTrace needs (ticks_unknown_not_Java):
 * the pc is the return address just below the recorded sp, where the call
 * into the VM pushed it, which is also what HotSpot itself fills in when it
 * walks such a thread (JavaFrameAnchor::make_walkable), and leaves there.
 * So it is filled in and left, as HotSpot would: a GC or handshake
 * walking the thread at the same moment (it may be blocked) writes the
 * same value, and the thread clears it when it returns to Java. The word
 * read must lie in its stack and the pc in the code cache.
 */
int jp_anchor_retry(jp_sthread *s, jp_agct_trace *tr, void *uc)
{
	char *thread = jp_walk_thread(s);
	if (thread == NULL)
		return 0;
	volatile uintptr_t *lsp = (volatile uintptr_t *)(thread + jps.last_sp_off);
	volatile uintptr_t *lpc = (volatile uintptr_t *)(thread + jps.last_pc_off);
	uintptr_t sp = *lsp;
	if (sp == 0 || *lpc != 0 || (sp & 7) != 0 || sp < s->stack_lo + 8 || sp > s->stack_hi)
		return 0;
	uintptr_t pc = ((const uintptr_t *)sp)[-1];
	if (!jp_in_code(pc))
		return 0;
	*lpc = pc;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	jps.agct(tr, (jint)jps.depth, uc);
	return tr->num_frames > 0;
}
void jp_anchor(const jp_sthread *s, uintptr_t *sp, uintptr_t *pc)
{
	char *thread = jp_walk_thread(s);
	*sp = thread == NULL ? 0 : *(volatile uintptr_t *)(thread + jps.last_sp_off);
	*pc = thread == NULL ? 0 : *(volatile uintptr_t *)(thread + jps.last_pc_off);
}

/* HotSpot's JavaThreadState for a thread running VM code (_thread_in_vm),
 * for one blocked in it (_thread_blocked) and for one leaving that
 * (_thread_blocked_trans), the same since JDK 1.4. */
#define JP_THREAD_IN_VM 6
#define JP_THREAD_BLOCKED 10
#define JP_THREAD_BLOCKED_TRANS 11

int jp_thread_blocked(const jp_sthread *s)
{
	char *thread = jp_walk_thread(s);
	return thread != NULL && jps.state_off >= 0 && *(volatile int *)(thread + jps.state_off) == JP_THREAD_BLOCKED;
}

/*
 * jp_anchor_private says whether nothing but the thread itself can read
 * its frame anchor until its handler returns: it is in the VM
 * (_thread_in_vm, or on JDK 17 _thread_blocked_trans, leaving a wait)
 * and its polling word is disarmed. Both states can follow a wait in
 * which another thread walked it (a GC, a handshake's operation): it may
 * go on being walked while the thread waits in the VM for that to end,
 * with its poll armed. A safepoint or handshake arms the word before it
 * reads the thread's state, and only the thread disarms it, once nothing
 * is asked of it: with the word disarmed here, any operation that begins
 * waits for this thread, which cannot go on while its handler runs.
 * Two walkers ask through the thread's suspend flags instead, leaving the
 * word alone, and on JDK 21 and later the thread waits for them in
 * _thread_in_vm: JFR's thread sampler of those JDKs (_trace_flag, as the
 * thread leaves native code) and an escape barrier's deoptimization of
 * its objects for another agent (_obj_deopt). So its suspend flags must
 * be clear too.
 */
static int jp_anchor_private(const char *thread)
{
	int st = *(const volatile int *)(thread + jps.state_off);
	return (st == JP_THREAD_IN_VM || st == JP_THREAD_BLOCKED_TRANS) && jp_poll_disarmed(thread) &&
	       jps.suspend_off >= 0 && *(const volatile uint32_t *)(thread + jps.suspend_off) == 0;
}

/*
 * jp_stub_retry walks a thread in the VM whose last Java frame is a
 * runtime stub's (C1's counter_overflow and fast_new_instance, C2's
 * _new_array_Java and the like: AsyncGetCallTrace gives
 * ticks_not_walkable_not_Java) from the stub's caller. C1's stubs keep a
 * frame pointer, which the anchor records: the caller's pc is at fp+8,
 * its sp at fp+16 and its fp at fp. C2's allocation stubs have a frame of
 * two words at the recorded sp: the same layout at sp. The anchor is set
 * to the caller's frame for the walk and put back. Only while nothing
 * else can read the anchor (jp_anchor_private), whereas a GC could walk
 * a thread that is blocked, and must see the stub's frame, whose saved
 * registers may hold oops. A frame pointer that is not the stub's (a
 * stub of C2's keeps none) fails the checks or the walk, costing a
 * failed walk: the words read must lie in the thread's stack, the pc in
 * the code cache.
 */
int jp_stub_retry(jp_sthread *s, jp_agct_trace *tr, void *uc)
{
	char *thread = jp_walk_thread(s);
	if (thread == NULL || jps.last_fp_off < 0 || jps.state_off < 0 || jps.depth < 2 || !jp_anchor_private(thread))
		return 0;
	volatile uintptr_t *lsp = (volatile uintptr_t *)(thread + jps.last_sp_off);
	volatile uintptr_t *lpc = (volatile uintptr_t *)(thread + jps.last_pc_off);
	volatile uintptr_t *lfp = (volatile uintptr_t *)(thread + jps.last_fp_off);
	uintptr_t sp = *lsp, pc = *lpc, fp = *lfp;
	if (sp == 0 || (sp & 7) != 0 || sp < s->stack_lo || sp + 16 > s->stack_hi)
		return 0;
	/* The frame to pop is the stub's: either C1's, linked by fp, or
	 * C2's (OptoRuntime's _new_array_Java and the like), two words at sp:
	 * the saved rbp, then the return address. */
	uintptr_t at[2] = { 0, sp };
	if (fp >= sp && (fp & 7) == 0 && fp + 16 <= s->stack_hi)
		at[0] = fp;
	int ok = 0;
	for (int i = 0; i < 2 && !ok; i++) {
		uintptr_t f = at[i], ra = f ? ((const uintptr_t *)f)[1] : 0;
		if (f == 0 || !jp_in_code(ra))
			continue;
		*lsp = f + 16;
		*lfp = ((const uintptr_t *)f)[0];
		*lpc = ra;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		jps.agct(tr, (jint)jps.depth - 1, uc);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ok = tr->num_frames > 0;
	}
	*lpc = pc;
	*lfp = fp;
	*lsp = sp;
	return ok;
}
#else
/* Elsewhere a call leaves its return address in a register, and stubs'
 * frames are laid out otherwise: no retry. */
int jp_anchor_retry(jp_sthread *s, jp_agct_trace *tr, void *uc)
{
	(void)s;
	(void)tr;
	(void)uc;
	return 0;
}

int jp_stub_retry(jp_sthread *s, jp_agct_trace *tr, void *uc)
{
	return jp_anchor_retry(s, tr, uc);
}

void jp_anchor(const jp_sthread *s, uintptr_t *sp, uintptr_t *pc)
{
	(void)s;
	*sp = *pc = 0;
}
#endif

int jp_sampling_recovery(void)
{
	int r = 0;
	if (jps.code_lo != NULL && jps.code_hi != NULL) {
		r |= 1;
		if (jps.env_off >= 0 && jps.last_sp_off >= 0 && jps.last_pc_off >= 0)
			r |= 2;
	}
	if (__atomic_load_n(&jps.walker_on, __ATOMIC_ACQUIRE) < 0)
		r |= 4;
	if (!jp_poll_known() || jps.suspend_off < 0)
		r |= 8;
	return r;
}
