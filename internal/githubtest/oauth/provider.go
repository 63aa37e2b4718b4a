package oauth

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// Provider is github.com's OAuth side for one test server: the device flow, the web flow and the user tokens
// both hand out. Create it with New; the server routes /login/... to ServeLogin and asks Login about the
// tokens REST calls carry.
type Provider struct {
	root string // the server's root URL, for verification_uri

	mu         sync.Mutex
	tokens     map[string]string // user token → login
	device     deviceFlow
	web        webFlow
	violations []string
}

// New returns a provider whose pages live under root (the test server's http://127.0.0.1:port).
func New(root string) *Provider {
	return &Provider{root: root, tokens: map[string]string{}, device: deviceFlow{codes: map[string]*deviceCode{}}}
}

// UserToken issues a user token for login, as `gh auth token` or an OAuth
// app would hold one: it authenticates REST calls, and GET /user answers
// login for it.
func (p *Provider) UserToken(login string) string {
	tok := "gho_" + randomHex(18)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens[tok] = login
	return tok
}

// RevokeUserToken makes tok unknown, as revoking it on GitHub does.
func (p *Provider) RevokeUserToken(tok string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tokens, tok)
}

// Login returns the login a user token belongs to, and whether it is one.
func (p *Provider) Login(tok string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	login, ok := p.tokens[tok]
	return login, ok
}

// TakeViolations returns and forgets the requests that broke GitHub's OAuth contract (a wrong method, media
// type or parameter), for the server to fail the test with.
func (p *Provider) TakeViolations() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.violations
	p.violations = nil
	return v
}

// violation records a broken contract; the caller holds p.mu.
func (p *Provider) violation(format string, a ...any) {
	p.violations = append(p.violations, fmt.Sprintf(format, a...))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

// answer writes v as GitHub's OAuth endpoints answer, errors included: 200 and JSON.
func answer(w http.ResponseWriter, v map[string]any) int {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
	return http.StatusOK
}
