/*
 * dcmd.c: running one of the JVM's diagnostic commands (what jcmd sends:
 * GC.class_histogram, GC.heap_dump, Compiler.directives_add) from inside
 * the process. No JVMTI function reaches them; jdk.management's
 * DiagnosticCommandImpl does, whose native library its provider class
 * loads. JNI calls ignore the module boundaries that hide these classes
 * from Java code. The classes it loads are the agent's business: BCI
 * leaves them as they are.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bci.h"

/* exception_text takes the pending exception's toString as why (in a
 * static buffer: the caller copies it at once, one command at a time). */
static void exception_text(JNIEnv *jni, const char **why)
{
	jthrowable ex = (*jni)->ExceptionOccurred(jni);
	(*jni)->ExceptionClear(jni);
	if (ex == NULL)
		return;
	static char msg[512];
	jclass tc = (*jni)->GetObjectClass(jni, ex);
	jmethodID ts = tc ? (*jni)->GetMethodID(jni, tc, "toString", "()Ljava/lang/String;") : NULL;
	jstring m = ts ? (jstring)(*jni)->CallObjectMethod(jni, ex, ts) : NULL;
	const char *u = m && !(*jni)->ExceptionCheck(jni) ? (*jni)->GetStringUTFChars(jni, m, NULL) : NULL;
	(*jni)->ExceptionClear(jni);
	if (u != NULL) {
		snprintf(msg, sizeof msg, "%s", u);
		(*jni)->ReleaseStringUTFChars(jni, m, u);
		*why = msg;
	}
}

char *jp_dcmd(JNIEnv *jni, const char *cmd, const char **why)
{
	char *out = NULL;
	int busy = bci_busy;
	bci_busy = 1;
	*why = NULL;
	if ((*jni)->PushLocalFrame(jni, 16) != 0) {
		(*jni)->ExceptionClear(jni);
		bci_busy = busy;
		*why = "no room for local references";
		return NULL;
	}
	jclass prov = (*jni)->FindClass(jni, "com/sun/management/internal/PlatformMBeanProviderImpl");
	jclass dc = prov ? (*jni)->FindClass(jni, "com/sun/management/internal/DiagnosticCommandImpl") : NULL;
	jmethodID get = dc ? (*jni)->GetStaticMethodID(jni, dc, "getDiagnosticCommandMBean", "()Lcom/sun/management/DiagnosticCommandMBean;") : NULL;
	jmethodID exec = dc ? (*jni)->GetMethodID(jni, dc, "executeDiagnosticCommand", "(Ljava/lang/String;)Ljava/lang/String;") : NULL;
	jobject mb = get ? (*jni)->CallStaticObjectMethod(jni, dc, get) : NULL;
	if (mb == NULL || exec == NULL || (*jni)->ExceptionCheck(jni)) {
		*why = "jdk.management's diagnostic commands are not reachable (a JVM without the jdk.management module?)";
		goto out;
	}
	jstring jcmd = (*jni)->NewStringUTF(jni, cmd);
	jstring res = jcmd ? (jstring)(*jni)->CallObjectMethod(jni, mb, exec, jcmd) : NULL;
	if (res == NULL || (*jni)->ExceptionCheck(jni)) {
		*why = "the command failed";
		exception_text(jni, why);
		goto out;
	}
	const char *r = (*jni)->GetStringUTFChars(jni, res, NULL);
	if (r == NULL) {
		*why = "no memory for the reply";
		goto out;
	}
	out = strdup(r);
	(*jni)->ReleaseStringUTFChars(jni, res, r);
out:
	if ((*jni)->ExceptionCheck(jni))
		(*jni)->ExceptionClear(jni);
	(*jni)->PopLocalFrame(jni, NULL);
	bci_busy = busy;
	return out;
}

char *jp_dcmd_current(const char *cmd, const char **why)
{
	JNIEnv *jni = jp_env();
	if (jni == NULL) {
		*why = "the calling thread is not attached to the VM";
		return NULL;
	}
	return jp_dcmd(jni, cmd, why);
}

/* GC.heap_dump is not among the commands the management bean runs:
 * HotSpotDiagnosticMXBean.dumpHeap is the same dumper. Its class is
 * reached as DiagnosticCommandImpl is; the file must end in .hprof. */
int jp_heap_dump(const char *path, int live, const char **why)
{
	JNIEnv *jni = jp_env();
	*why = NULL;
	if (jni == NULL) {
		*why = "the calling thread is not attached to the VM";
		return -1;
	}
	int busy = bci_busy, rc = -1;
	bci_busy = 1;
	if ((*jni)->PushLocalFrame(jni, 16) != 0) {
		(*jni)->ExceptionClear(jni);
		bci_busy = busy;
		*why = "no room for local references";
		return -1;
	}
	jclass prov = (*jni)->FindClass(jni, "com/sun/management/internal/PlatformMBeanProviderImpl");
	jclass hd = prov ? (*jni)->FindClass(jni, "com/sun/management/internal/HotSpotDiagnostic") : NULL;
	jmethodID init = hd ? (*jni)->GetMethodID(jni, hd, "<init>", "()V") : NULL;
	jmethodID dump = hd ? (*jni)->GetMethodID(jni, hd, "dumpHeap", "(Ljava/lang/String;Z)V") : NULL;
	jobject bean = init ? (*jni)->NewObject(jni, hd, init) : NULL;
	if (bean == NULL || dump == NULL || (*jni)->ExceptionCheck(jni)) {
		(*jni)->ExceptionClear(jni);
		*why = "jdk.management's heap dumper is not reachable (a JVM without the jdk.management module?)";
		goto out;
	}
	jstring jpath = (*jni)->NewStringUTF(jni, path);
	if (jpath != NULL)
		(*jni)->CallVoidMethod(jni, bean, dump, jpath, (jboolean)(live != 0));
	if (jpath == NULL || (*jni)->ExceptionCheck(jni)) {
		*why = "the heap dump failed";
		exception_text(jni, why);
		goto out;
	}
	rc = 0;
out:
	(*jni)->PopLocalFrame(jni, NULL);
	bci_busy = busy;
	return rc;
}
