// Package trainer makes calibration tables: it runs the Java trainer
// (java/src/Trainer.java) under the agent several times, merges the minima
// the agent writes at VM death (CALOUT=), measures the environmental
// overhead of each call pattern without the agent (Trainer --env, under
// -Xint), and fills in the provenance that lets later runs find the table
// (calibration.Default) or refuse it (calibration.Table.Matches).
//
// JProf's calibration (README, References: [PI], [Patent]) works this
// way: minima found online are
// unreliable for rare sequences, so a program that generates events in as
// many valid sequences as possible, many times each, trains the profiler;
// the environmental overhead — glue that runs without profiling too — is
// measured separately and kept in the program's numbers.
//
// The trainer Java program needs the agent (build/libjprof.so), its classes
// (build/java) and its native library jptrainer (build/native, from
// java/native/trainer.c); trainer/cmd/train is the command `make train`
// runs.
package trainer
