package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/decision"
	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/wire"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// handoverWorld is prod needing required approvers, with a plan pending, and three daemons on its state:
// two that do not lead (standbys taking decisions) and a leader whose worker picks them up.
type handoverWorld struct {
	h        *harness
	standby  [2]*Daemon
	pending  approval.Pending
	newDaemo func() *Daemon
}

func newHandoverWorld(t *testing.T, required int) *handoverWorld {
	t.Helper()
	h := newHarness(t, "prod")
	e := h.cfg.Environments["prod"]
	e.Approvals = config.Approvals{Required: required}
	h.cfg.Environments["prod"] = e
	w := &handoverWorld{h: h}
	w.newDaemo = func() *Daemon {
		d, err := build(h.cfg, []wire.Option{wire.WithRESTConfig(cluster.Env(t).Config), wire.WithSourceOptions(gitsource.WithCacheDir(t.TempDir())),
			wire.WithReconcileOptions(reconcile.WithRolloutTimeout(0))})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ctx := context.Background()
	for i := range w.standby {
		w.standby[i] = w.newDaemo()
	}
	if err := w.standby[0].Once(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := w.standby[0].store.Load(ctx, "prod")
	if err != nil || st.Pending == nil {
		t.Fatalf("prod pending after one pass: %+v, %v", st, err)
	}
	w.pending = *st.Pending
	return w
}

// TestHandoverTwoStandbysTwoOfTwo: two people approve a 2-of-2 plan at the same moment, each through
// another standby; the leader applies the plan once, and the history names both. Then the same with a
// leader restarted between the two approvals.
func TestHandoverTwoStandbysTwoOfTwo(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			ctx := context.Background()
			w := newHandoverWorld(t, 2)
			leader := w.newDaemo()
			approve := func(i int, who string) error {
				p, err := w.standby[i].Approve(ctx, "prod", w.pending.PlanHash, ghUser(who))
				if err == nil && p == nil {
					err = errors.New("no plan answered")
				}
				return err
			}
			if restart {
				if err := approve(0, "alice"); err != nil {
					t.Fatal(err)
				}
				leader.workers["prod"].desk.PickUp(ctx) // nothing handed over yet: 1 of 2
				leader = w.newDaemo()                   // the leader restarts
				if err := approve(1, "bob"); err != nil {
					t.Fatal(err)
				}
			} else {
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, who := range []string{"alice", "bob"} {
					wg.Go(func() { errs[i] = approve(i, who) })
				}
				wg.Wait()
				if err := errors.Join(errs...); err != nil {
					t.Fatal(err)
				}
			}
			leader.workers["prod"].desk.PickUp(ctx)
			if got := cluster.Env(t).Image(t, w.h.ns["prod"], "web"); got != imageRepo+"web:1.0.0" {
				t.Fatalf("prod runs %s after both approvals, want web:1.0.0", got)
			}
			leader.workers["prod"].desk.PickUp(ctx) // anything left over must not act again
			st, err := leader.store.Load(ctx, "prod")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.History) != 1 || st.History[0].Result != approval.ResultSucceeded || st.History[0].PlanHash != w.pending.PlanHash {
				t.Fatalf("history %+v, want one success of %s", st.History, w.pending.PlanHash)
			}
			if diff := cmp.Diff([]string{"github:alice", "github:bob"}, slices.Sorted(slices.Values(st.History[0].Approvers))); diff != "" {
				t.Errorf("approvers recorded (-want +got):\n%s", diff)
			}
			if len(st.Handovers) != 0 || st.Pending != nil {
				t.Errorf("left in the state: handovers %+v, pending %+v; want neither", st.Handovers, st.Pending)
			}
		})
	}
}

// TestHandoverApproveAndReject: an approval and a rejection of one plan handed over within the same second,
// in either order, end rejected: the rejection is recorded (who, why), nothing is applied, and the queue
// is empty. With the single slot of old, the later decision overwrote the earlier.
func TestHandoverApproveAndReject(t *testing.T) {
	for _, rejectFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("rejectFirst=%v", rejectFirst), func(t *testing.T) {
			ctx := context.Background()
			w := newHandoverWorld(t, 1)
			decide := []func() error{
				func() error {
					_, err := w.standby[0].Approve(ctx, "prod", w.pending.PlanHash, ghUser("alice"))
					return err
				},
				func() error {
					_, err := w.standby[1].Reject(ctx, "prod", w.pending.PlanHash, approval.Why{By: ghUser("bob"), Reason: "not on a Friday"})
					return err
				},
			}
			if rejectFirst {
				decide[0], decide[1] = decide[1], decide[0]
			}
			for _, f := range decide {
				if err := f(); err != nil {
					t.Fatal(err)
				}
			}
			st, err := w.standby[0].store.Load(ctx, "prod")
			if err != nil || len(st.Handovers) != 2 {
				t.Fatalf("handovers waiting: %+v, %v; want both decisions", st.Handovers, err)
			}
			leader := w.newDaemo()
			leader.workers["prod"].desk.PickUp(ctx)
			if got := cluster.Env(t).Image(t, w.h.ns["prod"], "web"); got != imageRepo+"web:0.9.0" {
				t.Errorf("prod runs %s, want web:0.9.0 (rejected)", got)
			}
			st, err = leader.store.Load(ctx, "prod")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.History) != 1 || st.History[0].Result != approval.ResultRejected || st.History[0].Approver != "github:bob" ||
				st.History[0].Message != "not on a Friday" {
				t.Errorf("history %+v, want one rejection by bob, not on a Friday", st.History)
			}
			if len(st.Handovers) != 0 {
				t.Errorf("handovers left: %+v", st.Handovers)
			}
		})
	}
}

