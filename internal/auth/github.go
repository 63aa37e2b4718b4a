package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ApproverPolicy decides whether a GitHub login may approve in an
// environment: the same rule as a click on the check run's button. The
// reconciler's GitHub client implements it (internal/cli adapts it).
type ApproverPolicy interface {
	MayApprove(ctx context.Context, env, login string) (ok bool, why string, err error)
}

// gitHubPrefixes are the prefixes of GitHub user tokens: classic and
// fine-grained personal access tokens, OAuth (device flow, gh auth token),
// and GitHub App user-to-server tokens. Installation tokens (ghs_) name no
// person and are not accepted.
var gitHubPrefixes = []string{"ghp_", "gho_", "ghu_", "github_pat_"}

// looksGitHub reports whether tok has the shape of a GitHub user token.
func looksGitHub(tok string) bool {
	for _, p := range gitHubPrefixes {
		if strings.HasPrefix(tok, p) {
			return true
		}
	}
	return false
}

// Cache lifetimes of GET /user answers: a login is trusted for a minute (a
// revoked token keeps working that long), an invalid token is remembered
// for ten seconds, and at most maxCached tokens are remembered.
const (
	userTTL    = time.Minute
	invalidTTL = 10 * time.Second
	maxCached  = 4096
)

// cached is one remembered GET /user answer; login "" means invalid.
type cached struct {
	login   string
	expires time.Time
}

// gitHubUsers learns logins from GitHub, with a small cache keyed by the
// SHA-256 of the token (the token itself is never kept).
type gitHubUsers struct {
	apiURL string // e.g. https://api.github.com or https://ghe.example.com/api/v3
	client *http.Client
	now    func() time.Time
	// throttle bounds the GET /user requests of tokens not cached.
	throttle *throttle

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached
}

// errBadGitHubToken is what an invalid GitHub token gets.
const badGitHubToken = "GitHub does not accept this token (GET /user answered 401): log in again (reconciler login, or gh auth login)"

// login returns the login of tok, or a *Error of kind unauthenticated.
func (g *gitHubUsers) login(ctx context.Context, tok string) (string, error) {
	sum := sha256.Sum256([]byte(tok))
	now := g.now()
	g.mu.Lock()
	c, ok := g.cache[sum]
	g.mu.Unlock()
	if ok && now.Before(c.expires) {
		if c.login == "" {
			return "", unauthenticated(badGitHubToken)
		}
		return c.login, nil
	}
	// A token GitHub accepted before is asked about again outside the
	// budget: a flood of made-up tokens must not lock out people whose
	// cached login just expired.
	if !ok || c.login == "" {
		if err := g.throttle.take(); err != nil {
			return "", err
		}
	}
	login, err := g.fetch(ctx, tok)
	if err != nil {
		return "", err
	}
	c = cached{login: login, expires: now.Add(userTTL)}
	if login == "" {
		c.expires = now.Add(invalidTTL)
	}
	g.remember(sum, c, now)
	if login == "" {
		return "", unauthenticated(badGitHubToken)
	}
	return login, nil
}

// remember stores c, dropping expired entries (and, if still full, any
// one) so the cache stays bounded however many tokens are tried.
func (g *gitHubUsers) remember(sum [sha256.Size]byte, c cached, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.cache) >= maxCached {
		for k, v := range g.cache {
			if !now.Before(v.expires) {
				delete(g.cache, k)
			}
		}
		for k := range g.cache {
			if len(g.cache) < maxCached {
				break
			}
			delete(g.cache, k)
		}
	}
	g.cache[sum] = c
}

// fetch asks GitHub who tok belongs to: the login, or "" when GitHub
// answers 401 (a wrong, revoked or expired token).
func (g *gitHubUsers) fetch(ctx context.Context, tok string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(g.apiURL, "/")+"/user", nil)
	if err != nil {
		return "", fmt.Errorf("asking GitHub who the token belongs to: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := g.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking GitHub who the token belongs to: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading GitHub's GET /user answer: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", nil
	case http.StatusForbidden:
		return "", unauthenticated("GitHub refused GET /user for this token (403): use a user token (gh auth token, reconciler login), not an App installation token")
	default:
		return "", fmt.Errorf("asking GitHub who the token belongs to: GET /user answered %s", resp.Status)
	}
	var u struct {
		Login string `json:"login"`
	}
	if err := json.Unmarshal(body, &u); err != nil || u.Login == "" {
		return "", fmt.Errorf("asking GitHub who the token belongs to: GET /user answered without a login")
	}
	return u.Login, nil
}
