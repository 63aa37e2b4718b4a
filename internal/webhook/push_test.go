package webhook_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/githubtest"
	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/internal/webhook"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestOnPush(t *testing.T) {
	branchPush := map[string]any{"ref": "refs/heads/main"}
	tests := []struct {
		name        string
		repository  string
		file        string
		edits       map[string]any
		wantTrigger bool
	}{
		{name: "branch push, by full name", repository: "Codertocat/Hello-World", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "full name is case-insensitive", repository: "codertocat/hello-world", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "by https URL", repository: "https://github.com/Codertocat/Hello-World.git", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "by https URL with credentials", repository: "https://x-access-token:abc@github.com/Codertocat/Hello-World", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "by scp-like ssh URL", repository: "git@github.com:Codertocat/Hello-World.git", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "by ssh URL with port", repository: "ssh://git@github.com:22/Codertocat/Hello-World.git", file: "push.json", edits: branchPush, wantTrigger: true},
		{name: "other repository", repository: "acme/manifests", file: "push.json", edits: branchPush},
		{name: "other host", repository: "https://ghe.example.com/Codertocat/Hello-World.git", file: "push.json", edits: branchPush},
		{name: "other branch", repository: "Codertocat/Hello-World", file: "push.json", edits: map[string]any{"ref": "refs/heads/feature"}},
		{name: "tag push (payload as recorded)", repository: "Codertocat/Hello-World", file: "push.json"},
		{name: "tag named like the branch", repository: "Codertocat/Hello-World", file: "push.json", edits: map[string]any{"ref": "refs/tags/main"}},
		{name: "branch deleted", repository: "Codertocat/Hello-World", file: "push.2.json", edits: branchPush},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			triggers := 0
			h, err := webhook.OnPush(tt.repository, "main", func() { triggers++ })
			if err != nil {
				t.Fatal(err)
			}
			recv, _ := webhook.New(secret)
			recv.Handle("push", h)
			srv := httptest.NewServer(recv)
			defer srv.Close()
			if code, msg := send(t, srv.URL, delivery{event: "push", id: "d1", body: payload(t, tt.file, tt.edits)}); code != 200 {
				t.Fatalf("status = %d (%s)", code, msg)
			}
			want := 0
			if tt.wantTrigger {
				want = 1
			}
			if triggers != want {
				t.Errorf("triggers = %d, want %d", triggers, want)
			}
		})
	}
}

func TestOnPushRejectsBadArguments(t *testing.T) {
	for _, tt := range []struct{ repo, branch string }{{"acme/manifests", ""}, {"not a repo", "main"}, {"https://", "main"}} {
		if _, err := webhook.OnPush(tt.repo, tt.branch, func() {}); err == nil {
			t.Errorf("OnPush(%q, %q) succeeded", tt.repo, tt.branch)
		}
	}
}

func TestOnPushBadPayload(t *testing.T) {
	h, err := webhook.OnPush("acme/manifests", "main", func() { t.Error("triggered") })
	if err != nil {
		t.Fatal(err)
	}
	if err := h(context.Background(), webhook.Event{Type: "push", Delivery: "x", Payload: []byte("{not json")}); err == nil {
		t.Error("a malformed payload was accepted")
	}
}

// TestPushWakesSource: GitHub (githubtest) delivers a signed push; the
// receiver triggers a running gitsource, which fetches the new revision from
// the real git server at once, long before its hourly poll.
func TestPushWakesSource(t *testing.T) {
	gh := githubtest.New(t)
	gh.CreateRepo("acme", "manifests", "main")
	git := gitserver.New(t)
	url := git.Init(t, "manifests")
	first := git.Repo("manifests").Commit(t, "main", map[string]string{"a.json": "1"}, "first")

	src, err := gitsource.New(url, "main", gitsource.WithInterval(time.Hour), gitsource.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	snaps := make(chan string, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = src.Run(ctx, func(_ context.Context, s gitsource.Snapshot) { snaps <- s.Revision })
	}()
	t.Cleanup(func() { cancel(); <-done })
	if got := <-snaps; got != first {
		t.Fatalf("first snapshot = %s, want %s", got, first)
	}

	recv, _ := webhook.New(secret)
	push, err := webhook.OnPush("acme/manifests", "main", src.Trigger)
	if err != nil {
		t.Fatal(err)
	}
	recv.Handle("push", push)
	hook := httptest.NewServer(recv)
	defer hook.Close()

	second := git.Repo("manifests").Commit(t, "main", map[string]string{"a.json": "2"}, "second")
	d := gh.Webhooks("acme", "manifests").Push("main", first, second, "octocat")
	if code, msg, err := githubtest.Send(context.Background(), hook.URL, "wrong-secret", d); err != nil || code != 401 {
		t.Fatalf("wrongly signed delivery: %d %s %v, want 401", code, msg, err)
	}
	if code, msg, err := githubtest.Send(context.Background(), hook.URL, secret, d); err != nil || code != 200 {
		t.Fatalf("delivery: %d %s %v", code, msg, err)
	}
	select {
	case got := <-snaps:
		if got != second {
			t.Errorf("snapshot after push = %s, want %s", got, second)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the push webhook did not wake the source")
	}
}
