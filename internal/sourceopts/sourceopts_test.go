package sourceopts

import "testing"

func TestNamedAndWithout(t *testing.T) {
	for _, c := range []struct {
		opts    string
		named   bool
		without string
	}{
		{"BCI,RTARCF", true, "RTARCF"},
		{"SAMPLE=cpu,LOGPATH=/x", true, "LOGPATH=/x"},
		{"nobci,START", true, "START"},
		{"NOSAMPLE,START", false, "START"},
		{"METRICS=PTT_TIME", false, "METRICS=PTT_TIME"},
		{"lock=1ms", true, ""},
	} {
		if got := Named(c.opts); got != c.named {
			t.Errorf("Named(%q) = %v", c.opts, got)
		}
		if got := Without(c.opts); got != c.without {
			t.Errorf("Without(%q) = %q, want %q", c.opts, got, c.without)
		}
	}
}
