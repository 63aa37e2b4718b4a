package gitsource

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

func TestRedactor(t *testing.T) {
	r := &redactor{}
	r.add("ghs_supersecrettoken")
	r.add("abc") // too short to redact safely
	err := r.err(errors.Join(transport.ErrAuthenticationRequired,
		errors.New(`GET https://x-access-token:ghs_supersecrettoken@github.com/acme/m.git/info/refs; token "ghs_supersecrettoken"; https://user:p4ss@host/x`)))
	msg := err.Error()
	for _, leak := range []string{"ghs_supersecrettoken", "p4ss"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message leaks %q: %s", leak, msg)
		}
	}
	if !strings.Contains(msg, "https://x-access-token:REDACTED@github.com/acme/m.git") || !strings.Contains(msg, "https://user:REDACTED@host/x") {
		t.Errorf("message lost its useful parts: %s", msg)
	}
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Error("redaction broke errors.Is")
	}
	if r.err(nil) != nil {
		t.Error("redacting nil gave an error")
	}
}

func TestParseURLStripsPassword(t *testing.T) {
	u, err := parseURL("https://deploy:t0ps3cret@git.example.com/acme/m.git")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(u.clean, "t0ps3cret") || strings.Contains(u.redacted, "t0ps3cret") || u.password != "t0ps3cret" || u.user != "deploy" {
		t.Errorf("parsed = %+v", u)
	}
	if _, err := parseURL("https://u:pa ss@bad host/x"); err == nil || strings.Contains(err.Error(), "pa ss") {
		t.Errorf("bad URL error = %v, want one without the password", err)
	}
}
