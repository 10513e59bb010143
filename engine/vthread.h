/*
 * vthread.h: virtual threads (vthread.c): records that move from one
 * carrier OS thread to another. Apart because only the JVMTI binding's
 * virtual-thread support (jvmti/vthreads.c) uses them, on top of
 * thread.h.
 */
#ifndef JP_VTHREAD_H
#define JP_VTHREAD_H

#include "thread.h"

/* Virtual threads: threads the JVM runs on top of OS threads (carriers),
 * which can leave one carrier in the middle of a method (unmount) and go
 * on later on another (mount). Each gets a record and a tree of its own;
 * events on a carrier go to the virtual thread mounted on it, through
 * jp_self. The PTT state stays the OS thread's: a mounted virtual thread
 * reads through its carrier's registration. At a switch the thread that
 * stops is charged up to a reading taken there, the one that goes on
 * starts from a reading taken just after, and the time in between (the
 * JVM's switch itself) is charged to neither; the first event after a
 * switch is not used to calibrate.
 *
 * jp_vthread_new makes a virtual thread's record (tid: the JVM's id of
 * the thread), not mounted. jp_vthread_mount, on the carrier's OS thread,
 * makes vt the calling thread's current record (the carrier's record is
 * made first if it has none, named carrier_name); jp_vthread_unmount
 * gives the carrier its own record back; jp_vthread_end, on the carrier,
 * unmounts vt and ends its record. */
jp_thread *jp_vthread_new(const char *name, int tid);
void jp_vthread_mount(jp_thread *vt, const char *carrier_name);
void jp_vthread_unmount(jp_thread *vt);
void jp_vthread_end(jp_thread *vt);

#endif /* JP_VTHREAD_H */
