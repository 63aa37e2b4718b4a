package hook

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBuildersFillFromValues(t *testing.T) {
	src := Source{
		Repository: map[string]any{"full_name": "acme/manifests", "name": "manifests"},
		Owner:      "acme", OwnerID: 7, Sender: map[string]any{"login": "alice"}, InstallationID: 2002, AppID: 1001,
	}
	msg := "bump"
	run := map[string]any{"id": 5, "head_sha": "abc", "status": "completed"}
	for _, tc := range []struct {
		name  string
		build func() (Delivery, error)
		event string
		want  map[string]any // top-level fields of the body
	}{
		{"push", func() (Delivery, error) {
			return PushOf(src, Push{Branch: "main", Before: "a", After: "b", Message: &msg})
		},
			"push", map[string]any{"ref": "refs/heads/main", "before": "a", "after": "b"}},
		{"pull request", func() (Delivery, error) {
			return PullRequest(src, map[string]any{"number": 3, "title": "t"}, "closed")
		}, "pull_request", map[string]any{"action": "closed", "number": float64(3)}},
		{"status", func() (Delivery, error) {
			return StatusOf(src, Status{ID: 9, SHA: "abc", Context: "ci", State: "success"})
		}, "status", map[string]any{"sha": "abc", "context": "ci", "state": "success", "name": "acme/manifests", "branches": []any{}}},
		{"click", func() (Delivery, error) { return CheckRunAction(src, run, "approve") },
			"check_run", map[string]any{"action": "requested_action", "requested_action": map[string]any{"identifier": "approve"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			if d.Event != tc.event || d.ID == "" {
				t.Errorf("event %q id %q, want %q and an id", d.Event, d.ID, tc.event)
			}
			var m map[string]any
			if err := json.Unmarshal(d.Body, &m); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for k := range tc.want {
				got[k] = m[k]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			common := map[string]any{"sender": m["sender"], "installation": m["installation"],
				"repository": m["repository"].(map[string]any)["full_name"]}
			want := map[string]any{"sender": map[string]any{"login": "alice"},
				"installation": map[string]any{"id": float64(2002), "node_id": "I_2002"}, "repository": "acme/manifests"}
			if diff := cmp.Diff(want, common); diff != "" {
				t.Errorf("source (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestIsSigned(t *testing.T) {
	d := Delivery{Event: "push", ID: "1", Body: []byte(`{"a":1}`)}
	req, err := d.Request(context.Background(), "http://example.invalid/hook", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := req.Header.Get("X-Hub-Signature-256"), Sign("s3cret", d.Body); got != want || got == "" {
		t.Errorf("signature %q, want %q", got, want)
	}
	if req, _ := d.Request(context.Background(), "http://example.invalid/hook", ""); req.Header.Get("X-Hub-Signature-256") != "" {
		t.Error("a delivery without a secret is signed")
	}
}
