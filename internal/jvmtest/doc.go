// Package jvmtest runs real JVMs with the real libjprof agent for tests
// and benchmarks: it builds the agent and the Java workloads once (with
// make), runs a Java class under the agent in a fresh LOGPATH, and finds
// and parses the files the agent wrote.
package jvmtest
