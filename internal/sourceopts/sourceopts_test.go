package sourceopts

import "testing"

func TestNamedAndWithout(t *testing.T) {
	for _, c := range []struct {
		opts          string
		named         bool
		without, only string
	}{
		{"BCI,RTARCF", true, "RTARCF", "BCI"},
		{"SAMPLE=cpu,LOGPATH=/x", true, "LOGPATH=/x", "SAMPLE=cpu"},
		{"nobci,START", true, "START", "nobci"},
		{"NOSAMPLE,START", false, "START", "NOSAMPLE"},
		{"METRICS=PTT_TIME", false, "METRICS=PTT_TIME", ""},
		{"lock=1ms", true, "", "lock=1ms"},
	} {
		if got := Named(c.opts); got != c.named {
			t.Errorf("Named(%q) = %v", c.opts, got)
		}
		if got := Without(c.opts); got != c.without {
			t.Errorf("Without(%q) = %q, want %q", c.opts, got, c.without)
		}
		if got := Only(c.opts); got != c.only {
			t.Errorf("Only(%q) = %q, want %q", c.opts, got, c.only)
		}
	}
}
