/*
 * bci_context.c: what decides whether a BCICACHE entry still holds: the
 * context a run's entries live in (the transformer's jar, its flags and
 * filters, the JVM and its runtime image), the stamps of the class
 * path's jars that entries depending on them are named with, and whether
 * this JVM's classes may not be their files at all (another agent, a
 * patched module), when no entry may depend on another class's file.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bci_cache.h"

/* bci_stamp_recent: a change time within two seconds of now. A file
 * changed again within the same tick of the file system's clock (coarse,
 * and coarser over NFS) keeps its times: such a file's stamp holds a
 * value of this run alone, so that the entries named with it are never
 * read again (a run straight after a build keeps none of the classes
 * that depend on the class path; the next run does). */
static int bci_stamp_recent(const struct timespec *t, const struct timespec *now)
{
	long long d = (long long)now->tv_sec - (long long)t->tv_sec;
	return d < 2 && d > -2;
}

/* jp_bci_cache_stamp chains into (*a, *b) the identity of each file of a
 * path list (of one path, with one): its size, modification and change
 * times, inode and device (a jar rewritten in place or replaced changes
 * them); for a directory the same but its size, which covers the
 * entries directly in it, not its subdirectories' (ClassPath.java lets
 * a kept class depend on a directory only for names whose top package is
 * not there: stampedAbsent); only its name for what is neither. With
 * JP_STAMP_CWD an empty element is the working directory, as the JDK's
 * application loader reads java.class.path (an empty one included);
 * otherwise it is nothing. */
void jp_bci_cache_stamp(const char *list, int how, uint64_t *a, uint64_t *b)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (;;) {
		const char *end = (how & JP_STAMP_ONE) ? NULL : strchr(list, ':');
		size_t len = end ? (size_t)(end - list) : strlen(list);
		char path[4096], st_desc[4200];
		if (len < sizeof path && (len > 0 || (how & JP_STAMP_CWD))) {
			memcpy(path, list, len);
			path[len] = 0;
			if (len == 0)
				strcpy(path, ".");
			struct stat st;
			int n;
			if (stat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
				n = snprintf(st_desc, sizeof st_desc, "|%s:%lld:%lld.%09ld:%lld.%09ld:%llu:%llu", path,
					     S_ISREG(st.st_mode) ? (long long)st.st_size : -1LL,
					     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
					     (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, (unsigned long long)st.st_ino,
					     (unsigned long long)st.st_dev);
			else
				n = snprintf(st_desc, sizeof st_desc, "|%s:-", path);
			if (n > 0 && (size_t)n < sizeof st_desc)
				jp_cache_hash2((const unsigned char *)st_desc, (size_t)n, *a, *b, a, b);
			if (n > 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) &&
			    bci_stamp_recent(&st.st_ctim, &now)) {
				n = snprintf(st_desc, sizeof st_desc, "|recent:%d:%lld.%09ld", (int)getpid(), (long long)now.tv_sec,
					     now.tv_nsec);
				jp_cache_hash2((const unsigned char *)st_desc, (size_t)n, *a, *b, a, b);
			}
		}
		if (end == NULL)
			break;
		list = end + 1;
	}
}

/* bci_foreign_opt looks at one JVM option: 1 when it makes a class
 * differ from its file in a way the context does not hold (another
 * agent, which may change any class: BCICACHE's own -agentpath counts
 * as one; a patched or upgraded module; a boot class path append, which
 * may shadow the class path), and counts agents. */
static int bci_foreign_opt(const char *o, int *agents)
{
	static const char *const agent[] = { "-agentpath:", "-agentlib:", "-javaagent:" };
	static const char *const foreign[] = { "--patch-module", "-Djdk.module.patch", "--upgrade-module-path",
					       "-Djdk.module.upgrade.path", "-Xbootclasspath/a", "-Xbootclasspath/p",
					       "--add-modules", "-Djdk.module.addmods", "--limit-modules", "-Djdk.module.limitmods",
					       "-XX:VMOptionsFile", "-Xrun" };
	if (strncmp(o, "-J", 2) == 0) /* a JDK tool's launcher passes these to the JVM */
		o += 2;
	for (size_t i = 0; i < sizeof agent / sizeof agent[0]; i++)
		if (strncmp(o, agent[i], strlen(agent[i])) == 0)
			++*agents;
	for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
		if (strncmp(o, foreign[i], strlen(foreign[i])) == 0)
			return 1;
	return 0;
}

/* jp_bci_foreign says whether this JVM's classes may not be what their
 * files say, so that no class whose rewrite depends on another class's
 * file is kept (Transformer's FOREIGN). The JVM does not tell its
 * options: they are read from the launcher's command line (up to the
 * main class; an argument file, which the launcher expands, counts as
 * foreign) and the environment variables the launcher and the JVM read.
 * A JVM made by a program of its own, through JNI, is judged by the
 * options in the environment only. */
