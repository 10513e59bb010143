package trainer

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseJVMInfo(t *testing.T) {
	out := `Property settings:
    file.encoding = UTF-8
    java.library.path = /usr/java/packages/lib
        /usr/lib/x86_64-linux-gnu/jni
    java.vm.info = mixed mode, sharing
    java.vm.name = OpenJDK 64-Bit Server VM
    java.vm.version = 17.0.15+6-Debian-1deb12u1
    os.arch = amd64

openjdk version "17.0.15" 2025-04-15
`
	assert.Equal(t, JVMInfo{Name: "OpenJDK 64-Bit Server VM", Version: "17.0.15+6-Debian-1deb12u1", Arch: "amd64"},
		parseJVMInfo(strings.NewReader(out)))
}

func TestCPUModel(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"x86", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.50GHz\nmodel name\t: other\n", "Intel(R) Xeon(R) Processor @ 2.50GHz"},
		{"arm", "processor\t: 0\nBogoMIPS\t: 48.00\nHardware\t: BCM2835\n", "BCM2835"},
		{"nothing", "", runtime.GOARCH},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, CPUModel(strings.NewReader(tc.in)), tc.name)
	}
}
