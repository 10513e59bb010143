// Package reports holds libjprof's call-tree model and everything that
// turns it into files people read: the log-rt and log-gen formats of IBM
// Performance Inspector's JProf, the arcflow reports (xtree, xarc, xprof)
// of Alexander et al., pruning, pprof's profile.proto, collapsed stacks
// and a self-contained HTML flame graph.
//
// The agent builds a [Profile] in memory while the JVM runs and writes it
// with [WriteLogRT]; in GENERIC mode it streams events through a
// [LogGenWriter] instead. Post-processing reads either file back
// ([ParseLogRT], [BuildProfile], or [ReadProfile] which tells them apart)
// and renders reports from the same model, so that a call tree looks the
// same whether it was built live or rebuilt from a trace.
//
// Names in memory are the real bytes, whatever they hold (Java thread
// names can contain line breaks); every text format writes them through
// [EscapeName] and reads them back with [UnescapeName], so a name is one
// token on one line and a round trip is exact.
//
// The text formats of JProf keep the JVM's names with their type prefix
// ("J:java/util/TimSort.mergeLo(IIII)V"); the reports people read show
// them in a [NameForm], Java's by default
// ("java.util.TimSort.mergeLo(int, int, int, int)"), through [Rename]
// or a [Namer], which never give two methods one name.
//
// A file the agent had to cut after a write error (a full disk) ends
// with a truncation line ([TruncationLine]); the readers stop there and
// say so ([Profile.Truncated], [LogGenReader.Truncated]) instead of
// failing. A log-gen that reached its size limit (GENMAX) ends with a
// line that counts the events it left out ([SizeLimitLine],
// [Profile.SizeLimited], [LogGenReader.NotWritten]). A log-rt's header says the interval its counts cover
// ([Interval]).
//
// Everything here is plain Go without cgo and without global mutable
// state: the package is safe to use from several goroutines as long as
// each one has its own values.
package reports