int jp_bci_foreign(void)
{
	int agents = 0, foreign = 0;
	char buf[65536];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0 || n == (ssize_t)sizeof buf - 1)
		return 1; /* unread, or longer than read: unknown */
	buf[n] = 0;
	/* Options that take the next argument as their value. */
	static const char *const valued[] = { "-cp", "-classpath", "--class-path", "-p", "--module-path", "--upgrade-module-path",
					      "--add-modules", "--limit-modules", "--add-reads", "--add-exports", "--add-opens",
					      "--patch-module", "--enable-native-access", "--source" };
	int first = 1;
	for (char *a = buf; a < buf + n; a += strlen(a) + 1) {
		if (first) { /* the program itself */
			first = 0;
			continue;
		}
		if (a[0] == '@')
			return 1;
		if (a[0] != '-')
			break; /* the main class: the program's arguments follow */
		if (strcmp(a, "-jar") == 0 || strcmp(a, "-m") == 0 || strcmp(a, "--module") == 0)
			break;
		foreign |= bci_foreign_opt(a, &agents);
		for (size_t i = 0; i < sizeof valued / sizeof valued[0]; i++)
			if (strcmp(a, valued[i]) == 0) {
				a += strlen(a) + 1; /* its value */
				break;
			}
	}
	static const char *const env[] = { "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS" };
	for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
		const char *v = getenv(env[i]);
		if (v == NULL)
			continue;
		char tok[4096];
		while (*v) {
			while (*v != 0 && isspace((unsigned char)*v))
				v++;
			/* A token: up to white space outside quotes, quotes taken
			 * out, as the JVM reads these variables. */
			size_t l = 0;
			char q = 0;
			for (; *v != 0 && (q != 0 || !isspace((unsigned char)*v)); v++) {
				if (q == 0 && (*v == '\'' || *v == '"'))
					q = *v;
				else if (q != 0 && *v == q)
					q = 0;
				else if (l < sizeof tok - 1)
					tok[l++] = *v;
			}
			tok[l] = 0;
			if (l > 0)
				foreign |= bci_foreign_opt(tok, &agents) || tok[0] == '@';
		}
	}
	return foreign || agents > 1;
}

/* jp_bci_cache_context names the context directory: a hash of what decides
 * the transformer's output: its jar, the options and the JVM (its
 * version, home and runtime image, whose classes' trivial methods other
 * classes' rewrites may depend on). -1 if the jar cannot be read. */
int jp_bci_cache_context(jvmtiEnv *jvmti, const char *format, char *out, size_t outlen)
{
	int fd = open(bci.jar, O_RDONLY | O_CLOEXEC);
	struct stat st;
	unsigned char *jar = NULL;
	size_t got = 0;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && (jar = malloc((size_t)st.st_size)) != NULL) {
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, jar + got, (size_t)st.st_size - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
	}
	if (fd >= 0)
		close(fd);
	if (jar == NULL || got != (size_t)st.st_size) {
		free(jar);
		return -1;
	}
	uint64_t ja, jb, da, db;
	jp_cache_hash2(jar, got, 0, 0, &ja, &jb);
	free(jar);
	/* Each piece hashed after the other, each with its end marked: none
	 * is cut, whatever its length. */
	char desc[64];
	snprintf(desc, sizeof desc, "%s %x %d", format, JP_BCI_CACHED_ID, bci.flags);
	jp_cache_hash2((const unsigned char *)desc, strlen(desc) + 1, ja, jb, &da, &db);
	const char *filters[2] = { bci.include ? bci.include : "", bci.exclude ? bci.exclude : "" };
	for (int i = 0; i < 2; i++)
		jp_cache_hash2((const unsigned char *)filters[i], strlen(filters[i]) + 1, da, db, &da, &db);
	static const char *const props[] = { "java.vm.version", "java.home", "libjprof.bci.base", "jdk.module.path",
					     "jdk.util.jar.enableMultiRelease", "jdk.util.jar.version" };
	for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
		char *v = NULL;
		(*jvmti)->GetSystemProperty(jvmti, props[i], &v);
		const char *t = v ? v : "";
		jp_cache_hash2((const unsigned char *)t, strlen(t) + 1, da, db, &da, &db);
		if (v != NULL)
			(*jvmti)->Deallocate(jvmti, (unsigned char *)v);
	}
	char *home = NULL;
	if ((*jvmti)->GetSystemProperty(jvmti, "java.home", &home) == JVMTI_ERROR_NONE && home != NULL) {
		char img[4096];
		if ((size_t)snprintf(img, sizeof img, "%s/lib/modules", home) < sizeof img)
			jp_bci_cache_stamp(img, JP_STAMP_ONE, &da, &db);
		(*jvmti)->Deallocate(jvmti, (unsigned char *)home);
	}
	snprintf(out, outlen, "ctx-%016llx%016llx", (unsigned long long)da, (unsigned long long)db);
	return 0;
}
