/*
 * onload.c: the JVM's entry points into libjprof. They only hand over to
 * Go (agent.go), which parses the options and sets everything up.
 */
#include <jni.h>
#include "_cgo_export.h"

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)reserved;
	return jpGoOnLoad(vm, options) == 0 ? JNI_OK : JNI_ERR;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
	(void)vm;
}
