module github.com/libjprof/libjprof

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	github.com/gorilla/websocket v1.5.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/zap v1.28.0
	golang.org/x/sys v0.49.0
)

require (
	go.uber.org/multierr v1.10.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
