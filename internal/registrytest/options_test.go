package registrytest

import "testing"

func TestOptionsRefuseEmptyCredentials(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     Option
		wantErr bool
	}{
		{"basic", WithBasicAuth("ci", "s3cret"), false},
		{"basic without user", WithBasicAuth("", "s3cret"), true},
		{"basic without password", WithBasicAuth("ci", ""), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := newOptions(tc.opt); (err != nil) != tc.wantErr {
				t.Errorf("newOptions: error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
