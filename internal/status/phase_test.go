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

// TestPhaseTransitions is the lifecycle as a table: which phase may follow
// which. It starts nothing.
func TestPhaseTransitions(t *testing.T) {
	I, AA, A, V, AR, RB, F := PhaseIdle, PhaseAwaitingApproval, PhaseApplying, PhaseVerifying, PhaseAwaitingRelease, PhaseRollingBack, PhaseFailed
	D := PhaseDeferred
	allowed := map[[2]Phase]bool{
		{I, AA}: true, {I, A}: true, {I, D}: true,
		{AA, A}: true, {AA, I}: true, {AA, F}: true, {AA, D}: true,
		{D, A}: true, {D, AA}: true, {D, I}: true, {D, F}: true,
		{A, V}: true, {A, I}: true, {A, RB}: true, {A, AA}: true, {A, F}: true,
		{V, AR}: true, {V, I}: true, {V, RB}: true,
		{AR, V}: true, {AR, I}: true, {AR, RB}: true,
		{RB, F}: true,
		{F, AA}: true, {F, A}: true, {F, I}: true, {F, D}: true,
	}
	for _, from := range Phases {
		for _, to := range Phases {
			want := from == to || allowed[[2]Phase{from, to}]
			if got := to.CanFollow(from); got != want {
				t.Errorf("%s.CanFollow(%s) = %v, want %v", to, from, got, want)
			}
		}
	}
	// Every phase is reachable from Idle and leads back to it.
	reach := func(from Phase) map[Phase]bool {
		seen := map[Phase]bool{from: true}
		for queue := []Phase{from}; len(queue) > 0; queue = queue[1:] {
			for _, to := range Phases {
				if !seen[to] && to.CanFollow(queue[0]) {
					seen[to] = true
					queue = append(queue, to)
				}
			}
		}
		return seen
	}
	for _, p := range Phases {
		if !reach(PhaseIdle)[p] {
			t.Errorf("%s cannot be reached from Idle", p)
		}
		if !reach(p)[PhaseIdle] {
			t.Errorf("%s never leads back to Idle", p)
		}
	}
	if PhaseIdle.CanFollow(PhaseRollingBack) {
		t.Error("a rollback ends Failed, never Idle: its revision must not be applied again")
	}
}
