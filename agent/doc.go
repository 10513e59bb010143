// Command agent is libjprof.so, the JVMTI agent, built with
// go build -buildmode=c-shared and loaded with
//
//	java -agentpath:/path/libjprof.so=OPTIONS ...
//
// It parses the options (and $JPROFOPTS), sets up the PTT backend, the
// engine and the event source the options choose (packages ptt, engine
// and jvmti), and owns the agent's lifecycle: log-msg, starting and
// stopping the source, and writing the reports from the engine's trees.
// There is exactly one agent per JVM: the *agent made in Agent_OnLoad.
package main
