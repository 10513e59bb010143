package main

import (
	"fmt"
	"io"
	"time"

	"github.com/libjprof/libjprof/internal/atomicfile"
	"github.com/libjprof/libjprof/jvmti"
	"github.com/libjprof/libjprof/reports"
)

// writeJLM writes log-jlm.<seq> beside log-rt.<seq>: the exact lock
// monitor's counts (JLM, with BCI) over the same span as the log-rt.
func (a *agent) writeJLM(seq int, iv *reports.Interval) (string, error) {
	rows, lost := jvmti.ReadJLM()
	j := &reports.JLM{Lost: lost,
		Header: []string{
			fmt.Sprintf("Process_Number_ID=%d", a.pid),
			"Main=" + a.mainClass,
			"Time=" + time.Now().UTC().Format(time.RFC3339Nano),
			"Counts=" + string(iv.Counts),
			"Note: every monitor taken by instrumented code (synchronized blocks and methods; not java.base's or other uninstrumented code's, nor JNI MonitorEnter, nor static synchronized methods of class files older than Java 5), by site and class of the monitor's object; GETS takes, REC of a monitor the thread held already, SLOW after blocking; HOLD from the acquisition to the release, less Object.wait; WAIT blocked entering (JVMTI's contended-monitor events), OBJWAIT in Object.wait",
		}}
	if !a.opts.VThreads {
		j.Header = append(j.Header, "Note: NOVTHREADS: a virtual thread that leaves its carrier inside a synchronized block (JDK 24 and later) mixes its monitors with the carrier's next thread's: REC and HOLD may be off")
	}
	for _, r := range rows {
		j.Rows = append(j.Rows, reports.JLMRow{Gets: r.Gets, Recursive: r.Recursive, Slow: r.Slow, Wait: r.Wait,
			Hold: r.Hold, ObjectWaits: r.ObjectWaits, ObjectWait: r.ObjectWait, Class: reports.JLMClass(r.Class), Site: r.Site})
	}
	path := a.fileName("jlm", seq)
	return path, atomicfile.Write(path, func(w io.Writer) error { return reports.WriteJLM(w, j) })
}
