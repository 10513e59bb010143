// Command agent is libjprof.so, the JVMTI agent, built with
// go build -buildmode=c-shared and loaded with
//
//	java -agentpath:/path/libjprof.so=OPTIONS ...
//
// It parses the options (and $JPROFOPTS), sets up the PTT backend and the
// JVMTI hot path (packages ptt and jvmti), and owns the agent's lifecycle:
// log-msg, starting and stopping collection, and writing the reports.
// There is exactly one agent per JVM: the *agent made in Agent_OnLoad.
package main
