package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/libjprof/libjprof/ptt/pttbpf"
	"github.com/libjprof/libjprof/ptt/ptthelper"
)

// pttd is the privileged PTT helper: it loads the eBPF programs once (it
// needs CAP_BPF and CAP_PERFMON) and hands the work area's map FDs to
// every agent that connects, so JVMs without those capabilities get the
// bpf backend. Each client gets its own owner token and claims slots
// under it; when its connection closes (exit or crash) the slots it
// still holds are freed. Anyone who can connect can read and write every
// client's slots: the socket's mode (-mode, default 0660) decides who may.
func pttd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("pttd", flag.ContinueOnError)
	sock := fs.String("socket", ptthelper.DefaultSocket, "unix socket `path`")
	mode := fileMode(0o660)
	fs.Var(&mode, "mode", "socket permission `bits`, octal")
	slots := fs.Int("slots", 0, "thread `slots` of the work area (0: the eBPF backend's default)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("pttd takes no arguments")
	}
	if *slots < 0 {
		return usagef("pttd -slots %d: want 0 or more", *slots)
	}
	objs, err := pttbpf.Load(pttbpf.Options{Slots: *slots})
	if err != nil {
		return fmt.Errorf("pttd: loading the eBPF programs (needs CAP_BPF and CAP_PERFMON): %w", err)
	}
	defer objs.Close()
	srv := &ptthelper.Server{Objects: objs, Reclaimed: func(owner uint32, n int, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "jprof pttd: client %d left; freeing its slots failed: %v\n", owner, err)
		} else {
			fmt.Fprintf(stdout, "jprof pttd: client %d left; %d slots it still held freed\n", owner, n)
		}
	}}
	if err := srv.Listen(*sock); err != nil {
		return err
	}
	if err := os.Chmod(*sock, os.FileMode(mode)); err != nil {
		srv.Close()
		return err
	}
	fmt.Fprintf(stdout, "jprof pttd: %d slots (%s), serving %s; agents use PTTD=%s\n", objs.NSlots, objs.Mode, *sock, *sock)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		srv.Close()
	}()
	return srv.Serve()
}

// fileMode is a flag of permission bits written in octal, as chmod takes
// them: "660", "0660" and "0o660" are all rw-rw----.
type fileMode os.FileMode

func (m *fileMode) String() string { return fmt.Sprintf("%#o", uint32(*m)) }

func (m *fileMode) Set(s string) error {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O"), 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("%q is not octal permission bits (e.g. 0660)", s)
	}
	*m = fileMode(v)
	return nil
}
