/*
 * onload.c: the JVM's entry points into libjprof. They only hand over to
 * Go (main.go, agent.go), which parses the options and sets everything
 * up.
 */
#include <jni.h>
#include <sys/prctl.h>
#include "_cgo_export.h"

/*
 * Go's runtime starts as the library loads (a constructor): its threads
 * are clones of the thread that loads the library, and take its name,
 * "java" at the JVM's start or "Attach Listener" when jprof attaches, so
 * that top -H, perf and jstack's native view showed the agent's threads
 * as the JVM's own. The loading thread is named "libjprof-go" before the
 * runtime starts (a constructor with a priority runs before the others),
 * and its own name given back when the JVM calls the agent (or, for a
 * System.load of the library, JNI_OnLoad). Threads the runtime starts
 * later while a JVM thread runs Go code come from its template thread
 * (jvmti.EnterFromJVM).
 */
static char jp_loader_name[16];
static int jp_loader_renamed;

__attribute__((constructor(101))) static void jp_name_go_threads(void)
{
	if (prctl(PR_GET_NAME, jp_loader_name, 0, 0, 0) == 0 && prctl(PR_SET_NAME, "libjprof-go", 0, 0, 0) == 0)
		jp_loader_renamed = 1;
}

static void jp_loader_name_back(void)
{
	if (__atomic_exchange_n(&jp_loader_renamed, 0, __ATOMIC_ACQ_REL))
		prctl(PR_SET_NAME, jp_loader_name, 0, 0, 0);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	jp_loader_name_back();
	return jpGoOnLoad(vm, options) == 0 ? JNI_OK : JNI_ERR;
}

/* Loaded into a running JVM (jprof profile, jcmd JVMTI.agent_load), or
 * loaded again: the agent already there takes the options. */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	jp_loader_name_back();
	return jpGoOnAttach(vm, options) == 0 ? JNI_OK : JNI_ERR;
}

/* Loaded by System.load, not as an agent: nothing to set up. */
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)vm;
	(void)reserved;
	jp_loader_name_back();
	return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
	(void)vm;
}
