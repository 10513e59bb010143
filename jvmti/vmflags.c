/*
 * vmflags.c: setting a HotSpot flag, and finding a static field, from
 * inside the process. HotSpot
 * exports a description of its own data structures (gHotSpotVMStructs,
 * the table the serviceability agent reads): where the table of -XX
 * flags is, how large an entry is, and where an entry keeps the flag's
 * name and value. SAMPLE uses it to turn DebugNonSafepoints on, which no
 * JVMTI call does: without it, compiled code describes its inlining only
 * at safepoints, and AsyncGetCallTrace charges a sample taken inside an
 * inlined method's loop to the method it was inlined into. SAMPLE also
 * reads the code cache's bounds there, to tell a return address in
 * compiled code from any other word on a stack, and where a Java thread
 * keeps its last Java frame.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "jvmtiagent.h"

static uint64_t vm_sym(const char *name, int *ok)
{
	const uint64_t *p = (const uint64_t *)dlsym(RTLD_DEFAULT, name);
	if (p == NULL) {
		*ok = 0;
		return 0;
	}
	return *p;
}

/* vm_field finds a field of the structure table: its offset (instance
 * field) or its address (static field). */
static int vm_field(const char *type, const char *field, uint64_t *offset, void **address)
{
	int ok = 1;
	char *const *table = (char *const *)dlsym(RTLD_DEFAULT, "gHotSpotVMStructs");
	uint64_t tn = vm_sym("gHotSpotVMStructEntryTypeNameOffset", &ok);
	uint64_t fn = vm_sym("gHotSpotVMStructEntryFieldNameOffset", &ok);
	uint64_t off = vm_sym("gHotSpotVMStructEntryOffsetOffset", &ok);
	uint64_t addr = vm_sym("gHotSpotVMStructEntryAddressOffset", &ok);
	uint64_t stride = vm_sym("gHotSpotVMStructEntryArrayStride", &ok);
	if (!ok || table == NULL || *table == NULL || stride == 0)
		return -1;
	for (const char *e = *table;; e += stride) {
		const char *t = *(const char *const *)(e + tn);
		const char *f = *(const char *const *)(e + fn);
		if (t == NULL)
			return -1; /* the table ends with an empty entry */
		if (f != NULL && strcmp(t, type) == 0 && strcmp(f, field) == 0) {
			if (offset != NULL)
				*offset = *(const uint64_t *)(e + off);
			if (address != NULL)
				*address = *(void *const *)(e + addr);
			return 0;
		}
	}
}

static int vm_type_size(const char *type, uint64_t *size)
{
	int ok = 1;
	char *const *table = (char *const *)dlsym(RTLD_DEFAULT, "gHotSpotVMTypes");
	uint64_t tn = vm_sym("gHotSpotVMTypeEntryTypeNameOffset", &ok);
	uint64_t sz = vm_sym("gHotSpotVMTypeEntrySizeOffset", &ok);
	uint64_t stride = vm_sym("gHotSpotVMTypeEntryArrayStride", &ok);
	if (!ok || table == NULL || *table == NULL || stride == 0)
		return -1;
	for (const char *e = *table;; e += stride) {
		const char *t = *(const char *const *)(e + tn);
		if (t == NULL)
			return -1;
		if (strcmp(t, type) == 0) {
			*size = *(const uint64_t *)(e + sz);
			return 0;
		}
	}
}

/* vm_flag_origin is a flag's origin, the low bits of its _flags (HotSpot's
 * JVMFlag::Flags: 0 DEFAULT, 1 COMMAND_LINE, 2 ENVIRON_VAR and others,
 * the same from JDK 11 to 25); -1 when the table does not say. */
static int vm_flag_origin(const char *f)
{
	uint64_t off = 0, size = 0;
	if (vm_field("JVMFlag", "_flags", &off, NULL) != 0 || vm_type_size("JVMFlag::Flags", &size) != 0)
		return -1;
	uint32_t v;
	if (size == 4)
		v = *(const uint32_t *)(f + off);
	else if (size == 2)
		v = *(const uint16_t *)(f + off);
	else
		return -1;
	return (int)(v & 0xf);
}

int jp_vm_set_bool_flag(const char *name, int value)
{
	uint64_t name_off = 0, addr_off = 0, size = 0;
	void *flags_at = NULL, *num_at = NULL;
	if (vm_field("JVMFlag", "_name", &name_off, NULL) != 0 || vm_field("JVMFlag", "_addr", &addr_off, NULL) != 0 ||
	    vm_field("JVMFlag", "flags", NULL, &flags_at) != 0 || vm_field("JVMFlag", "numFlags", NULL, &num_at) != 0 ||
	    vm_type_size("JVMFlag", &size) != 0 || flags_at == NULL || num_at == NULL || size == 0)
		return -1;
	const char *flags = *(const char *const *)flags_at;
	size_t n = *(const size_t *)num_at;
	for (size_t i = 0; flags != NULL && i < n; i++) {
		const char *f = flags + i * size;
		const char *fname = *(const char *const *)(f + name_off);
		if (fname != NULL && strcmp(fname, name) == 0) {
			char *addr = *(char *const *)(f + addr_off);
			if (addr == NULL)
				return -1;
			/* A value the user chose (-XX on the command line, in
			 * JAVA_TOOL_OPTIONS, a flags file) stays: it is theirs. */
			if (vm_flag_origin(f) > 0)
				return (*(volatile char *)addr != 0) == (value != 0) ? 1 : 2;
			*(volatile char *)addr = value != 0;
			return 0;
		}
	}
	return -2;
}

void *jp_vm_static(const char *type, const char *field)
{
	void *at = NULL;
	if (vm_field(type, field, NULL, &at) != 0)
		return NULL;
	return at;
}

long jp_vm_offset(const char *type, const char *field)
{
	uint64_t off = 0;
	if (vm_field(type, field, &off, NULL) != 0 || off > (1u << 20))
		return -1;
	return (long)off;
}
