// Package calibration removes the profiler's own overhead from the metrics
// it measures, the way JProf does (README, References: [PI], [Patent]).
//
// Every method event on a thread ends one delta: the metric between the
// Late Read of the previous event and the Early Read of this one. Besides
// the work of the method that ran in between, a delta holds the glue code
// of both events: how much depends on the sequence of method types and
// transitions around it, so the overhead is kept per sequence Key — the
// 5-element sequence
//
//	(running before the previous event, its transition,
//	 running before this event, this transition, type that runs next)
//
// 8·3·8·3·8 = 4608 keys. The minimum delta ever observed for a key is the
// overhead of its quietest event; part of it (Env, the environmental
// overhead) is glue that runs even without profiling and belongs to the
// program. The overhead jitters from one event to the next, so a typical
// event costs more than the minimum: the trainer measures that excess per
// key (Excess, the median delta less the minimum), and calibration
// removes it too. The calibrated value of an event is
//
//	delta − (min[key] − kept[key]), never below zero, kept = env − excess,
//
// and a call-tree node's calibrated base is its raw sum minus
// Σ_key count(node, key)·(min[key] − kept[key]), never below zero.
//
// How the agent forms keys (the contract Sequencer implements and the C hot
// path follows): a thread keeps a shadow stack whose bottom is the thread
// root, of type Other. The running type of an event is the type of the top
// frame before the event; the type that runs next is the type of the top
// frame after it (the callee for an entry, the caller returned to for a
// matched exit; the stack does not move for an exit whose entry was never
// seen). Before its first event a thread is as if its root had just been
// entered: previous running type Other, previous transition En.
//
// Minima found in one run are unreliable for rare sequences, so a trainer
// (package trainer and java/src/Trainer.java) drives every sequence many
// times and saves the minima, with environmental values measured without
// the agent and each key's typical excess, as a Table. Tables are plain text (see Table) and ship
// embedded for known JVMs (Default); Calibrator is the reference
// implementation of the algorithm over an event stream, used by tests and
// by post-processing of log-gen files.
package calibration