// TestHandoverQueueFull: beyond decision.MaxHandovers decisions waiting, one more is refused with ErrBusy and
// nothing is recorded; once the leader has taken them, decisions are handed over again.
func TestHandoverQueueFull(t *testing.T) {
	ctx := context.Background()
	w := newHandoverWorld(t, 1)
	d := w.standby[0]
	for i := range decision.MaxHandovers {
		if _, err := d.Reject(ctx, "prod", w.pending.PlanHash, approval.Why{By: ghUser(fmt.Sprintf("p%d", i)), Reason: "no"}); err != nil {
			t.Fatalf("rejection %d: %v", i, err)
		}
	}
	_, err := d.Approve(ctx, "prod", w.pending.PlanHash, ghUser("alice"))
	if !errors.Is(err, approval.ErrBusy) {
		t.Fatalf("approval with %d decisions waiting = %v, want ErrBusy", decision.MaxHandovers, err)
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || len(st.Handovers) != decision.MaxHandovers {
		t.Fatalf("handovers after the refusal: %d, %v; want %d", len(st.Handovers), err, decision.MaxHandovers)
	}
	for _, h := range st.Handovers {
		if h.Approve {
			t.Fatalf("the refused approval was queued: %+v", h)
		}
	}
	w.newDaemo().workers["prod"].desk.PickUp(ctx)
	st, err = d.store.Load(ctx, "prod")
	if err != nil || len(st.Handovers) != 0 || len(st.History) != 1 || st.History[0].Approver != "github:p0" {
		t.Fatalf("after the pick-up: handovers %+v, history %+v, %v; want none and p0's rejection", st.Handovers, st.History, err)
	}
}

// keyHandover is the single slot of replicas older than the queue, and
// keyHandovers the queue, in the state ConfigMap's data.
const (
	keyHandover  = "handover.json"
	keyHandovers = "handovers.json"
)

// TestHandoverOlderReplica: the single slot of replicas older than the queue. A decision an older
// standby wrote there is picked up (and removed) by a newer leader; the newest decision of a newer
// replica's queue is mirrored there for an older leader.
func TestHandoverOlderReplica(t *testing.T) {
	ctx := context.Background()
	w := newHandoverWorld(t, 1)
	cms := cluster.Env(t).Clientset.CoreV1().ConfigMaps(w.h.stateNS)
	d := w.standby[0]

	// A newer standby's two decisions: the newest is in the older replicas' slot.
	if _, err := d.Reject(ctx, "prod", w.pending.PlanHash, approval.Why{By: ghUser("carol"), Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reject(ctx, "prod", w.pending.PlanHash, approval.Why{By: ghUser("erin"), Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var slot state.Handover
	if err := json.Unmarshal([]byte(cm.Data[keyHandover]), &slot); err != nil || slot.Approver != "github:erin" {
		t.Fatalf("older replicas' slot = %q, %v; want erin's rejection", cm.Data[keyHandover], err)
	}

	// An older standby writes its decision over the slot, and (knowing nothing of it) drops the queue.
	old, err := json.Marshal(state.Handover{Approve: true, PlanHash: w.pending.PlanHash, Approver: "alice", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[keyHandover] = string(old)
	delete(cm.Data, keyHandovers)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if has, err := d.store.HasHandover(ctx, "prod"); err != nil || !has {
		t.Fatalf("HasHandover with an older replica's decision = %v, %v; want true", has, err)
	}
	w.newDaemo().workers["prod"].desk.PickUp(ctx)
	waitImage(t, w.h.ns["prod"], "web", imageRepo+"web:1.0.0")
	cm, err = cms.Get(ctx, state.ConfigMapName("prod"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Data[keyHandover]; ok {
		t.Errorf("the older replica's decision is still there after the pick-up: %s", cm.Data[keyHandover])
	}
	st, err := d.store.Load(ctx, "prod")
	if err != nil || len(st.History) != 1 || st.History[0].Approver != "alice" {
		t.Fatalf("history %+v, %v; want alice's apply", st.History, err)
	}
}

// TestHandoverTyped: an approval handed from a standby to the leader keeps the kind of credential and the
// person it acts for, in the queue and in what the leader records.
func TestHandoverTyped(t *testing.T) {
	ctx := context.Background()
	w := newHandoverWorld(t, 1)
	who := identity.Principal{ID: identity.ID{Kind: identity.Token, Name: "alice-cli"}, ActsFor: identity.ID{Kind: identity.GitHub, Name: "alice"}}
	if _, err := w.standby[0].Approve(ctx, "prod", w.pending.PlanHash, who); err != nil {
		t.Fatal(err)
	}
	st, err := w.standby[0].store.Load(ctx, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Handovers) != 1 || st.Handovers[0].Approver != "token:alice-cli" || st.Handovers[0].ActsFor != "github:alice" {
		t.Fatalf("handovers %+v, want token:alice-cli acting for github:alice", st.Handovers)
	}
	w.newDaemo().workers["prod"].desk.PickUp(ctx)
	waitImage(t, w.h.ns["prod"], "web", imageRepo+"web:1.0.0")
	st, err = w.standby[0].store.Load(ctx, "prod")
	if err != nil || len(st.History) != 1 || st.History[0].Approver != "token:alice-cli" {
		t.Fatalf("history %+v, %v; want one entry approved by token:alice-cli", st.History, err)
	}
}
