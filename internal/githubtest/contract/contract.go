package contract

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

//go:embed testdata/openapi-subset.json
var specJSON []byte

// loadRouter parses the OpenAPI description once per process (about three seconds: every $ref is already
// expanded) and shares the read-only router between servers.
var loadRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData(specJSON)
	if err != nil {
		return nil, fmt.Errorf("loading OpenAPI description: %w", err)
	}
	doc.Servers = nil // match any host; the Enterprise prefix is stripped before routing
	router, err := legacy.NewRouter(doc, openapi3.DisableExamplesValidation())
	if err != nil {
		return nil, fmt.Errorf("building router: %w", err)
	}
	return router, nil
})

// Load parses the description (once per process) and reports whether it is usable.
func Load() error {
	_, err := loadRouter()
	return err
}

// EnterprisePrefix is the path prefix of GitHub Enterprise Server's REST API; requests are matched with and
// without it, so go-github's WithEnterpriseURLs and a plain BaseURL both work.
const EnterprisePrefix = "/api/v3"

// multiSegment matches paths whose last parameter may contain slashes (file paths, refs, branch names).
var multiSegment = []*regexp.Regexp{
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/contents/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/git/refs?/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/commits/)(.+?)(/check-runs|/status|/statuses|/pulls)?$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/branches/)(.+)()$`),
	regexp.MustCompile(`^(/repos/[^/]+/[^/]+/compare/)(.+)()$`),
}

const slashMark = "\x1f"

func routingPath(p string) string {
	for _, re := range multiSegment {
		if m := re.FindStringSubmatch(p); m != nil {
			return m[1] + strings.ReplaceAll(m[2], "/", slashMark) + m[3]
		}
	}
	return p
}

// Operation is a request matched to one operation of GitHub's API description.
type Operation struct {
	// Route is the operation; Route.Path is its template, e.g. "/repos/{owner}/{repo}/check-runs".
	Route *routers.Route
	// Params are the path parameters, slashes and all ("path" of the contents API, "ref", "basehead").
	Params map[string]string
	in     *openapi3filter.RequestValidationInput
}

// Match finds the operation r asks for, with or without the Enterprise prefix.
func Match(r *http.Request) (*Operation, error) {
	router, err := loadRouter()
	if err != nil {
		return nil, err
	}
	rr := r.Clone(r.Context())
	rr.URL = &url.URL{Path: routingPath(strings.TrimPrefix(r.URL.Path, EnterprisePrefix)), RawQuery: r.URL.RawQuery}
	route, params, err := router.FindRoute(rr)
	if err != nil {
		return nil, fmt.Errorf("no such operation in GitHub's API description (%w)", err)
	}
	for k, v := range params {
		params[k] = strings.ReplaceAll(v, slashMark, "/")
	}
	return &Operation{Route: route, Params: params}, nil
}

// ValidateRequest checks r, whose body was read into body, against the operation.
func (o *Operation) ValidateRequest(r *http.Request, body []byte) error {
	if string(bytes.TrimSpace(body)) == "null" {
		// ghinstallation posts a JSON null when asking for a token without options; GitHub takes it as no body.
		body = nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	o.in = &openapi3filter.RequestValidationInput{
		Request: r, PathParams: o.Params, Route: o.Route, Options: validationOptions(false),
	}
	return openapi3filter.ValidateRequest(r.Context(), o.in)
}

// Response is an answer to check against the operation: its status, headers and body as sent.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ValidateResponse checks res against the operation (after ValidateRequest). Error bodies are not checked:
// GitHub's own error schemas are ambiguous (a basic error matches both alternatives of the 409 oneOf, for
// example), so only successful bodies are validated.
func (o *Operation) ValidateResponse(ctx context.Context, res Response) error {
	vin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: o.in, Status: res.Status, Header: res.Header, Options: validationOptions(res.Status >= 300),
	}
	vin.SetBodyBytes(res.Body)
	return openapi3filter.ValidateResponse(ctx, vin)
}

func validationOptions(skipBody bool) *openapi3filter.Options {
	o := &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true, ExcludeResponseBody: skipBody,
	}
	o.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		return fmt.Sprintf("%s: %s (value %s)", "/"+strings.Join(err.JSONPointer(), "/"), err.Reason, short(err.Value))
	})
	return o
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
