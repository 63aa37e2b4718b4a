package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Series is one series of an instant query's answer.
type Series struct {
	Metric map[string]string
	Value  float64 // NaN and ±Inf as Prometheus writes them
}

// Stats is what Prometheus says a query cost (its answer with stats=all).
type Stats struct {
	// TotalQueryableSamples is how many samples the query read.
	TotalQueryableSamples int64 `json:"totalQueryableSamples"`
	// PeakSamples is the most samples it held in memory at once.
	PeakSamples int64 `json:"peakSamples"`
	// ExecTotalTime is how long it ran, in seconds, queueing included.
	ExecTotalTime float64 `json:"-"`
}

// Query evaluates query at the server's present and returns its series; an
// error names the query and Prometheus' own error.
func (s *Server) Query(ctx context.Context, query string) ([]Series, error) {
	series, _, err := s.query(ctx, query, time.Time{}, false)
	return series, err
}

// QueryStats evaluates query at at (the present when zero) with stats=all,
// and returns its series and what it cost.
func (s *Server) QueryStats(ctx context.Context, query string, at time.Time) ([]Series, Stats, error) {
	return s.query(ctx, query, at, true)
}

// Range is the points of a range query: from Start to End every Step.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// QueryRangeStats evaluates query over r, as a graph asks, with stats=all,
// and returns how many series it answered and what it cost.
func (s *Server) QueryRangeStats(ctx context.Context, query string, over Range) (int, Stats, error) {
	v := url.Values{"query": {query}, "start": {unixSeconds(over.Start)}, "end": {unixSeconds(over.End)},
		"step": {strconv.FormatFloat(over.Step.Seconds(), 'f', -1, 64)}, "stats": {"all"}}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
			Stats      struct {
				Timings struct {
					ExecTotalTime float64 `json:"execTotalTime"`
				} `json:"timings"`
				Samples Stats `json:"samples"`
			} `json:"stats"`
		} `json:"data"`
	}
	if err := s.get(ctx, "/api/v1/query_range?"+v.Encode(), &r); err != nil {
		return 0, Stats{}, fmt.Errorf("querying %q over a range: %w", query, err)
	}
	if r.Status != "success" {
		return 0, Stats{}, fmt.Errorf("querying %q over a range: %s", query, r.Error)
	}
	st := r.Data.Stats.Samples
	st.ExecTotalTime = r.Data.Stats.Timings.ExecTotalTime
	return len(r.Data.Result), st, nil
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}

func (s *Server) query(ctx context.Context, query string, at time.Time, stats bool) ([]Series, Stats, error) {
	v := url.Values{"query": {query}}
	if !at.IsZero() {
		v.Set("time", unixSeconds(at))
	}
	if stats {
		v.Set("stats", "all")
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
			Stats struct {
				Timings struct {
					ExecTotalTime float64 `json:"execTotalTime"`
				} `json:"timings"`
				Samples Stats `json:"samples"`
			} `json:"stats"`
		} `json:"data"`
	}
	if err := s.get(ctx, "/api/v1/query?"+v.Encode(), &r); err != nil {
		return nil, Stats{}, fmt.Errorf("querying %q: %w", query, err)
	}
	if r.Status != "success" {
		return nil, Stats{}, fmt.Errorf("querying %q: %s", query, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, Stats{}, fmt.Errorf("querying %q: a %s, want an instant vector", query, r.Data.ResultType)
	}
	out := make([]Series, 0, len(r.Data.Result))
	for _, x := range r.Data.Result {
		str, _ := x.Value[1].(string)
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, Stats{}, fmt.Errorf("querying %q: value %q: %w", query, str, err)
		}
		out = append(out, Series{Metric: x.Metric, Value: f})
	}
	st := r.Data.Stats.Samples
	st.ExecTotalTime = r.Data.Stats.Timings.ExecTotalTime
	return out, st, nil
}

// Alert is one alert as GET /api/v1/alerts shows it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"` // pending or firing
	ActiveAt    time.Time         `json:"activeAt"`
	Value       string            `json:"value"`
}

// Alerts returns the alerts pending or firing now.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := s.get(ctx, "/api/v1/alerts", &r); err != nil {
		return nil, fmt.Errorf("reading alerts: %w", err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("reading alerts: %s", r.Error)
	}
	return r.Data.Alerts, nil
}

// RuleHealth returns each rule's name and its last evaluation's error (""
// when it evaluated), so a test can tell a rule that cannot fire from one
// that did not.
func (s *Server) RuleHealth(ctx context.Context) (map[string]string, error) {
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := s.get(ctx, "/api/v1/rules", &r); err != nil {
		return nil, fmt.Errorf("reading rules: %w", err)
	}
	out := map[string]string{}
	for _, g := range r.Data.Groups {
		for _, x := range g.Rules {
			if x.Health == "err" {
				out[x.Name] = x.LastError
			} else {
				out[x.Name] = ""
			}
		}
	}
	return out, nil
}

func (s *Server) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s answer (HTTP %d): %w", path, resp.StatusCode, err)
	}
	return nil
}
