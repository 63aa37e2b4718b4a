package gitsource_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/stagehand-gitops/stagehand/internal/gitserver"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

func TestVerifyHead(t *testing.T) {
	trusted := newSigner(t, "trusted")
	stranger := newSigner(t, "stranger")
	tests := []struct {
		name    string
		key     *openpgp.Entity
		wantErr string // empty: accepted
	}{
		{name: "signed by a key in the keyring", key: trusted.entity},
		{name: "unsigned", key: nil, wantErr: "the commit is not signed"},
		{name: "signed by another key", key: stranger.entity, wantErr: "signature does not verify against keyring"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := gitserver.New(t)
			url, _ := seed(t, srv) // an unsigned base commit: only the head counts
			good := pushCommit(t, url, map[string]string{"a.json": "good"}, trusted.entity)
			cfg := sourceSpec(url)
			cfg.cacheDir = t.TempDir()
			cfg.opts = append(cfg.opts, gitsource.WithVerifyKeyring(gitsource.File(gitserver.WriteFile(t, t.TempDir(), "keyring.asc", trusted.keyring))))
			s := newSource(t, cfg)
			if snap := poll(t, s); snap.Revision != good {
				t.Fatalf("first revision = %s, want %s", snap.Revision, good)
			}

			head := pushCommit(t, url, map[string]string{"a.json": "new"}, tt.key)
			snap, err := s.Poll(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Poll: %v", err)
				}
				if snap.Revision != head || readFile(t, snap.FS, "a.json") != "new" {
					t.Errorf("accepted revision = %s, want %s", snap.Revision, head)
				}
				return
			}
			if !errors.Is(err, gitsource.ErrUnverified) || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), head) {
				t.Fatalf("Poll error = %v, want ErrUnverified naming %s and saying %q", err, head, tt.wantErr)
			}
			latest, ok := s.Latest()
			if !ok || latest.Revision != good || readFile(t, latest.FS, "a.json") != "good" {
				t.Errorf("Latest after refusal = %s, want the last good %s", latest.Revision, good)
			}
			st := s.Status()
			if st.Revision != good || st.Refused != head || !errors.Is(st.Err, gitsource.ErrUnverified) || st.Failures != 0 {
				t.Errorf("status after refusal = %+v", st)
			}

			// Asking again costs one ls-remote and gives the same answer.
			srv.ResetRequests()
			if _, err := s.Poll(context.Background()); !errors.Is(err, gitsource.ErrUnverified) {
				t.Errorf("second Poll error = %v, want ErrUnverified", err)
			}
			if got := srv.Requests(); got.UploadPack != 0 || got.InfoRefs != 1 {
				t.Errorf("requests of a repeated refused poll = %+v", got)
			}

			// A restart still serves the last good revision.
			restarted := newSource(t, cfg)
			if _, err := restarted.Poll(context.Background()); !errors.Is(err, gitsource.ErrUnverified) {
				t.Errorf("Poll after restart error = %v, want ErrUnverified", err)
			}
			if latest, ok := restarted.Latest(); !ok || latest.Revision != good {
				t.Errorf("Latest after restart = %s, %v; want %s", latest.Revision, ok, good)
			}

			// A newer, properly signed head is accepted.
			fixed := pushCommit(t, url, map[string]string{"a.json": "fixed"}, trusted.entity)
			if snap := poll(t, s); snap.Revision != fixed {
				t.Errorf("revision after a signed fix = %s, want %s", snap.Revision, fixed)
			}
			if st := s.Status(); st.Refused != "" || st.LastError != "" {
				t.Errorf("status after fix = %+v", st)
			}
		})
	}
}

// TestVerifyKeyringFixAcceptsRefusedHead: a head refused because its signer
// was not in the keyring is accepted at the next poll once the keyring file
// trusts the signer, without a new push and without a second fetch.
func TestVerifyKeyringFixAcceptsRefusedHead(t *testing.T) {
	newcomer := newSigner(t, "newcomer")
	srv := gitserver.New(t)
	url, _ := seed(t, srv)
	head := pushCommit(t, url, map[string]string{"a.json": "by the newcomer"}, newcomer.entity)
	cfg := sourceSpec(url)
	cfg.cacheDir = t.TempDir()
	keyring := gitserver.WriteFile(t, t.TempDir(), "keyring.asc", newSigner(t, "old-team").keyring)
	cfg.opts = append(cfg.opts, gitsource.WithVerifyKeyring(gitsource.File(keyring)))
	s := newSource(t, cfg)
	if _, err := s.Poll(context.Background()); !errors.Is(err, gitsource.ErrUnverified) {
		t.Fatalf("Poll error = %v, want ErrUnverified", err)
	}

	gitserver.WriteFile(t, filepath.Dir(keyring), filepath.Base(keyring), newcomer.keyring)
	srv.ResetRequests()
	snap, err := s.Poll(context.Background())
	if err != nil {
		t.Fatalf("Poll after the keyring was fixed: %v", err)
	}
	if snap.Revision != head || readFile(t, snap.FS, "a.json") != "by the newcomer" {
		t.Errorf("revision = %s, want %s", snap.Revision, head)
	}
	if got := srv.Requests(); got.UploadPack != 0 || got.InfoRefs != 1 {
		t.Errorf("requests = %+v, want one ls-remote and no fetch", got)
	}
	if st := s.Status(); st.Refused != "" || st.Revision != head || st.LastError != "" {
		t.Errorf("status = %+v", st)
	}
}
