package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Token is one named token of server.tokensFile. Exactly one of Token (the
// secret itself) and SHA256 (the hex SHA-256 of the secret, so the file
// never holds it) is set.
type Token struct {
	Name   string   `json:"name"`
	Token  string   `json:"token,omitempty"`
	SHA256 string   `json:"sha256,omitempty"`
	Scopes []string `json:"scopes"`
	// ActsFor is the person the token acts for, github:<login>: it is then that person for every approval
	// rule (counted once with their other credentials, four-eyes). Empty: automation.
	ActsFor string `json:"actsFor,omitempty"`
}

// LegacyName is the name of the principal of the legacy server.apiTokenFile token.
const LegacyName = "api-token"

// namedToken is a Token ready for comparison.
type namedToken struct {
	name    string
	sum     [sha256.Size]byte
	scopes  []string
	actsFor identity.ID
}

// checkScope returns why s is not a scope, or nil.
func checkScope(s string) error {
	switch {
	case s == ScopeRead, s == ScopeLock, s == ScopeLockAdmin:
		return nil
	case strings.HasPrefix(s, ScopeApprove) && len(s) > len(ScopeApprove) && !strings.ContainsFunc(s, unicode.IsSpace):
		return nil
	}
	return fmt.Errorf("scope %q: want read, lock, lock:admin, approve:<environment> or approve:*", s)
}

// compile checks ts and turns them into namedTokens; errors name the entry
// and its field, never the secret.
func compile(ts []Token) ([]namedToken, error) {
	out := make([]namedToken, 0, len(ts))
	names := map[string]bool{}
	sums := map[[sha256.Size]byte]string{}
	for i, t := range ts {
		at := fmt.Sprintf("entry %d", i)
		if t.Name != "" {
			at += fmt.Sprintf(" (%s)", t.Name)
		}
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("%s: name is required", at)
		case len(t.Name) > 128 || strings.ContainsFunc(t.Name, unicode.IsSpace):
			return nil, fmt.Errorf("%s: name %q: want at most 128 characters without white space", at, t.Name)
		case names[t.Name]:
			return nil, fmt.Errorf("%s: name %q is used twice", at, t.Name)
		case (t.Token == "") == (t.SHA256 == ""):
			return nil, fmt.Errorf("%s: want exactly one of token and sha256", at)
		case t.Token != "" && (len(t.Token) < 16 || strings.ContainsFunc(t.Token, unicode.IsSpace)):
			return nil, fmt.Errorf("%s: token: want at least 16 characters without white space", at)
		case len(t.Scopes) == 0:
			return nil, fmt.Errorf("%s: scopes: want at least one of read, lock, lock:admin, approve:<environment>, approve:*", at)
		}
		if identity.Reserved(t.Name) {
			return nil, fmt.Errorf("%s: name %q is reserved: %s", at, t.Name, ReservedRule)
		}
		for j, s := range t.Scopes {
			if err := checkScope(s); err != nil {
				return nil, fmt.Errorf("%s: scopes[%d]: %w", at, j, err)
			}
		}
		nt := namedToken{name: t.Name, scopes: append([]string(nil), t.Scopes...)}
		if t.ActsFor != "" {
			id, err := identity.ParseTyped(t.ActsFor)
			switch {
			case err != nil || id.Kind != identity.GitHub:
				return nil, fmt.Errorf("%s: actsFor %q: want the person the token acts for as github:<login>", at, t.ActsFor)
			case identity.Reserved(id.Name):
				return nil, fmt.Errorf("%s: actsFor %q is reserved: %s", at, t.ActsFor, ReservedRule)
			}
			nt.actsFor = id
		}
		if t.Token != "" {
			nt.sum = sha256.Sum256([]byte(t.Token))
		} else {
			b, err := hex.DecodeString(strings.ToLower(t.SHA256))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("%s: sha256: want 64 hex digits (sha256sum of the token)", at)
			}
			copy(nt.sum[:], b)
		}
		if other, dup := sums[nt.sum]; dup {
			return nil, fmt.Errorf("%s: the same token as %s", at, other)
		}
		sums[nt.sum] = t.Name
		names[t.Name] = true
		out = append(out, nt)
	}
	return out, nil
}

// parseTokens reads the YAML (or JSON) list of a tokens file.
func parseTokens(b []byte) ([]namedToken, error) {
	var ts []Token
	if err := yaml.UnmarshalStrict(b, &ts); err != nil {
		return nil, fmt.Errorf("decoding: %w; want a list of {name, token or sha256, scopes}", err)
	}
	return compile(ts)
}

// match finds the token whose hash is sum, comparing every entry in
// constant time so that timing says nothing about which one matched.
func match(ts []namedToken, sum [sha256.Size]byte) (namedToken, bool) {
	var found namedToken
	ok := 0
	for _, t := range ts {
		if subtle.ConstantTimeCompare(t.sum[:], sum[:]) == 1 {
			found, ok = t, 1
		}
	}
	return found, ok == 1
}

// tokenFile is server.tokensFile, re-read when its content changes.
type tokenFile struct {
	path  string
	every time.Duration
	warn  func(err error)

	mu      sync.Mutex
	checked time.Time
	content []byte
	bad     []byte // the last content that failed to parse, reported once
	tokens  []namedToken
}

// load reads the file for the first time; an error here stops the start.
func (f *tokenFile) load() error {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("server.tokensFile: %w", err)
	}
	ts, err := parseTokens(b)
	if err != nil {
		return fmt.Errorf("server.tokensFile %s: %w", f.path, err)
	}
	f.content, f.tokens, f.checked = b, ts, time.Now()
	return nil
}

// current returns the tokens, re-reading the file if it was last looked at
// longer ago than f.every. A file that became unreadable or invalid keeps
// the last good tokens (and is reported through warn), so a bad edit of
// the Secret does not lock everyone out.
func (f *tokenFile) current() []namedToken {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked) < f.every {
		return f.tokens
	}
	f.checked = time.Now()
	b, err := os.ReadFile(f.path)
	if err != nil {
		f.warn(fmt.Errorf("re-reading server.tokensFile (keeping the tokens read before): %w", err))
		return f.tokens
	}
	if bytes.Equal(b, f.content) || bytes.Equal(b, f.bad) {
		return f.tokens
	}
	ts, err := parseTokens(b)
	if err != nil {
		f.bad = b
		f.warn(fmt.Errorf("re-reading server.tokensFile %s (keeping the tokens read before): %w", f.path, err))
		return f.tokens
	}
	f.content, f.tokens = b, ts
	return ts
}

// errNoTokens is returned when neither tokens file nor legacy token is configured.
var errNoTokens = errors.New("no tokens configured")
