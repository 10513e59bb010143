// Package bench is libjprof's benchmark suite: what the agent costs a Java
// program, measured against the floor every JVMTI method-event agent pays,
// and written up as BENCHMARKS.md, with the performance targets the
// project set itself.
//
// The suite is a list of Parts, each measured and then written as one
// section of the report:
//
//   - Workload: java/src/BenchWorkload.java, a call-heavy phase with a known
//     number of calls that times itself, run under every configuration (no
//     agent with the JIT and with -Xint, an empty C agent, a naive C agent,
//     libjprof in each mode and PTT backend) in R interleaved rounds. Each
//     round runs every configuration once in a shuffled order, so that the
//     load of a shared machine drifting during the session lands on all of
//     them alike. Each JVM repeats the phase and keeps its fastest
//     repetition (other work only ever lengthens one); the report gives
//     medians and spreads over rounds, and the cost per event above the
//     empty agent as the median of per-round differences.
//   - Javac: a real program nobody here wrote (the JDK's javac compiling
//     java/src) with and without the agent: wall time, events, call-tree
//     nodes, peak memory, and an estimate of the agent's memory per node.
//   - SampleAccuracy: SAMPLE's self-time shares on java/src/SelfMix.java
//     (ten methods of known relative cost) beside the exact tree's,
//     calibrated and not, in the same execution mode (method events under
//     -Xint; BCI with the JIT), and beside JFR's execution samples.
//   - JFR: libjprof against the JVM's own answer on JDK 25 (skipped, and
//     said so, where there is none): JFR method timing (JEP 520) and
//     libjprof's BCI source instrument the same five javac classes, in
//     shuffled interleaved rounds beside no agent; wall times, and the
//     invocation counts per method of both compared, with a small program
//     showing why they differ where exceptions unwind frames.
//   - Threads: thread end under stress (many runs of thousands of short
//     threads under each event source, with and without a test-only shim
//     that widens the window around a thread's end), and the calibrated
//     time of identical interleaved work on threads the eBPF work area
//     serves and on threads past it (perf or clock reads).
//   - ReadCost: the per-read cost of each PTT backend beside rdtsc and bare
//     clock reads, in one process.
//   - LogGen: log-gen parse and tree build rate, on a real log-gen and on the
//     reports package's synthetic benchmark.
//   - Calibration: pending (another part of the project); a Part to fill in.
//
// A run of some parts (-parts) can be merged into the last full run's
// report (-merge-into): its sections and measured targets replace the
// old ones, and the header says when they were measured.
//
// Timing thresholds are never tested: the smoke test only checks that the
// suite runs and that every row is present. The targets are stated beside
// the numbers in the report.
package bench
