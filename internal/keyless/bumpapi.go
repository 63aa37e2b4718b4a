package keyless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/auth"
	"github.com/stagehand-gitops/stagehand/internal/auth/oidc"
	"github.com/stagehand-gitops/stagehand/internal/httpserve"
	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// BumpsPath is the route of the keyless bump API.
const BumpsPath = "/api/v1/bumps"

// Default per-caller rate limit of the bump API: a steady bump a second, in
// bursts of up to 10 (a CI run bumping several services at once). The
// caller is the token's issuer and repository, as for the ownership rules:
// one repository's runs share one bucket, whoever started them.
const (
	DefaultBumpRatePerSecond = 1
	DefaultBumpRateBurst     = 10
)

// maxBumpBody caps a bump request body.
const maxBumpBody = 64 << 10

// Merge waits of the bump API: an auto-merge waits DefaultBumpMergeWait
// unless the request asks for less, or more up to MaxBumpMergeWait (the
// request holds its connection meanwhile).
const (
	DefaultBumpMergeWait = 10 * time.Minute
	MaxBumpMergeWait     = 15 * time.Minute
)

// BumpBody is the JSON body of POST /api/v1/bumps.
type BumpBody struct {
	Environment string `json:"environment"`
	Service     string `json:"service"`
	// Container is the dockerName ("" means the service name).
	Container string `json:"container,omitempty"`
	Tag       string `json:"tag"`
	Digest    string `json:"digest,omitempty"`
	// File is the owned file's base name; "" picks the one file the
	// caller's repository owns.
	File      string `json:"file,omitempty"`
	AutoMerge bool   `json:"autoMerge,omitempty"`
	// MergeTimeout is how long an auto-merge waits (a Go duration, e.g. "5m").
	MergeTimeout string `json:"mergeTimeout,omitempty"`
}

// BumpError is the JSON body of every refused or failed bump request.
type BumpError struct {
	// Error says what was wrong, for people.
	Error string `json:"error"`
	// Code is the kind of error as every Stagehand door names it
	// (httpserve.Error's code: BadRequest, Unauthorized, Forbidden,
	// NotFound, Conflict, TooLarge, Unavailable…).
	Code string `json:"code,omitempty"`
	// Reason is a stable word for programs: Unauthorized, Replayed,
	// IssuerUnavailable, BadRequest, NotOwner, UntrustedRepository,
	// EnvironmentRefused, ClaimRefused, UnknownService, NoFile,
	// NotMerged, Locked, Conflict, TooManyRequests, Failed.
	Reason string `json:"reason"`
	// Result is the bump's result when the pull request was opened but an
	// auto-merge did not happen.
	Result *prbot.BumpResult `json:"result,omitempty"`
}

// BumpLog is one request of the bump API, for the binary to log: who
// asked (nil Caller when the token did not verify), what, and the answer.
type BumpLog struct {
	Caller *oidc.Caller
	// Claimed is what a token that did not verify says about its sender,
	// for the log of a 401 only: never trust it.
	Claimed *oidc.Caller
	Body    *BumpBody
	Status  int
	Reason  string
	Err     error
	Result  *prbot.BumpResult
}

type options struct {
	issuers      []oidc.Issuer
	issuerClient *http.Client
	local        func() time.Time
	keyRefresh   time.Duration
	onBump       func(BumpLog)
	bumpRate     float64
	bumpBurst    int
}

// Option configures a BumpAPI.
type Option func(*options) error

// WithIssuer trusts a CI OIDC issuer for the bump API (repeatable).
func WithIssuer(is oidc.Issuer) Option {
	return func(o *options) error {
		switch {
		case !strings.HasPrefix(is.URL, "https://"):
			return fmt.Errorf("trusting issuer %q: want an https:// URL", is.URL)
		case is.Audience == "":
			return fmt.Errorf("trusting issuer %s: no audience", is.URL)
		case is.Claims != oidc.ClaimsGitHub && is.Claims != oidc.ClaimsGitLab:
			return fmt.Errorf("trusting issuer %s: claims %q: want github or gitlab", is.URL, is.Claims)
		case is.Claims == oidc.ClaimsGitLab && len(is.Namespaces) == 0:
			return fmt.Errorf("trusting issuer %s: gitlab issuers need namespaces (the groups whose projects are trusted)", is.URL)
		}
		o.issuers = append(o.issuers, is)
		return nil
	}
}

