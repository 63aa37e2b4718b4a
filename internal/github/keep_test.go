package github_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/daemon"
	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// heard is a sink: a sequence listener and a gate that decides nothing, recording what a notifier would
// send (sequence events, superseded plans).
type heard struct {
	mu         sync.Mutex
	events     []sequence.Event
	superseded []string // "revision planHash by"
}

func (h *heard) SequenceEvent(_ context.Context, e sequence.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *heard) Propose(context.Context, approval.Proposal) (approval.Decision, error) {
	return approval.Decision{}, nil
}

func (h *heard) Superseded(_ context.Context, p approval.Proposal, by string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.superseded = append(h.superseded, p.Revision+" "+p.Plan.PlanHash+" "+by)
	return nil
}

func (h *heard) Completed(context.Context, approval.Proposal, approval.Outcome) error { return nil }

// failedDeliveries are the <env>.delivery.finished events with result fail heard for revision.
func (h *heard) failedDeliveries(revision string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		if strings.HasSuffix(e.Name, ".finished") && e.Task == "" && e.Data.Revision == revision && e.Data.Result == promote.ResultFail {
			out = append(out, e.Name+" "+e.Data.Status)
		}
	}
	return out
}

func (h *heard) supersededOf(revision string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.superseded {
		if strings.HasPrefix(s, revision+" ") {
			out = append(out, s)
		}
	}
	return out
}

// passAt triggers a fetch of the newest commit, rev, and waits until prod's worker finished a pass that
// planned it (its status names rev, and a pass ended after the trigger).
func (f *flow) passAt(rev string) {
	f.t.Helper()
	before := f.passes()
	f.trigger()
	deadline := time.Now().Add(30 * time.Second)
	for {
		env, err := f.d.Environment(context.Background(), "prod")
		if err == nil && env.Revision == rev && f.passes() > before {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("no pass of prod at %s finished (status %+v, %v)", rev[:7], env, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFlowPendingPlanOutlivesUnrelatedCommit: prod needs two approvers. maria approves its plan; then a
// commit changes only devel. prod's plan stays pending, bound to the revision reviewed, with maria's
// approval: the same check run still awaits, nobody hears it superseded or its delivery failed. mark's
// click on that run applies it, approved by both. A commit that does change prod then supersedes the next
// pending plan as before.
func TestFlowPendingPlanOutlivesUnrelatedCommit(t *testing.T) {
	f := newFlow(t)
	f.gh.Repo(owner, repo).SetPermission("mark", "maintain")
	e := f.cfg.Environments["prod"]
	e.Approvals.Required = 2
	f.cfg.Environments["prod"] = e
	sink := &heard{}
	f.opts = []daemon.Option{daemon.WithSequenceListener(sink)}
	f.sink = sink
	commit := func(files map[string]string, msg string) string {
		sha := f.git.Repo("manifests").Commit(t, "main", files, msg)
		f.gh.Repo(owner, repo).MirrorCommit("main", sha, files, msg)
		return sha
	}

	sha := f.commit("1.0.1")
	f.start()
	run := f.waitRun(sha, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve by maria: %d", code)
	}
	counted := f.waitRunID(run.ID, "counting maria", func(r githubtest.CheckRun) bool { return awaitingApproval(r) && strings.Contains(r.Title, "1 of 2") })

	devel := commit(map[string]string{"environments/devel/manifest.json": `{"services": [{"name": "api", "containers": [{"dockerTag": "2.0.0"}]}]}`}, "devel: api 2.0.0")
	f.passAt(devel)
	st, err := f.d.Store().Load(context.Background(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if p := st.Pending; p == nil || p.Revision != sha || p.PlanHash != run.ExternalID || !cmp.Equal(p.Approvers(), []string{"github:maria"}) {
		got := "none"
		if p != nil {
			got = fmt.Sprintf("%s at %s approved by %v", p.PlanHash, p.Revision[:7], p.Approvers())
		}
		t.Fatalf("after a devel-only commit prod's pending plan is %s; want %s at %s approved by maria", got, run.ExternalID, sha[:7])
	}
	if got, _ := f.gh.Repo(owner, repo).CheckRun(run.ID); got.Updates != counted.Updates || !awaitingApproval(got) {
		t.Errorf("prod's check run was changed by a devel-only commit (%d updates, was %d): %+v", got.Updates, counted.Updates, got)
	}
	for _, r := range f.gh.Repo(owner, repo).CheckRuns() {
		if r.HeadSHA == devel && r.Name == "stagehand/prod" {
			t.Errorf("a check run for prod on the devel-only commit: %+v", r)
		}
	}

	if code, _ := f.click(run.ID, "approve", "mark", secret); code != http.StatusOK {
		t.Fatalf("approve by mark: %d", code)
	}
	f.waitImage("1.0.1")
	f.waitRunID(run.ID, "success", concluded("success"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := f.history()
		if len(h) > 0 && h[0].Result == approval.ResultSucceeded {
			if h[0].Revision != sha || h[0].Approver != "github:maria, github:mark" {
				t.Errorf("history entry %+v: want revision %s approved by maria, mark", h[0], sha[:7])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("history %+v: want the plan applied", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := sink.failedDeliveries(sha); len(got) != 0 {
		t.Errorf("sinks heard prod's delivery of %s fail: %v", sha[:7], got)
	}
	if got := sink.supersededOf(sha); len(got) != 0 {
		t.Errorf("sinks heard prod's plan of %s superseded: %v", sha[:7], got)
	}

	// A commit that changes prod supersedes a pending plan, approvals and all.
	sha2 := f.commit("1.0.2")
	f.trigger()
	run2 := f.waitRun(sha2, "awaiting approval", awaitingApproval)
	if code, _ := f.click(run2.ID, "approve", "maria", secret); code != http.StatusOK {
		t.Fatalf("approve by maria: %d", code)
	}
	f.waitRunID(run2.ID, "counting maria", func(r githubtest.CheckRun) bool { return awaitingApproval(r) && strings.Contains(r.Title, "1 of 2") })
	sha3 := f.commit("1.0.0")
	f.trigger()
	if r := f.waitRunID(run2.ID, "superseded", concluded("neutral")); !strings.Contains(r.Title, "Superseded by "+sha3[:7]) {
		t.Errorf("superseded run's title %q", r.Title)
	}
	f.waitRun(sha3, "awaiting approval", awaitingApproval)
	deadline = time.Now().Add(30 * time.Second)
	for len(sink.failedDeliveries(sha2)) == 0 || len(sink.supersededOf(sha2)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sinks never heard the plan of %s superseded (%v) and its delivery aborted (%v)", sha2[:7], sink.supersededOf(sha2), sink.failedDeliveries(sha2))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
