/* A JVMTI agent for the attach tests. Its options are "<rc>" or
 * "<rc>:<path>": Agent_OnAttach writes "attached" to <path>, if given,
 * and returns <rc>. It needs no JDK headers: the JVM passes a JavaVM*,
 * the options and a reserved pointer, and takes a jint back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((visibility("default")))
int Agent_OnAttach(void *vm, char *options, void *reserved) {
    (void)vm;
    (void)reserved;
    if (options == NULL) {
        return 3;
    }
    const char *path = strchr(options, ':');
    if (path != NULL) {
        FILE *f = fopen(path + 1, "w");
        if (f == NULL) {
            return 2;
        }
        fputs("attached\n", f);
        fclose(f);
    }
    return atoi(options);
}
