package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// TestBreakGlassAnnounced: a plan let through closed deploy windows is announced as deploy.break-glass to
// every sink, the data naming who and why.
func TestBreakGlassAnnounced(t *testing.T) {
	key := []byte("k")
	var mu sync.Mutex
	var data []Data
	_, hookSrv := newReceiver(t, func(t *testing.T, r *http.Request, body []byte) string {
		e := event.New()
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatal(err)
		}
		var d Data
		strict(t, e.Data(), &d)
		mu.Lock()
		data = append(data, d)
		mu.Unlock()
		return checkWebhook(key)(t, r, body)
	})
	slack, slackSrv := newReceiver(t, checkSlack)
	teams, teamsSrv := newReceiver(t, checkTeams)
	bus, busSrv := newReceiver(t, checkBinary)
	n := newNotifier(t, []Sink{{Name: "hook", Kind: KindWebhook, URL: hookSrv.URL, Secret: key},
		{Name: "slack", Kind: KindSlack, URL: slackSrv.URL}, {Name: "teams", Kind: KindTeams, URL: teamsSrv.URL},
		{Name: "bus", Kind: KindCloudEvents, URL: busSrv.URL}})
	ctx := context.Background()
	p := proposal("prod", 1)
	at := time.Date(2026, 12, 24, 16, 0, 0, 0, time.UTC)
	bg := approval.BreakGlass{PlanHash: p.Plan.PlanHash, Revision: p.Revision, By: "github:alice", Reason: "INC-42: payments down", At: at}
	if err := n.BrokeGlass(ctx, p, bg); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	headline := "Break-glass: deploying to prod through its closed deploy windows"
	if diff := cmp.Diff([]string{headline}, slack.list()); diff != "" {
		t.Errorf("Slack headers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{headline}, teams.list()); diff != "" {
		t.Errorf("Teams headlines (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{TypePrefix + DeployBreakGlass}, bus.list()); diff != "" {
		t.Errorf("CloudEvents (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []Data{{Environment: "prod", Revision: p.Revision, PlanHash: p.Plan.PlanHash, Approver: "github:alice",
		Message: "break-glass by github:alice: INC-42: payments down", BreakGlass: &bg}}
	if diff := cmp.Diff(want, data, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Changes" }, cmp.Ignore())); diff != "" {
		t.Errorf("webhook data (-want +got):\n%s", diff)
	}
}