// WithIssuerClient sets the HTTP client that fetches issuers' discovery
// documents and key sets (default: one with a 10s timeout).
func WithIssuerClient(c *http.Client) Option {
	return func(o *options) error { o.issuerClient = c; return nil }
}

// WithKeyRefresh sets the least time between two fetches of an issuer's
// key set, which a token signed by an unknown key triggers (default 30s).
func WithKeyRefresh(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Second {
			return fmt.Errorf("setting key refresh: %s is less than 1s (tokens naming unknown key ids would fetch the issuer's keys on every request)", d)
		}
		o.keyRefresh = d
		return nil
	}
}

// WithLocalClock sets this host's clock for the bump API (default
// time.Now): each issuer's clock, on which its tokens' exp, nbf and iat are
// judged, is followed from it and the Date of the issuer's answers.
func WithLocalClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("setting the local clock: nil")
		}
		o.local = now
		return nil
	}
}

// WithBumpLog is called once per bump API request (the package never logs).
func WithBumpLog(f func(BumpLog)) Option {
	return func(o *options) error { o.onBump = f; return nil }
}

// WithBumpRateLimit sets how many bumps a second one caller (a
// repository of an issuer) may ask for, in bursts of up to burst (default
// DefaultBumpRatePerSecond, DefaultBumpRateBurst); a verified request over
// it is answered 429 with Retry-After before its body is read. A rate of 0
// turns the limit off.
func WithBumpRateLimit(perSecond float64, burst int) Option {
	return func(o *options) error {
		if perSecond < 0 || burst < 1 {
			return fmt.Errorf("setting the bump rate limit %v/s with burst %d: want a non-negative rate and a burst of at least 1", perSecond, burst)
		}
		o.bumpRate, o.bumpBurst = perSecond, burst
		return nil
	}
}

// BumpAPI serves POST /api/v1/bumps: upstream CI proves who it is with its
// OIDC ID token and may bump only the file its repository owns, in a stage
// that accepts bumps, from a run the stage's bumpClaims allow. The bot then
// bumps with its own credentials, exactly as Bot.Bump.
type BumpAPI struct {
	bot    *prbot.Bot
	ver    *oidc.Verifier
	onBump func(BumpLog)
	limit  *auth.Limiter
	local  func() time.Time
}

// NewBumpAPI returns the bump API of bot; it needs at least one WithIssuer.
func NewBumpAPI(bot *prbot.Bot, opts ...Option) (*BumpAPI, error) {
	o := options{local: time.Now, keyRefresh: oidc.MinRefresh, issuerClient: &http.Client{Timeout: 10 * time.Second}, onBump: func(BumpLog) {},
		bumpRate: DefaultBumpRatePerSecond, bumpBurst: DefaultBumpRateBurst}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("creating bump API: %w", err)
		}
	}
	if bot == nil {
		return nil, errors.New("creating bump API: no bot")
	}
	if len(o.issuers) == 0 {
		return nil, errors.New("creating bump API: no trusted issuer")
	}
	seen := map[string]bool{}
	issuers := make([]oidc.Issuer, len(o.issuers))
	for i, is := range o.issuers {
		if seen[is.URL] {
			return nil, fmt.Errorf("creating bump API: issuer %s trusted twice", is.URL)
		}
		seen[is.URL] = true
		if len(is.Namespaces) == 0 {
			is.Namespaces = []string{bot.UpstreamOwner()}
		}
		issuers[i] = is
	}
	return &BumpAPI{bot: bot, ver: oidc.New(issuers, o.issuerClient, o.keyRefresh, o.local), onBump: o.onBump,
		limit: auth.NewLimiter(o.bumpRate, o.bumpBurst), local: o.local}, nil
}

// refusal is an answer other than 200.
type refusal struct {
	status int
	reason string
	err    error
	result *prbot.BumpResult
	// retryAfter, when positive, is sent as Retry-After (whole seconds).
	retryAfter time.Duration
}

func (r *refusal) Error() string { return r.err.Error() }

