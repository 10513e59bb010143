module github.com/libjprof/libjprof

go 1.26.0

require (
	github.com/chzyer/readline v1.5.1 // indirect
	github.com/cilium/ebpf v0.22.0 // indirect
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20250417193237-f615e6bd150b // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
