/*
 * bci_c2.c: bci_keep_out_of_c2 adds a compiler directive that keeps the agent's own
 * Java classes (the transformer and the ASM inside it) out of C2. They
 * run once per class load, but on large classes their loops get hot
 * enough for C2, which then compiles ClassReader.readCode, thousands of
 * bytecodes with everything it inlines, several times over (on-stack
 * replacement, then again after each deoptimization): measured on javac,
 * more C2 time than the program's own code takes, competing with the
 * program for the CPUs. C1 compiles them quickly and well enough.
 *
 * No JVMTI function reaches the compiler, but the diagnostic command
 * Compiler.directives_add does (dcmd.c). The directive is read from a
 * file, removed once added. Any failure leaves the JIT as it was and
 * says so.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bci.h"

void bci_keep_out_of_c2(JNIEnv *jni)
{
	/* Probe first, with the defaults: its Java probes (ROOTS's subEnter,
	 * the FFM probes) are methods that C2 must compile and inline into
	 * the program's code. The default is stated (Exclude: false): a
	 * directive with no option is disabled, and matching falls through
	 * to the next, whose Exclude made them not C2-compilable, so that
	 * C2 called them instead of inlining them (as -XX:+PrintCompilation
	 * showed, "excluded by CompileCommand"). C1 calls the FFM probes:
	 * inlined, each drags a method handle's lambda forms into every
	 * instrumented method it compiles. */
	static const char directive[] = "[{ match: [\"libjprof/bci/Probe.*\"], Exclude: false },\n"
					" { match: [\"libjprof/bci/*.*\"], c2: { Exclude: true } }]\n";
	static const char directive_ffm[] = "[{ match: [\"libjprof/bci/Probe.*\"], Exclude: false },\n"
					    " { match: [\"libjprof/bci/*.*\"], c2: { Exclude: true } },\n"
					    " { match: [\"*.*\"], c1: { inline: [\"-libjprof/bci/Probe.*\"] } }]\n";
	int ffm = (bci.flags & JP_BCI_FFM) != 0;
	const char *d = ffm ? directive_ffm : directive;
	size_t dn = strlen(d);
	char path[] = "/tmp/libjprof-directive-XXXXXX";
	const char *why = NULL;
	int fd = mkstemp(path);
	if (fd < 0 || write(fd, d, dn) != (ssize_t)dn) {
		why = "cannot write the directive file";
	} else {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "Compiler.directives_add %s", path);
		char *r = jp_dcmd(jni, cmd, &why);
		if (r != NULL && strstr(r, ffm ? "3 compiler directives added" : "2 compiler directives added") == NULL)
			why = "Compiler.directives_add did not add it";
		free(r);
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	if (why != NULL)
		jp_notef("BCI: %s: the agent's transformer may be compiled by C2 (more JIT work while classes load)", why);
	else
		jp_notef("info: BCI: the agent's transformer classes are kept out of C2 (a compiler directive), so that rewriting classes costs the program little JIT time");
}

