package pttbpf

// The BPF object is generated and committed, so a normal build needs no
// clang. To regenerate (needs clang, llvm and libbpf-dev):
//
//	cd ptt/pttbpf && go generate
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -target bpfel ptt ptt.bpf.c -- -O2 -g -Wall -Werror -mcpu=v3 -I.. -I/usr/include/x86_64-linux-gnu
