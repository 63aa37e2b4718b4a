package prbot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/prbot/prbottest"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// TestManifestOptions: by default the bot reads manifest files as strictly
// as the reconciler does (manifest.allowUnknownKeys: false), so an unknown
// key makes bump and promote fail with an error naming the file and the key
// and writes nothing; with manifest.AllowUnknownKeys it carries on.
func TestManifestOptions(t *testing.T) {
	const file = "environments/devel/checkout-api.json"
	withUnknownKey := func(files map[string]string) map[string]string {
		files[file] = strings.Replace(files[file], `"name": "checkout-api",`, `"name": "checkout-api", "ownerTeam": "payments",`, 1)
		return files
	}
	tests := []struct {
		name    string
		files   map[string]string
		act     func(context.Context, *Bot) error
		opts    []Option
		wantErr []string // substrings; none: success
	}{
		{
			name:    "bump, strict",
			files:   withUnknownKey(devel()),
			act:     bump,
			wantErr: []string{file, `"ownerTeam"`},
		},
		{
			name:  "bump, unknown keys allowed",
			files: withUnknownKey(devel()),
			act:   bump,
			opts:  []Option{WithManifestOptions(manifest.AllowUnknownKeys())},
		},
		{
			name:    "promote, strict",
			files:   withUnknownKey(prbottest.Spread(healthyPipeline)),
			act:     promoteDevel,
			wantErr: []string{file, `"ownerTeam"`},
		},
		{
			name:  "promote, unknown keys allowed",
			files: withUnknownKey(prbottest.Spread(healthyPipeline)),
			act:   promoteDevel,
			opts:  []Option{WithManifestOptions(manifest.AllowUnknownKeys())},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.files[file], "ownerTeam") {
				t.Fatalf("fixture has no unknown key in %s", file)
			}
			f := newFixture(t, tt.files)
			healthyAt(f, "devel", f.Srv.Repo(owner, repo).Branch("main"), time.Hour)
			b := f.bot(t, append([]Option{WithClock(func() time.Time { return now })}, tt.opts...)...)
			err := tt.act(context.Background(), b)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("error = %v, want success", err)
				}
				if len(f.OpenPulls()) != 1 {
					t.Errorf("open pull requests = %+v, want one", f.OpenPulls())
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
			if prs := f.OpenPulls(); len(prs) != 0 {
				t.Errorf("open pull requests = %+v, want none after the error", prs)
			}
		})
	}
}

func bump(ctx context.Context, b *Bot) error {
	_, err := b.Bump(ctx, BumpRequest{Env: "devel", File: "checkout-api.json", Service: "checkout-api", Tag: "1.6.0"})
	return err
}

func promoteDevel(ctx context.Context, b *Bot) error {
	_, err := b.Promote(ctx, "devel", "staging", false)
	return err
}