func refuse(status int, reason string, format string, a ...any) *refusal {
	return &refusal{status: status, reason: reason, err: fmt.Errorf(format, a...)}
}

// ServeHTTP implements http.Handler.
func (a *BumpAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lg := BumpLog{}
	res, err := a.serve(w, r, &lg)
	lg.Result = res
	if err != nil {
		var rf *refusal
		if !errors.As(err, &rf) {
			rf = &refusal{status: http.StatusBadGateway, reason: "Failed", err: err}
		}
		lg.Status, lg.Reason, lg.Err = rf.status, rf.reason, rf.err
		if rf.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Max(1, math.Ceil(rf.retryAfter.Seconds())))))
		}
		httpserve.WriteJSON(w, rf.status, BumpError{Error: rf.err.Error(), Code: httpserve.CodeOf(rf.status), Reason: rf.reason, Result: rf.result})
	} else {
		lg.Status = http.StatusOK
		httpserve.WriteJSON(w, http.StatusOK, res)
	}
	a.onBump(lg)
}

func (a *BumpAPI) serve(w http.ResponseWriter, r *http.Request, lg *BumpLog) (*prbot.BumpResult, error) {
	if r.Method != http.MethodPost {
		return nil, refuse(http.StatusMethodNotAllowed, "BadRequest", "%s %s: only POST", r.Method, r.URL.Path)
	}
	raw, ok := bearer(r)
	if !ok {
		return nil, refuse(http.StatusUnauthorized, "Unauthorized", "%w: send the CI's OIDC ID token as Authorization: Bearer <token>", oidc.ErrNoToken)
	}
	caller, err := a.ver.Verify(r.Context(), raw)
	lg.Caller = caller
	if err != nil {
		if caller == nil {
			lg.Claimed = oidc.Claimed(raw)
		}
		return nil, verifyRefusal(err)
	}
	if ok, wait := a.limit.Allow(caller.Issuer+" "+caller.Repository, a.local()); !ok {
		return nil, &refusal{status: http.StatusTooManyRequests, reason: "TooManyRequests", retryAfter: wait,
			err: fmt.Errorf("too many bumps from %s; retry after the Retry-After seconds", caller.Repository)}
	}
	body, err := decodeBump(w, r)
	lg.Body = body
	if err != nil {
		return nil, err
	}
	req, err := a.authorize(r.Context(), caller, body)
	if err != nil {
		return nil, err
	}
	// The server's timeouts are short; a bump (and an auto-merge's wait)
	// may hold this request longer. A read deadline left in place would
	// cancel the request's context once it passes.
	hold := 2 * time.Minute
	if req.AutoMerge {
		hold += req.MergeTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(hold))
	_ = rc.SetWriteDeadline(time.Now().Add(hold))
	res, err := a.bot.Bump(r.Context(), req)
	switch {
	case errors.Is(err, prbot.ErrConflict):
		return nil, &refusal{status: http.StatusConflict, reason: "Conflict", err: err}
	case err != nil:
		return nil, err
	case res.Blocked:
		return res, &refusal{status: http.StatusLocked, reason: "Locked", err: errors.New(res.Reason), result: res}
	case req.AutoMerge && !res.Merged && res.PR != 0:
		rf := &refusal{status: http.StatusConflict, reason: "NotMerged", err: fmt.Errorf("not merged: %s", res.Reason), result: res}
		if strings.Contains(res.Reason, "locked: ") {
			rf.status, rf.reason = http.StatusLocked, "Locked"
		}
		return res, rf
	}
	return res, nil
}

// verifyRefusal maps a verification error to its answer.
func verifyRefusal(err error) *refusal {
	switch {
	case errors.Is(err, oidc.ErrIssuerUnavailable), errors.Is(err, oidc.ErrBusy):
		return &refusal{status: http.StatusServiceUnavailable, reason: "IssuerUnavailable", err: err}
	case errors.Is(err, oidc.ErrUntrustedRepository):
		return &refusal{status: http.StatusForbidden, reason: "UntrustedRepository", err: err}
	case errors.Is(err, oidc.ErrReplayed):
		return &refusal{status: http.StatusUnauthorized, reason: "Replayed", err: fmt.Errorf("%w: every request needs a fresh ID token", err)}
	}
	return &refusal{status: http.StatusUnauthorized, reason: "Unauthorized", err: err}
}

