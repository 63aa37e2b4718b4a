package wire

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestVerifyOptions: verification.allowAddresses opens its ranges to the
// verifier's requests, and nothing else; with none, loopback is refused.
func TestVerifyOptions(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	task, err := verify.ParseTask("smoke", []byte(`{"http": {"url": "`+srv.URL+`/", "interval": "1s", "duration": "100ms"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		allow   []string
		result  string
		message string
	}{
		{"none", nil, verify.Fail, "verification request to 127.0.0.1: loopback addresses are refused"},
		{"another range", []string{"10.0.0.0/8", "::1"}, verify.Fail, "loopback addresses are refused"},
		{"the loopback address", []string{"127.0.0.1"}, verify.Pass, "0 of 1 requests failed"},
		{"the loopback range", []string{"127.0.0.0/8"}, verify.Pass, "0 of 1 requests failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := VerifyOptions(config.Verification{AllowAddresses: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			v, err := verify.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := v.Verify(context.Background(), verify.Run{Revision: "abc"}, []verify.Task{task}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Result != tc.result || !strings.Contains(rep.Tasks[0].Message, tc.message) {
				t.Errorf("report %s %q, want %s saying %q", rep.Result, rep.Tasks[0].Message, tc.result, tc.message)
			}
		})
	}
	if _, err := VerifyOptions(config.Verification{AllowAddresses: []string{"localhost"}}); err == nil || !strings.Contains(err.Error(), `verification.allowAddresses[0] "localhost"`) {
		t.Errorf("VerifyOptions(localhost) = %v, want an error naming the entry", err)
	}
}
