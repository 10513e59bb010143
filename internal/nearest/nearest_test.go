package nearest

import "testing"

func TestName(t *testing.T) {
	names := []string{"profile", "start", "stop", "flush", "SAMPLE", "LOGPATH"}
	for _, c := range []struct{ in, want string }{
		{"profil", "profile"},
		{"strat", "start"},
		{"SAMPEL", "SAMPLE"},
		{"LOGPAHT", "LOGPATH"},
		{"xyz", ""}, // nothing near
		{"stp", "stop"},
		{"s", ""}, // a distance of half the name or more is no guess
	} {
		if got := Name(c.in, names); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
