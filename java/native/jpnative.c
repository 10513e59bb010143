/* jpnative.c: the JNI methods of the Natives test workload. */
#include <jni.h>

JNIEXPORT jint JNICALL Java_Natives_staticNative(JNIEnv *env, jclass cls, jint x)
{
	(void)env;
	(void)cls;
	return x * 3;
}

JNIEXPORT jint JNICALL Java_Natives_instanceNative(JNIEnv *env, jobject self, jint x)
{
	(void)env;
	(void)self;
	return x + 5;
}

/* Calls back into Java: Natives.callback(int) runs inside this native frame. */
JNIEXPORT jint JNICALL Java_Natives_callsBack(JNIEnv *env, jobject self, jint x)
{
	jclass cls = (*env)->GetObjectClass(env, self);
	jmethodID cb = (*env)->GetMethodID(env, cls, "callback", "(I)I");
	if (cb == NULL)
		return -1;
	return (*env)->CallIntMethod(env, self, cb, x);
}

JNIEXPORT jlong JNICALL Java_Driven_nmul(JNIEnv *env, jclass cls, jint x)
{
	(void)env;
	(void)cls;
	return (jlong)x * 31;
}