func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// decodeBump reads the body strictly: one JSON object of known keys, at
// most maxBumpBody bytes.
func decodeBump(w http.ResponseWriter, r *http.Request) (*BumpBody, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBumpBody))
	dec.DisallowUnknownFields()
	var b BumpBody
	if err := dec.Decode(&b); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, refuse(http.StatusRequestEntityTooLarge, "BadRequest", "request body larger than %d bytes", maxBumpBody)
		}
		return nil, refuse(http.StatusBadRequest, "BadRequest", "decoding the request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &b, refuse(http.StatusBadRequest, "BadRequest", "decoding the request body: want one JSON object")
	}
	return &b, nil
}

// authorize turns a verified caller's body into the bump it may do, or
// says why not.
func (a *BumpAPI) authorize(ctx context.Context, c *oidc.Caller, body *BumpBody) (prbot.BumpRequest, error) {
	req := prbot.BumpRequest{Env: body.Environment, File: body.File, Service: body.Service, Container: body.Container, Tag: body.Tag, Digest: body.Digest, AutoMerge: body.AutoMerge, MergeTimeout: DefaultBumpMergeWait}
	if body.MergeTimeout != "" {
		d, err := time.ParseDuration(body.MergeTimeout)
		if err != nil || d <= 0 || d > MaxBumpMergeWait {
			return req, refuse(http.StatusBadRequest, "BadRequest", "mergeTimeout %q: want a positive duration up to %s", body.MergeTimeout, MaxBumpMergeWait)
		}
		req.MergeTimeout = d
	}
	if err := req.Validate(req.File != ""); err != nil {
		return req, refuse(http.StatusBadRequest, "BadRequest", "%v", err)
	}
	pl, err := a.bot.Pipeline(ctx, a.bot.Base())
	if err != nil {
		return req, fmt.Errorf("reading the pipeline: %w", err)
	}
	if pl == nil {
		return req, refuse(http.StatusForbidden, "EnvironmentRefused", "no %s on %s: no environment accepts bumps", promote.FileName, a.bot.Base())
	}
	st, ok := pl.Stage(req.Env)
	if !ok || !st.AcceptsBumps {
		return req, refuse(http.StatusForbidden, "EnvironmentRefused", "environment %q accepts no bumps: %s has no stage %q with acceptsBumps: true", req.Env, pl.File, req.Env)
	}
	if err := claimsAllowed(c, st); err != nil {
		return req, refuse(http.StatusForbidden, "ClaimRefused", "environment %q: %v", req.Env, err)
	}
	owned, allowNew, conv := ownedFiles(pl, c.Repository)
	switch {
	case req.File == "" && len(owned) == 1:
		req.File = owned[0]
	case req.File == "" && len(owned) == 0:
		return req, refuse(http.StatusForbidden, "NotOwner", "repository %s owns no file: %s's owners give its name's file to other repositories", c.Repository, pl.File)
	case req.File == "":
		return req, refuse(http.StatusBadRequest, "BadRequest", "repository %s owns %s: name one in file", c.Repository, strings.Join(owned, ", "))
	case !slices.Contains(owned, req.File):
		// Exact: a file owners lists, or the one named after the
		// repository, spelled as they are (case included).
		return req, refuse(http.StatusForbidden, "NotOwner", "repository %s may bump only %s, not %s (file names are matched exactly)", c.Repository, orNothing(owned), req.File)
	}
	// Resolved once: the rules of a file owned by name and the file's
	// existence are judged on the same commit.
	ref, err := a.bot.HeadRef(ctx, a.bot.Base())
	if err != nil {
		return req, err
	}
	if ref == "" {
		return req, fmt.Errorf("bumping: base branch %s does not exist", a.bot.Base())
	}
	if req.File == conv {
		if err := a.byName(ctx, basis{pipeline: pl, ref: ref}, req, c.Repository); err != nil {
			return req, err
		}
	}
	err = a.defined(ctx, &req, ref, allowNew[req.File])
	return req, err
}

