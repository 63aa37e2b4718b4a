package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/routers"

	"github.com/stagehand-gitops/stagehand/internal/githubtest/oauth"
)

// world is what the server models: repositories, teams and the ids it hands out. Handlers run with mu held;
// Repo and Webhooks take it themselves.
type world struct {
	tb            testing.TB
	root          string // the server's http://127.0.0.1:port
	appID, instID int64
	logins        *oauth.Provider // who a user token belongs to

	mu     sync.Mutex
	repos  map[string]*repo
	teams  map[string]map[string]string // "org/slug" → login → role
	nextID int64
}

func (s *world) id() int64 {
	s.nextID++
	return s.nextID
}

// apiURL builds an absolute API URL for a path, as GitHub puts in "url" fields.
func (s *world) apiURL(format string, a ...any) string {
	return s.root + EnterprisePrefix + fmt.Sprintf(format, a...)
}

func (s *world) htmlURL(format string, a ...any) string {
	return s.root + fmt.Sprintf(format, a...)
}

func (s *world) mustRepo(owner, name string) *repo {
	r := s.repos[owner+"/"+name]
	if r == nil {
		s.tb.Fatalf("githubtest: no repository %s/%s (call CreateRepo first)", owner, name)
	}
	return r
}

// publicRead reports whether an unauthenticated request reads a public repository.
func (s *world) publicRead(r *http.Request, params map[string]string) bool {
	if r.Method != http.MethodGet || r.Header.Get("Authorization") != "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repos[params["owner"]+"/"+params["repo"]]
	return rp != nil && rp.public
}

// call is one request as a handler sees it.
type call struct {
	w      *world
	route  *routers.Route
	path   string // as requested, with any Enterprise prefix
	params map[string]string
	query  url.Values
	body   []byte
	token  string // the request's bearer token
}

func (c *call) decode(v any) error { return json.Unmarshal(c.body, v) }

// repo looks the call's repository up; the response is set when it does not exist.
func (c *call) repo() (*repo, *response) {
	r := c.w.repos[c.params["owner"]+"/"+c.params["repo"]]
	if r == nil {
		res := errorf(http.StatusNotFound, "Not Found")
		return nil, &res
	}
	return r, nil
}

// response is what a handler returns; body is marshalled to JSON and completed from the schema.
type response struct {
	status int
	body   any
	header http.Header
}

type handler func(c *call) response

func ok(status int, body any) response { return response{status: status, body: body} }

func errorf(status int, format string, a ...any) response {
	return response{status: status, body: map[string]any{
		"message":           fmt.Sprintf(format, a...),
		"documentation_url": "https://docs.github.com/rest",
	}}
}
