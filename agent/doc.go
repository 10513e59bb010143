// Command agent is libjprof.so, the JVMTI agent, built with
// go build -buildmode=c-shared and loaded with
//
//	java -agentpath:/path/libjprof.so=OPTIONS ...
//
// It parses the options (and $JPROFOPTS), sets up the PTT backend, the
// engine and the event source the options choose (packages ptt, engine
// and jvmti), and owns the agent's lifecycle: log-msg, starting and
// stopping the source, and writing the reports from the engine's trees.
// It also loads into a running JVM (Agent_OnAttach, as jprof profile
// and jcmd JVMTI.agent_load do): the same agent, with the sources HotSpot
// lets a late agent have (BCI and SAMPLE, not method events), VM init's
// work done at once, and a detach that takes the source out of the
// program. There is exactly one agent per JVM: the *agent made in
// Agent_OnLoad or the first Agent_OnAttach; a later load reaches it.
package main
