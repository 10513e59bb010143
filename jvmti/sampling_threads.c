/*
 * sampling_threads.c: the JVM's own threads under SAMPLE. GC workers, the
 * JIT compilers and the VM thread run no Java code (HotSpot's compiler
 * threads are Java threads hidden from JVMTI: no ThreadStart), yet they
 * are often a large part of the process's CPU time. A scanner thread
 * lists /proc/self/task every JP_SCAN_MS, gives each thread that is not a
 * Java thread a record and a timer like a Java thread's (cpu kinds only),
 * and the handler charges its samples to a pseudo-frame of the thread's
 * kind under a root named after the thread: the sampled total then
 * covers the process, and the header compares it with the process's CPU
 * time.
 *
 * The agent's own threads (named libjprof-*, the Go runtime's
 * libjprof-go, and any the runtime starts later from the launcher's
 * thread, which keep its name) are sampled too, under "<profiler_thread>":
 * their time is the profiler's cost, part of the process's.
 * A thread of another name is adopted at the second scan that sees it
 * (it may be a Java thread whose ThreadStart has not run yet), except
 * at the first scan after sampling starts, and except the GC, JIT
 * compiler and VM threads and libjprof-*, known by their names: the compilers are
 * busiest at start-up, and HotSpot adds GC and compiler threads as the
 * load grows. The handler finds a JVM thread's state
 * from the signal itself: the perf event's file descriptor (si_fd) or
 * the POSIX timer's value, never from thread-local storage the thread
 * never set.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sampling_priv.h"

#define JP_SCAN_MS 100
/* JVM threads' perf event descriptors below this are found by si_fd. */
#define JP_NFD 4096
/* Threads one scan looks at (the JVM's own number a few dozen). */
#define JP_SCAN_MAX 4096

enum { JP_K_JIT, JP_K_GC, JP_K_VM, JP_K_OTHER, JP_K_AGENT, JP_NKINDS };
static const char *const jp_kind_names[JP_NKINDS] = {
	"<JIT_compiler_thread>", "<GC_thread>", "<VM_thread>", "<other_JVM_thread>", "<profiler_thread>",
};
static uint32_t jp_kind_h[JP_NKINDS];
static jp_sthread *jp_by_fd[JP_NFD];
static char jp_self_comm[17];
/* The thread that loaded the agent with the VM: the JVM's main thread
 * (the launcher creates the VM on it), a Java thread once VM init has
 * run, though named like the profiler's threads until then; 0 attached. */
static int jp_load_tid;
static pthread_t jp_scanner;
static int jp_scanner_started;

/* A thread a scan saw: candidates of the previous scan are adopted. */
typedef struct {
	int tid;
	unsigned long long starttime;
	char comm[17];
} jp_seen;
static jp_seen jp_prev[JP_SCAN_MAX];
static int jp_nprev;
/* The next scan adopts every thread it sees (set when sampling starts). */
static volatile int jp_adopt_all = 1;

void jp_jvm_threads_setup(void)
{
	for (int k = 0; k < JP_NKINDS; k++)
		jp_kind_h[k] = jp_method_register(jp_kind_names[k], JP_T_OTHER);
	if (!jpvm.live)
		jp_load_tid = (int)syscall(SYS_gettid);
	FILE *f = fopen("/proc/self/comm", "r");
	if (f != NULL) {
		if (fgets(jp_self_comm, sizeof jp_self_comm, f) != NULL)
			jp_self_comm[strcspn(jp_self_comm, "\n")] = 0;
		fclose(f);
	}
}

/* jp_kind_of classifies a thread by the name HotSpot gives it; the
 * agent's own are named libjprof-*, or keep the launcher's name (a Go
 * thread started from the launcher's; and its primordial thread, blocked in the JVM's
 * creation for the whole run, whose timer never fires), except when
 * attached, where the Java threads that ran before may be named so too. */
static int jp_kind_of(const char *comm)
{
	if (strncmp(comm, "libjprof", 8) == 0 || (!jpvm.live && strcmp(comm, jp_self_comm) == 0))
		return JP_K_AGENT;
	static const char *const jit[] = { "C1 Compiler", "C2 Compiler", "JVMCI", "Compiler" };
	static const char *const gc[] = { "GC ", "G1 ", "ZGC", "Z ", "Shenandoah", "Conc", "Par", "PS " };
	for (size_t i = 0; i < sizeof jit / sizeof jit[0]; i++)
		if (strncmp(comm, jit[i], strlen(jit[i])) == 0)
			return JP_K_JIT;
	for (size_t i = 0; i < sizeof gc / sizeof gc[0]; i++)
		if (strncmp(comm, gc[i], strlen(gc[i])) == 0)
			return JP_K_GC;
	if (strcmp(comm, "VM Thread") == 0)
		return JP_K_VM;
	return JP_K_OTHER;
}

