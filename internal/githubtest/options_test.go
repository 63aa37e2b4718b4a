package githubtest

import (
	"testing"
	"time"
)

func TestOptionsRefuseImpossibleValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Option
		wantErr bool
	}{
		{"token ttl", WithTokenTTL(30 * time.Second), false},
		{"zero token ttl", WithTokenTTL(0), true},
		{"negative token ttl", WithTokenTTL(-time.Second), true},
		{"latency", WithLatency(time.Millisecond), false},
		{"no latency", WithLatency(0), false},
		{"negative latency", WithLatency(-time.Millisecond), true},
		{"app", WithApp(1, 2), false},
		{"app id zero", WithApp(0, 2), true},
		{"negative installation", WithApp(1, -2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newOptions(tc.opt); (err != nil) != tc.wantErr {
				t.Errorf("newOptions: error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
