package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	imgref "github.com/google/go-containerregistry/pkg/name"
)

// The kinds of task.
const (
	KindJob        = "job"
	KindHTTP       = "http"
	KindPrometheus = "prometheus"
	KindAnalysis   = "analysis"
)

// DefaultTimeout bounds a task that sets no timeout (an http or prometheus
// check gets at least its duration and a minute).
const DefaultTimeout = 5 * time.Minute

// Task is one verification task: a name (the sequence task's), a kind and
// that kind's settings, and the time the whole task may take.
type Task struct {
	Name       string        `json:"name"`
	Kind       string        `json:"kind"`
	Timeout    time.Duration `json:"timeout"`
	Job        *Job          `json:"job,omitempty"`
	HTTP       *HTTP         `json:"http,omitempty"`
	Prometheus *Prometheus   `json:"prometheus,omitempty"`
	Analysis   *Analysis     `json:"analysis,omitempty"`
}

// Job runs a container to completion in one of the environment's targets.
// Its environment holds STAGEHAND_ENVIRONMENT, STAGEHAND_REVISION and
// STAGEHAND_VERSIONS (a JSON object of service to version) besides Env.
type Job struct {
	// Image is the container image; Command and Args override its
	// entrypoint and arguments.
	Image   string   `json:"image"`
	Command []string `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env are further environment variables.
	Env map[string]string `json:"env,omitempty"`
	// Target is the name of the environment's target whose namespace runs
	// the Job (default: the first target).
	Target string `json:"target,omitempty"`
	// ServiceAccountName is the pod's service account (default: the
	// namespace's default).
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// Annotations are set on the pod (a sidecar injector's opt-out, say).
	Annotations map[string]string `json:"annotations,omitempty"`
	// BackoffLimit is how often a failed pod is retried (default 0).
	BackoffLimit int32 `json:"backoffLimit,omitempty"`
}

// HTTP requests URL every Interval for Duration and counts the answers that
// are not ExpectStatus or whose body does not match BodyRegexp. The ratio of
// such failures to requests decides: above FailureRatio fails, above
// WarningRatio warns.
type HTTP struct {
	URL          string            `json:"url"`
	Method       string            `json:"method"`
	Headers      map[string]string `json:"headers,omitempty"`
	ExpectStatus int               `json:"expectStatus"`
	BodyRegexp   string            `json:"bodyRegexp,omitempty"`
	Interval     time.Duration     `json:"interval"`
	Duration     time.Duration     `json:"duration"`
	WarningRatio float64           `json:"warningRatio"`
	FailureRatio float64           `json:"failureRatio"`

	body *regexp.Regexp
}

// Prometheus evaluates Query against the Prometheus at Address every
// Interval for Duration. An evaluation holds when every series it returns
// satisfies "value Op Threshold"; one that returns nothing or NaN does not.
// The ratio of evaluations that do not hold decides as for HTTP.
type Prometheus struct {
	Address      string        `json:"address"`
	Query        string        `json:"query"`
	Op           string        `json:"op"`
	Threshold    float64       `json:"threshold"`
	Interval     time.Duration `json:"interval"`
	Duration     time.Duration `json:"duration"`
	WarningRatio float64       `json:"warningRatio"`
	FailureRatio float64       `json:"failureRatio"`
}

// ops are the comparisons a Prometheus task may ask for.
var ops = map[string]func(v, t float64) bool{
	"<":  func(v, t float64) bool { return v < t },
	"<=": func(v, t float64) bool { return v <= t },
	">":  func(v, t float64) bool { return v > t },
	">=": func(v, t float64) bool { return v >= t },
	"==": func(v, t float64) bool { return v == t },
	"!=": func(v, t float64) bool { return v != t },
}

// properties is the written form of a task's properties.
type properties struct {
	Kind       string          `json:"kind"`
	Timeout    string          `json:"timeout"`
	Job        *Job            `json:"job"`
	HTTP       *httpProps      `json:"http"`
	Prometheus *prometheusProp `json:"prometheus"`
	Analysis   *Analysis       `json:"analysis"`
}

type httpProps struct {
	URL          string            `json:"url"`
	Method       string            `json:"method"`
	Headers      map[string]string `json:"headers"`
	ExpectStatus int               `json:"expectStatus"`
	BodyRegexp   string            `json:"bodyRegexp"`
	Interval     string            `json:"interval"`
	Duration     string            `json:"duration"`
	WarningRatio *float64          `json:"warningRatio"`
	FailureRatio *float64          `json:"failureRatio"`
}

type prometheusProp struct {
	Address      string   `json:"address"`
	Query        string   `json:"query"`
	Op           string   `json:"op"`
	Threshold    *float64 `json:"threshold"`
	Interval     string   `json:"interval"`
	Duration     string   `json:"duration"`
	WarningRatio *float64 `json:"warningRatio"`
	FailureRatio *float64 `json:"failureRatio"`
}

// Kinds reports whether properties declare a verification task: they hold
// one of the keys job, http, prometheus or analysis, or a kind. A sequence task whose
// properties declare none is not one of this package's.
func Kinds(properties json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(properties, &m) != nil {
		return false
	}
	for _, k := range []string{"kind", KindJob, KindHTTP, KindPrometheus, KindAnalysis} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// ParseTask reads the task name from its properties (a JSON object):
//
//	kind: http              # job | http | prometheus | analysis; optional when exactly one of the four keys is set
//	timeout: 2m             # the most the task may take (default 5m, and at least a check's duration + 1m)
//	http: {url: https://shop.example.com/healthz, expectStatus: 200, bodyRegexp: ok, interval: 5s, duration: 1m, failureRatio: 0.1}
//
// Unknown keys are refused; an error names the key (as a dotted path) and
// the value, and what would be accepted.
func ParseTask(name string, props json.RawMessage) (Task, error) {
	t := Task{Name: name}
	if name == "" {
		return t, errors.New("verification task: name: required")
	}
	var p properties
	dec := json.NewDecoder(bytes.NewReader(props))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return t, fmt.Errorf("verification task %q: decoding properties: %w", name, err)
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("verification task %q: %s: "+format, append([]any{name, key}, args...)...))
	}
	var set []string
	if p.Job != nil {
		set = append(set, KindJob)
	}
	if p.HTTP != nil {
		set = append(set, KindHTTP)
	}
	if p.Prometheus != nil {
		set = append(set, KindPrometheus)
	}
	if p.Analysis != nil {
		set = append(set, KindAnalysis)
	}
	switch {
	case p.Kind != "" && !slices.Contains([]string{KindJob, KindHTTP, KindPrometheus, KindAnalysis}, p.Kind):
		bad("kind", "want job, http, prometheus or analysis, got %q", p.Kind)
		return t, errors.Join(errs...)
	case len(set) > 1:
		bad("kind", "set exactly one of job, http, prometheus and analysis, got %s", strings.Join(set, " and "))
		return t, errors.Join(errs...)
	case len(set) == 0 && p.Kind == "":
		bad("kind", "set one of job, http, prometheus and analysis")
		return t, errors.Join(errs...)
	case len(set) == 0:
		bad(p.Kind, "required with kind %s", p.Kind)
		return t, errors.Join(errs...)
	case p.Kind != "" && p.Kind != set[0]:
		bad("kind", "is %q, but the settings are under %s", p.Kind, set[0])
		return t, errors.Join(errs...)
	}
	t.Kind = set[0]
	t.Timeout = DefaultTimeout
	explicit := p.Timeout != ""
	if explicit {
		t.Timeout = duration(p.Timeout, "timeout", bad)
	}
	// A check's default timeout leaves it a minute beyond its duration.
	atLeast := func(d time.Duration) {
		if !explicit && d+time.Minute > t.Timeout {
			t.Timeout = d + time.Minute
		}
	}
	switch t.Kind {
	case KindJob:
		t.Job = p.Job
		if t.Job.Image == "" {
			bad("job.image", "required")
		} else if _, err := imgref.ParseReference(t.Job.Image); err != nil {
			// The API server takes a Job with such an image, but never a pod of it: the task would wait out its timeout.
			bad("job.image", "want an image reference such as ghcr.io/acme/smoke-tests:1.4.0, got %q (%v)", t.Job.Image, err)
		}
		if t.Job.BackoffLimit < 0 {
			bad("job.backoffLimit", "must not be negative, got %d", t.Job.BackoffLimit)
		}
		for k := range t.Job.Env {
			if strings.HasPrefix(k, "STAGEHAND_") {
				bad("job.env."+k, "the STAGEHAND_ prefix is reserved for the variables stagehand sets")
			}
		}
	case KindHTTP:
		t.HTTP = parseHTTP(p.HTTP, bad)
		atLeast(t.HTTP.Duration)
		if t.HTTP.Duration >= t.Timeout {
			bad("http.duration", "%s must be shorter than the timeout %s", t.HTTP.Duration, t.Timeout)
		}
	case KindAnalysis:
		t.Analysis = parseAnalysis(p.Analysis, bad)
	case KindPrometheus:
		t.Prometheus = parsePrometheus(p.Prometheus, bad)
		atLeast(t.Prometheus.Duration)
		if t.Prometheus.Duration >= t.Timeout {
			bad("prometheus.duration", "%s must be shorter than the timeout %s", t.Prometheus.Duration, t.Timeout)
		}
	}
	return t, errors.Join(errs...)
}

type badFunc func(key, format string, args ...any)

func duration(s, key string, bad badFunc) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		bad(key, "want a positive duration such as 30s or 5m, got %q", s)
		return 0
	}
	return d
}

func parseHTTP(p *httpProps, bad badFunc) *HTTP {
	h := &HTTP{URL: p.URL, Method: p.Method, Headers: p.Headers, ExpectStatus: p.ExpectStatus, BodyRegexp: p.BodyRegexp,
		Interval: 10 * time.Second, Duration: time.Minute}
	if u, err := url.Parse(p.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("http.url", "want an absolute http(s) URL, got %q", p.URL)
	}
	if h.Method == "" {
		h.Method = "GET"
	} else if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, h.Method) {
		bad("http.method", "want an HTTP method such as GET, got %q", h.Method)
	}
	if h.ExpectStatus == 0 {
		h.ExpectStatus = 200
	} else if h.ExpectStatus < 100 || h.ExpectStatus > 599 {
		bad("http.expectStatus", "want an HTTP status from 100 to 599, got %d", h.ExpectStatus)
	}
	if h.BodyRegexp != "" {
		var err error
		if h.body, err = regexp.Compile(h.BodyRegexp); err != nil {
			bad("http.bodyRegexp", "not a regular expression (%v): %q", err, h.BodyRegexp)
		}
	}
	if p.Interval != "" {
		h.Interval = duration(p.Interval, "http.interval", bad)
	}
	if p.Duration != "" {
		h.Duration = duration(p.Duration, "http.duration", bad)
	}
	h.WarningRatio, h.FailureRatio = ratios("http", p.WarningRatio, p.FailureRatio, bad)
	return h
}

func parsePrometheus(p *prometheusProp, bad badFunc) *Prometheus {
	q := &Prometheus{Address: p.Address, Query: p.Query, Op: p.Op, Interval: 30 * time.Second, Duration: 2 * time.Minute}
	if u, err := url.Parse(p.Address); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("prometheus.address", "want the Prometheus server's absolute http(s) URL, got %q", p.Address)
	}
	if strings.TrimSpace(p.Query) == "" {
		bad("prometheus.query", "required: a PromQL expression")
	}
	if _, ok := ops[p.Op]; !ok {
		bad("prometheus.op", "want one of <, <=, >, >=, ==, !=, got %q", p.Op)
	}
	if p.Threshold == nil {
		bad("prometheus.threshold", "required: the number the query's value is compared with")
	} else if math.IsNaN(*p.Threshold) || math.IsInf(*p.Threshold, 0) {
		bad("prometheus.threshold", "want a finite number, got %v", *p.Threshold)
	} else {
		q.Threshold = *p.Threshold
	}
	if p.Interval != "" {
		q.Interval = duration(p.Interval, "prometheus.interval", bad)
	}
	if p.Duration != "" {
		q.Duration = duration(p.Duration, "prometheus.duration", bad)
	}
	q.WarningRatio, q.FailureRatio = ratios("prometheus", p.WarningRatio, p.FailureRatio, bad)
	return q
}

// ratios reads the warning and failure ratios: both default to 0 (any
// failure fails); a failure ratio alone makes failures up to it warn.
func ratios(kind string, warn, fail *float64, bad badFunc) (float64, float64) {
	var w, f float64
	if fail != nil {
		f = *fail
		if !(f >= 0 && f < 1) {
			bad(kind+".failureRatio", "want a number from 0 to below 1, got %v", f)
		}
	}
	if warn != nil {
		w = *warn
		if !(w >= 0 && w <= f) {
			bad(kind+".warningRatio", "want a number from 0 to failureRatio (%v), got %v", f, w)
		}
	}
	return w, f
}
