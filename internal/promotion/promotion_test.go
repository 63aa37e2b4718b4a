package promotion_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/promotion"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) // a Wednesday

// env is a stage resolved with web and api at the versions given.
func env(name, web, api string) *manifest.Environment {
	root := "environments/" + name + "/manifest.json"
	svc := func(n, tag string) manifest.Service {
		return manifest.Service{Name: n, Source: root, Containers: []manifest.Container{{DockerName: n, DockerTag: tag}}}
	}
	return &manifest.Environment{Name: name, Root: root, Services: []manifest.Service{svc("web", web), svc("api", api)}}
}

// deployed is a history entry of name's deploy of e at rev, ended ago before now.
func deployed(id int64, rev, result string, e *manifest.Environment, ago time.Duration) approval.Entry {
	return approval.Entry{ID: id, Revision: rev, Result: result, Started: now.Add(-ago - time.Minute), Finished: now.Add(-ago),
		Manifest: &approval.Manifest{Root: e.Root, Services: e.Services}}
}

func pipeline(t *testing.T, prod string) *promote.Pipeline {
	t.Helper()
	pl, err := promote.Parse("pipeline.yaml", []byte("stages:\n  - name: devel\n  - name: staging\n    promoteFrom: devel\n    lockPath: apps/staging\n"+
		"  - name: prod\n    promoteFrom: staging\n    lockPath: apps/prod\n"+prod))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestWaits(t *testing.T) {
	staging2 := env("staging", "2.0.0", "1.0.0")
	prod1 := env("prod", "1.0.0", "1.0.0")
	devel := promotion.Stage{Head: env("devel", "2.0.0", "1.0.0"), Revision: "r2",
		History: []approval.Entry{deployed(1, "r2", approval.ResultSucceeded, env("devel", "2.0.0", "1.0.0"), 5*time.Hour)}}
	stagingAt := func(history ...approval.Entry) promotion.Stage {
		return promotion.Stage{Head: staging2, Revision: "r2", History: history}
	}
	prod := promotion.Stage{Head: prod1, Revision: "r2"}
	prodLocked := prod
	prodLocked.Locks = []lock.Lock{{Path: "apps/prod", Type: lock.Deploy, Author: "github:alice", ExpiresAt: now.Add(time.Hour)}}
	warned := deployed(3, "r2", approval.ResultSucceeded, staging2, 3*time.Hour)
	warned.Verification = []verify.TaskResult{{Result: verify.Warning}}
	tests := []struct {
		name    string
		prod    string // prod's gates in pipeline.yaml
		staging promotion.Stage
		prodIs  promotion.Stage
		want    promotion.Wait
	}{
		{name: "soaking", prod: "    requires: {healthy: true, soak: 1h}\n",
			staging: stagingAt(deployed(2, "r2", approval.ResultSucceeded, staging2, 20*time.Minute)), prodIs: prod,
			want: promotion.Wait{From: "staging", To: "prod",
				Says: "web soaking: healthy in staging for 20m0s of 1h0m0s (until 2026-11-25T12:40:00Z)"}},
		{name: "soaked", prod: "    requires: {healthy: true, soak: 1h}\n",
			staging: stagingAt(deployed(2, "r2", approval.ResultSucceeded, staging2, 2*time.Hour)), prodIs: prod,
			want: promotion.Wait{From: "staging", To: "prod", Ready: []string{"web"}, Says: "ready: web"}},
		{name: "the earlier stage's deploy failed", prod: "    requires: {healthy: true}\n",
			staging: stagingAt(deployed(2, "r2", approval.ResultFailed, staging2, time.Hour)), prodIs: prod,
			want: promotion.Wait{From: "staging", To: "prod",
				Says: "web not healthy: no successful stagehand/staging check run on the 1 newest commit(s)"}},
		{name: "a warning does not count unless triggeredOn accepts it", prod: "    requires: {healthy: true}\n",
			staging: stagingAt(warned), prodIs: prod,
			want: promotion.Wait{From: "staging", To: "prod",
				Says: "web not healthy: no successful stagehand/staging check run on the 1 newest commit(s)"}},
		{name: "an older healthy deploy of the same versions is the evidence", prod: "    requires: {healthy: true}\n",
			staging: stagingAt(deployed(3, "r3", approval.ResultRejected, staging2, time.Hour), deployed(2, "r1", approval.ResultSucceeded, staging2, 3*time.Hour)),
			prodIs:  prod,
			want:    promotion.Wait{From: "staging", To: "prod", Ready: []string{"web"}, Says: "ready: web"}},
		{name: "locked", prod: "    requires: {healthy: true}\n",
			staging: stagingAt(deployed(2, "r2", approval.ResultSucceeded, staging2, time.Hour)), prodIs: prodLocked,
			want: promotion.Wait{From: "staging", To: "prod",
				Says: "blocked: stage prod is locked: apps/prod is locked until Wed 25 Nov, 13:00 by a deploy."}},
		{name: "outside the window", prod: "    window: {schedule: \"0 9 * * 1\", duration: 2h}\n",
			staging: stagingAt(deployed(2, "r2", approval.ResultSucceeded, staging2, time.Hour)), prodIs: prod,
			want: promotion.Wait{From: "staging", To: "prod",
				Says: `blocked: promotion window "0 9 * * 1" (2h0m0s) is closed; it opens at 2026-11-30T09:00:00Z`}},
		{name: "in step", prod: "",
			staging: stagingAt(deployed(2, "r2", approval.ResultSucceeded, staging2, time.Hour)),
			prodIs:  promotion.Stage{Head: env("prod", "2.0.0", "1.0.0"), Revision: "r2"},
			want:    promotion.Wait{From: "staging", To: "prod", Says: "in step: prod runs what staging runs"}},
		{name: "the later stage does not resolve", prod: "",
			staging: stagingAt(), prodIs: promotion.Stage{Revision: "r2"},
			want: promotion.Wait{From: "staging", To: "prod", Says: "unknown: prod does not resolve at the newest revision"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stages := map[string]promotion.Stage{"devel": devel, "staging": tt.staging, "prod": tt.prodIs}
			got := promotion.Waits(pipeline(t, tt.prod), func(name string) (promotion.Stage, bool) {
				s, ok := stages[name]
				return s, ok
			}, now)
			if len(got) != 2 {
				t.Fatalf("Waits = %v, want devel → staging and staging → prod", got)
			}
			if diff := cmp.Diff(tt.want, got[1]); diff != "" {
				t.Errorf("staging → prod (-want +got):\n%s", diff)
			}
		})
	}
}
