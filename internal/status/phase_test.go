package status

import "testing"

func TestParsePhase(t *testing.T) {
	for _, p := range Phases {
		got, err := ParsePhase(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePhase(%q) = %q, %v; want %q", p, got, err, p)
		}
	}
	if got, err := ParsePhase(""); err != nil || got != PhaseIdle {
		t.Errorf(`ParsePhase("") = %q, %v; want Idle`, got, err)
	}
	if _, err := ParsePhase("idle"); err == nil {
		t.Error(`ParsePhase("idle") = nil error; phases are case-sensitive`)
	}
}
