/*
 * onload.c: the JVM's entry points into libjprof. They only hand over to
 * Go (main.go, agent.go), which parses the options and sets everything
 * up.
 */
#include <jni.h>
#include "_cgo_export.h"

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	return jpGoOnLoad(vm, options) == 0 ? JNI_OK : JNI_ERR;
}

/* Loaded into a running JVM (jprof profile, jcmd JVMTI.agent_load), or
 * loaded again: the agent already there takes the options. */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	return jpGoOnAttach(vm, options) == 0 ? JNI_OK : JNI_ERR;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
	(void)vm;
}
