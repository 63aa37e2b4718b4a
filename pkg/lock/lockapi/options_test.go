package lockapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// TestOptionsBelongToOneConstructor checks that NewHandler and NewClient
// each take their own options and name the mistake when given the other's
// or a bad value.
func TestOptionsBelongToOneConstructor(t *testing.T) {
	svc, err := lock.New(lock.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	newClient := func(opts ...Option) error { _, err := NewClient("http://127.0.0.1:1", "tok", opts...); return err }
	newHandler := func(opts ...Option) error { _, err := NewHandler(svc, "tok", opts...); return err }
	for _, tc := range []struct {
		name    string
		build   func(...Option) error
		opts    []Option
		wantErr string // "" for success
	}{
		{"client with http client", newClient, []Option{WithHTTPClient(&http.Client{})}, ""},
		{"client with nil http client", newClient, []Option{WithHTTPClient(nil)}, "WithHTTPClient: http client must not be nil"},
		{"client with caller", newClient, []Option{WithCaller(func(*http.Request) (lock.Caller, error) { return lock.Caller{}, nil })}, "NewClient does not take WithCaller; it takes WithHTTPClient"},
		{"handler with http client", newHandler, []Option{WithHTTPClient(&http.Client{})}, "NewHandler does not take WithHTTPClient; it takes WithCaller, WithErrorWriter"},
		{"handler with nil error writer", newHandler, []Option{WithErrorWriter(nil)}, "WithErrorWriter: nil function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.build(tc.opts...)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error %v, want none", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