jp_sthread *jp_jvm_thread_of(const siginfo_t *si)
{
	if (si == NULL)
		return NULL;
	/* A timer's value, or the wall thread's (sent with the record for a
	 * thread found by the scanner). */
	if (si->si_code == SI_TIMER || si->si_code == SI_QUEUE)
		return (jp_sthread *)si->si_value.sival_ptr; /* NULL for a Java thread's */
	if (si->si_code >= POLL_IN && si->si_code <= POLL_HUP && si->si_fd >= 0 && si->si_fd < JP_NFD)
		return __atomic_load_n(&jp_by_fd[si->si_fd], __ATOMIC_ACQUIRE);
	return NULL;
}

/* jp_jvm_arm arms a JVM thread and makes its descriptor findable;
 * jps.lock held. */
static void jp_jvm_arm(jp_sthread *s)
{
	jp_arm(s);
	if (s->armed && s->perf_fd >= 0 && s->perf_fd < JP_NFD)
		__atomic_store_n(&jp_by_fd[s->perf_fd], s, __ATOMIC_RELEASE);
}

static void jp_jvm_disarm(jp_sthread *s)
{
	if (s->armed && s->perf_fd >= 0 && s->perf_fd < JP_NFD)
		__atomic_store_n(&jp_by_fd[s->perf_fd], NULL, __ATOMIC_RELEASE);
	jp_disarm(s);
}

void jp_jvm_threads_set(int on)
{
	if (on)
		jp_adopt_all = 1;
	for (jp_sthread *s = jps.jvm; s != NULL; s = s->next) {
		if (on)
			jp_jvm_arm(s);
		else
			jp_jvm_disarm(s);
	}
}

/* jp_read_task reads a thread's name and start time; 0 on success. */
static int jp_read_task(int tid, char *comm, size_t commlen, unsigned long long *starttime)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	/* pid (comm) state ...: comm may hold spaces and parentheses; it
	 * ends at the last ')'. */
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (open == NULL || close == NULL || close < open)
		return -1;
	size_t cl = (size_t)(close - open - 1);
	if (cl >= commlen)
		cl = commlen - 1;
	memcpy(comm, open + 1, cl);
	comm[cl] = 0;
	/* Fields after the comm: state is field 3, starttime field 22. */
	char *p = close + 1;
	for (int field = 3; field < 22 && p != NULL; field++) {
		p = strchr(p + 1, ' ');
	}
	if (p == NULL)
		return -1;
	*starttime = strtoull(p + 1, NULL, 10);
	return 0;
}

static void jp_jvm_free(jp_sthread *s)
{
	jp_pcct_free(&s->pcct);
	free(s->path);
	free(s->frames);
	free(s->prev_mid);
	free(s->prev_h);
	free(s);
}

/* jp_jvm_adopt makes a JVM thread's sampling state; jps.lock held. */
static void jp_jvm_adopt(const jp_seen *c)
{
	jp_sthread *s = calloc(1, sizeof *s);
	if (s == NULL) {
		JP_COUNT(setup_failures);
		return;
	}
	int kind = jp_kind_of(c->comm);
	/* Attached, the Java threads that ran before are among these: the
	 * handler walks their stacks once it finds their JNI environment,
	 * so they get a Java thread's buffers. */
	if (jpvm.live && kind == JP_K_OTHER)
		s->maybe_java = strcmp(c->comm, jp_self_comm) == 0 ? JP_JAVA_OR_NOTHING : JP_MAYBE_JAVA;
	uint32_t depth = s->maybe_java ? jps.depth + 1 : 2, nodes = s->maybe_java ? jps.max_nodes : 16;
	s->path = calloc(depth, sizeof(uint32_t));
	if (s->maybe_java) {
		s->frames = calloc(jps.depth, sizeof(jp_agct_frame));
		s->prev_mid = calloc(jps.depth, sizeof(jmethodID));
		s->prev_h = calloc(jps.depth, sizeof(uint32_t));
	}
	int ok = s->path != NULL && (!s->maybe_java || (s->frames != NULL && s->prev_mid != NULL && s->prev_h != NULL));
	s->perf_fd = -1;
	s->tid = c->tid;
	s->starttime = c->starttime;
	s->kind_h = jp_kind_h[kind];
	if (!s->maybe_java)
		s->period_ns = jps.period_ns > JP_JVM_PERIOD_NS ? jps.period_ns : JP_JVM_PERIOD_NS;
	s->seen = 1;
	s->t = ok ? jp_thread_foreign(c->comm, c->tid) : NULL;
	/* A root, the kind's pseudo-frame and the node-limit one; a Java
	 * thread's whole tree if it may be one. */
	if (s->t == NULL || jp_pcct_init(s->t, &s->pcct, nodes, depth, jps.limit_h) != 0) {
		if (s->t != NULL)
			jp_thread_foreign_end(s->t);
		jp_jvm_free(s);
		JP_COUNT(setup_failures);
		return;
	}
	s->next = jps.jvm;
	if (jps.jvm != NULL)
		jps.jvm->prev = s;
	jps.jvm = s;
	/* A JVM thread that started while sampling was on: its first sample
	 * stands for all of its CPU time so far, not one period, since a
	 * scan finds it up to JP_SCAN_MS late (or, for a kind not known by
	 * name, a scan later still). Its samples all go to its kind's
	 * pseudo-frame, so that time is charged where they would have put
	 * it. */
	if (jps.on && !s->maybe_java && c->starttime >= jps.on_ticks) {
		s->seen_gen = s->arm_gen + 1;
		s->last = 0;
	}
	if (jps.on)
		jp_jvm_arm(s);
	JP_COUNT(jvm_threads);
}

