package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/status"
)

// TestStatusCommand prints prod's matrix from the real daemon: web pending
// 1.0.0 → 2.0.0, in text, wide and JSON, and refuses names that do not exist.
func TestStatusCommand(t *testing.T) {
	server, tokenFile, _, _ := approveWorld(t)
	base := []string{"status", "--server", server, "--token-file", tokenFile}
	var out string
	// The pending plan is kept at the gate and the services' observation as
	// the pass ends: wait for both (the web row, and the plan pending).
	shown := func(out string) bool {
		return strings.Contains(out, "approval pending") && strings.Contains(out, "\nweb ")
	}
	for deadline := time.Now().Add(30 * time.Second); !shown(out); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the pending plan:\n%s", out)
		}
		var code int
		if out, _, code = runDecision(t, false, "", base...); code != 0 {
			t.Fatalf("status: exit %d", code)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "SERVICE PROD" ||
		strings.Join(strings.Fields(lines[1]), " ") != "PHASE AwaitingApproval" ||
		strings.Join(strings.Fields(lines[2]), " ") != "web ◔ pending 1.0.0 → 2.0.0" || !strings.HasPrefix(lines[3], "prod: ◔ approval pending: revision ") {
		t.Errorf("status:\n%s", out)
	}
	out, _, code := runDecision(t, false, "", append(base, "-o", "wide", "--service", "web", "--env", "prod")...)
	if wide := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(wide) != 2 ||
		strings.Join(strings.Fields(wide[1]), " ") != "web prod a ◔ pending 1.0.0 2.0.0 -" {
		t.Errorf("status -o wide: exit %d\n%s", code, out)
	}
	out, _, code = runDecision(t, false, "", append(base, "-o", "json")...)
	var m status.Matrix
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || len(m.Services) != 1 || m.Services[0].Cells[0].State != status.CellPending ||
		m.Environments[0].Phase != status.PhaseAwaitingApproval {
		t.Errorf("status -o json: exit %d, %v\n%s", code, err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--env", "qa"}, `--env "qa": no such environment; configured: prod`},
		{[]string{"--service", "db"}, `--service "db": in no environment; services: web`},
		{[]string{"-o", "yaml"}, `--output "yaml": want text, wide or json`},
	} {
		if _, stderr, code := runDecision(t, false, "", append(base, tc.args...)...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("status %v: exit %d, %s; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestStatusReleaseWait: `reconciler status` says an environment is deployed
// and waits for its release approval, not that a plan waits to be applied
// (nor that it rolls out).
func TestStatusReleaseWait(t *testing.T) {
	m := status.Matrix{
		Environments: []status.MatrixEnvironment{{Name: "devel", Pending: "sha256:h2", PendingRevision: "0123456789abcdef", Release: true, Required: 1}},
		Services:     []status.MatrixRow{{Service: "web", Cells: []*status.MatrixCell{{Version: "2.0.0", State: status.CellPending}}}},
	}
	var b strings.Builder
	if err := printMatrix(&b, m); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if want := "devel: ◔ deployed; release approval pending: revision 0123456789ab, plan sha256:h2"; len(lines) != 3 || lines[2] != want {
		t.Errorf("status:\n%s\nwant its last line %q", b.String(), want)
	}
}

// TestStatusShowsWhy: `reconciler status` prints, under an environment's pending plan, the messages of
// the approval rules that apply to it, and what the environment waits for (its deploy window).
func TestStatusShowsWhy(t *testing.T) {
	m := status.Matrix{Environments: []status.MatrixEnvironment{{Name: "prod", Phase: status.PhaseDeferred, Pending: "h2", PendingRevision: "3f2a9c1d",
		Approvals: 2, Required: 2, Reasons: []string{"payments-api changes need 2 approvers from acme/payments"},
		Waiting: []string{"waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin"}}}}
	var b strings.Builder
	if err := printMatrix(&b, m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"prod: ◔ approval pending (2 of 2 approvals): revision 3f2a9c1d, plan h2\n",
		"prod:   approval rule: payments-api changes need 2 approvers from acme/payments\n",
		"prod: ⏸ waiting for the deploy window (inside the deny window year-end): opens Mon 4 Jan 2027 08:00 Europe/Berlin\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status does not say %q:\n%s", want, b.String())
		}
	}
}