// defined checks that the file exists at ref (the base branch's head) and,
// unless the owners mapping allows adding, already defines the service and
// container.
func (a *BumpAPI) defined(ctx context.Context, req *prbot.BumpRequest, ref string, allowNew bool) error {
	file := a.bot.Path(path.Join("environments", req.Env, req.File))
	data, err := a.bot.File(ctx, file, ref)
	if err != nil {
		return err
	}
	if data == nil {
		return refuse(http.StatusNotFound, "NoFile", "%s does not exist on %s; create it (and include it from environments/%s/manifest.json) first", file, a.bot.Base(), req.Env)
	}
	if allowNew {
		return nil
	}
	ed, err := manifest.Edit(file, data, a.bot.ManifestOptions()...)
	if err != nil {
		return refuse(http.StatusConflict, "Conflict", "%s on %s does not parse: %v", file, a.bot.Base(), err)
	}
	if _, err := ed.Container(req.Service, req.Container); errors.Is(err, manifest.ErrNotFound) {
		return refuse(http.StatusForbidden, "UnknownService", "%s defines no %s; a bump may only change a service and container the file already has (owners.%s.allowNewServices lets it add)", file, req.Label(), req.File)
	} else if err != nil {
		return refuse(http.StatusConflict, "Conflict", "reading %s in %s: %v", req.Label(), file, err)
	}
	return nil
}

// ownedFiles lists the files repo may bump: those pipeline.yaml's owners
// give it, and the file named after it (conv, see conventionalFile; "" when
// it is not owned) unless owners lists that name in any case. allowNew says
// which of them may get new services. Repositories are compared without
// case (GitHub's and GitLab's names are case-insensitive); file names are
// not.
func ownedFiles(pl *promote.Pipeline, repo string) (owned []string, allowNew map[string]bool, conv string) {
	allowNew = map[string]bool{}
	name := conventionalFile(repo)
	listed := name == ""
	for file, o := range pl.Owners {
		listed = listed || strings.EqualFold(file, name)
		if slices.ContainsFunc(o.Repositories, func(r string) bool { return strings.EqualFold(r, repo) }) {
			owned = append(owned, file)
			allowNew[file] = o.AllowNewServices
		}
	}
	if !listed {
		conv = name
		owned = append(owned, conv)
	}
	slices.Sort(owned)
	return owned, allowNew, conv
}

// pullRequestEvents start runs that someone without write access may
// cause, for code that is not (yet) on a branch of the repository: a pull
// request (a fork's included), a review or comment on one, and GitHub's
// workflow_run, which a fork's pull request workflow triggers in the base
// repository's context with the default branch's ref. Refused unless a
// stage's bumpClaims.event names them.
var pullRequestEvents = []string{"pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment", "issue_comment", "workflow_run",
	"merge_request_event", "external_pull_request_event"}

// claimsAllowed applies the stage's bumpClaims to the caller.
func claimsAllowed(c *oidc.Caller, st *promote.Stage) error {
	rules := st.BumpClaims
	if len(rules.Ref) > 0 && !slices.Contains(rules.Ref, c.Ref) {
		return fmt.Errorf("ref %q is not allowed; bumpClaims.ref allows %s", c.Ref, strings.Join(rules.Ref, ", "))
	}
	if len(rules.WorkflowRef) > 0 && !slices.ContainsFunc(rules.WorkflowRef, func(p string) bool { return strings.HasPrefix(c.WorkflowRef, p) }) {
		return fmt.Errorf("workflow %q is not allowed; bumpClaims.workflowRef allows prefixes %s", c.WorkflowRef, strings.Join(rules.WorkflowRef, ", "))
	}
	switch {
	case len(rules.Event) > 0 && !slices.Contains(rules.Event, c.Event):
		return fmt.Errorf("event %q is not allowed; bumpClaims.event allows %s", c.Event, strings.Join(rules.Event, ", "))
	case len(rules.Event) == 0 && slices.Contains(pullRequestEvents, c.Event):
		return fmt.Errorf("event %q: its runs may be started by someone without write access, for code that is not on a branch yet; they may not bump (name the event in bumpClaims.event to allow it)", c.Event)
	}
	return nil
}

func orNothing(files []string) string {
	if len(files) == 0 {
		return "nothing"
	}
	return strings.Join(files, ", ")
}