/* Dropped JVM threads' records, ended and freed a scan later (jps.lock
 * held): a handler that found s (through jp_by_fd, or a timer signal's
 * value already queued) just before the drop may still be running on it
 * and on its engine record, on its thread, for microseconds. */
static jp_sthread *jp_grave, *jp_grave_old;

static void jp_jvm_bury(jp_sthread *s)
{
	s->next = jp_grave;
	jp_grave = s;
}

static void jp_jvm_sweep(void)
{
	for (jp_sthread *s = jp_grave_old, *next; s != NULL; s = next) {
		next = s->next;
		jp_thread_foreign_end(s->t);
		jp_jvm_free(s);
	}
	jp_grave_old = jp_grave;
	jp_grave = NULL;
}

/* jp_jvm_drop ends a JVM thread's sampling state; jps.lock held. */
static void jp_jvm_drop(jp_sthread *s)
{
	jp_jvm_disarm(s);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		jps.jvm = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	jp_jvm_bury(s);
	JP_COUNT(jvm_ended);
}

static int jp_is_java(int tid)
{
	for (jp_sthread *s = jps.list; s != NULL; s = s->next)
		if (s->tid == tid)
			return 1;
	return 0;
}

/* jp_scan brings the JVM threads' list up to date with /proc. The files
 * are read without the lock (thread starts and ends take it). */
static void jp_scan(void)
{
	static jp_seen cur[JP_SCAN_MAX];
	int ncur = 0;
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && ncur < JP_SCAN_MAX) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		jp_seen *c = &cur[ncur];
		if (jp_read_task(tid, c->comm, sizeof c->comm, &c->starttime) != 0)
			continue;
		c->tid = tid;
		ncur++;
	}
	closedir(d);

	pthread_mutex_lock(&jps.lock);
	jp_jvm_sweep();
	for (jp_sthread *s = jps.jvm; s != NULL; s = s->next)
		s->seen = 0;
	for (int i = 0; i < ncur; i++) {
		jp_seen *c = &cur[i];
		if (jp_is_java(c->tid) || c->tid == jp_load_tid)
			continue;
		jp_sthread *known = NULL;
		for (jp_sthread *s = jps.jvm; s != NULL && known == NULL; s = s->next)
			if (s->tid == c->tid && s->starttime == c->starttime)
				known = s;
		if (known != NULL) {
			known->seen = 1;
			continue;
		}
		int kind = jp_kind_of(c->comm);
		/* Wall-clock sampling leaves the JVM's own threads out (they
		 * mostly wait): only the Java threads that ran before an
		 * attach are taken. */
		if (jps.kind == JP_SAMPLE_WALL && kind != JP_K_OTHER)
			continue;
		/* Named like the process: a Java thread's ThreadStart may not
		 * have run yet (the main thread's, at the start), as for an
		 * unknown name. */
		int named_late = kind == JP_K_OTHER || (kind == JP_K_AGENT && strcmp(c->comm, jp_self_comm) == 0);
		int adopt = jp_adopt_all ? kind != JP_K_AGENT || !named_late : !named_late;
		for (int j = 0; j < jp_nprev && !adopt; j++)
			adopt = jp_prev[j].tid == c->tid && jp_prev[j].starttime == c->starttime;
		if (adopt)
			jp_jvm_adopt(c);
	}
	/* Gone, reused tids, and Java threads taken for JVM threads. */
	for (jp_sthread *s = jps.jvm, *next; s != NULL; s = next) {
		next = s->next;
		if (!s->seen || jp_is_java(s->tid))
			jp_jvm_drop(s);
	}
	jp_adopt_all = 0;
	pthread_mutex_unlock(&jps.lock);
	memcpy(jp_prev, cur, sizeof(jp_seen) * (size_t)ncur);
	jp_nprev = ncur;
}

static void *jp_scanner_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "libjprof-scan", 0, 0, 0);
	struct timespec ts = { 0, JP_SCAN_MS * 1000000L };
	while (!jp.dead) {
		if (jps.on)
			jp_scan();
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* jps.lock held. */
int jp_jvm_threads_start(void)
{
	if (jp_scanner_started)
		return 0;
	if (pthread_create(&jp_scanner, NULL, jp_scanner_main, NULL) != 0)
		return -1;
	pthread_detach(jp_scanner);
	jp_scanner_started = 1;
	return 0;
}
