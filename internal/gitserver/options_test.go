package gitserver

import "testing"

func TestOptionsRefuseEmptyCredentials(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Option
		wantErr bool
	}{
		{"basic", WithBasicAuth("u", "p"), false},
		{"basic without user", WithBasicAuth("", "p"), true},
		{"basic without password", WithBasicAuth("u", ""), true},
		{"bearer", WithBearer("tok"), false},
		{"empty bearer", WithBearer(""), true},
		{"credential check", WithCredentialCheck(func(string, string) bool { return true }), false},
		{"nil credential check", WithCredentialCheck(nil), true},
		{"tls", WithTLS(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newOptions(tc.opt); (err != nil) != tc.wantErr {
				t.Errorf("newOptions: error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
