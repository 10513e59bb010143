/*
 * ptt_internal.h: functions shared by the C files of package ptt and its
 * Go side; not part of the hot-path API in ptt.h.
 */
#ifndef JP_PTT_INTERNAL_H
#define JP_PTT_INTERNAL_H

#include <stdint.h>
#include "ptt.h"

extern uint64_t jp_ptt_fallbacks;
extern uint64_t jp_ptt_perf_fallbacks; /* bpf threads without a slot reading perf */
uint64_t jp_ptt_fallbacks_load(void);
uint64_t jp_ptt_perf_fallbacks_load(void);
extern uint64_t jp_ptt_tsc_drifts, jp_ptt_tsc_drift_ppm;
uint64_t jp_ptt_tsc_drifts_load(void);
uint64_t jp_ptt_tsc_mult_load(void);
uint64_t jp_ptt_tsc_drift_ppm_load(void);

/* bpf backend (ptt_bpf.c) */
extern uint32_t jp_ptt_bpf_force_pidns;
int jp_ptt_bpf_attach(int slots_fd, int tids_fd, uint32_t owner);
int jp_ptt_bpf_detach(void);
int jp_ptt_bpf_register(jp_ptt_thread *t);
void jp_ptt_bpf_unregister(jp_ptt_thread *t);
uint64_t jp_ptt_bpf_nslots(void);
uint64_t jp_ptt_bpf_in_use(void);
uint64_t jp_ptt_bpf_no_slot(void);
uint64_t jp_ptt_bpf_unresolved(void);
uint32_t jp_ptt_bpf_pidns(void);
int jp_ptt_bpf_selftest(char *why, size_t n);

/* perf backend (ptt_perf.c) */
extern int jp_ptt_perf_exclude_kernel;
int jp_ptt_perf_register(jp_ptt_thread *t);
void jp_ptt_perf_unregister(jp_ptt_thread *t);
int jp_ptt_perf_probe(int metric, int exclude_kernel);
int jp_ptt_perf_user_time(void);

#endif
