// Package jvmtest runs real JVMs with the real libjprof agent for tests
// and benchmarks: it builds the agent and the Java workloads once (with
// make), runs a Java class under the agent in a fresh LOGPATH, and finds
// and parses the files the agent wrote. The java it runs is JAVA_HOME's
// (else the one on PATH); JDKs and OnOtherJDKs run key tests again on
// every other JDK installed, so the agent is tested on each.
package jvmtest
