package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// prometheus evaluates p.Query every interval for the duration; an
// evaluation fails when the query errs, returns nothing or NaN, or a series
// is on the wrong side of the threshold. The message quotes the last value
// seen and the last failure.
func (v *Verifier) prometheus(ctx context.Context, p *Prometheus) verdict {
	var failed, total int
	var last, lastValue string
	every(ctx, p.Interval, p.Duration, func(rctx context.Context) {
		if ctx.Err() != nil {
			return
		}
		total++
		vals, err := v.query(rctx, p)
		if err != nil {
			failed++
			last = err.Error()
			return
		}
		lastValue = formatValues(vals)
		for _, series := range sortedSeries(vals) {
			val := vals[series]
			switch {
			case math.IsNaN(val):
				failed++
				last = fmt.Sprintf("%s is NaN (no data to compute it from?)", series)
				return
			case !ops[p.Op](val, p.Threshold):
				failed++
				last = fmt.Sprintf("%s = %v, want %s %v", series, val, p.Op, p.Threshold)
				return
			}
		}
	})
	res := judge(count{failed, total, "evaluations of " + strconv.Quote(p.Query)}, p.WarningRatio, p.FailureRatio)
	if lastValue != "" {
		res.message += "; last value " + lastValue
	}
	if failed > 0 {
		res.message += "; last failure: " + last
	}
	return res
}

// queryResponse is the Prometheus HTTP API's answer to an instant query.
type queryResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs p.Query as an instant query and returns each series' value by
// its labels ("{}" for a scalar or an unlabelled series).
func (v *Verifier) query(ctx context.Context, p *Prometheus) (map[string]float64, error) {
	u := strings.TrimSuffix(p.Address, "/") + "/api/v1/query?" + url.Values{"query": {p.Query}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus at %s: %w", p.Address, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading Prometheus' answer: %w", err)
	}
	if len(b) > maxBody {
		// Cut short, it would read as "not a query answer"; say what is wrong instead.
		return nil, fmt.Errorf("query %q: Prometheus' answer is larger than %d bytes: the query returns too many series; aggregate it (sum, max, topk)", p.Query, maxBody)
	}
	var qr queryResponse
	if err := json.Unmarshal(b, &qr); err != nil {
		return nil, fmt.Errorf("querying Prometheus at %s: status %d, not a query answer: %.200q", p.Address, resp.StatusCode, b)
	}
	if qr.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", p.Query, qr.ErrorType, qr.Error)
	}
	out := map[string]float64{}
	switch qr.Data.ResultType {
	case "scalar":
		var s [2]any
		if err := json.Unmarshal(qr.Data.Result, &s); err != nil {
			return nil, fmt.Errorf("decoding scalar of %q: %w", p.Query, err)
		}
		f, err := sampleValue(s)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", p.Query, err)
		}
		out["{}"] = f
	case "vector":
		var ss []sample
		if err := json.Unmarshal(qr.Data.Result, &ss); err != nil {
			return nil, fmt.Errorf("decoding vector of %q: %w", p.Query, err)
		}
		for _, s := range ss {
			f, err := sampleValue(s.Value)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", p.Query, err)
			}
			out[labels(s.Metric)] = f
		}
	default:
		return nil, fmt.Errorf("query %q returned a %s; want an instant vector or a scalar", p.Query, qr.Data.ResultType)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("query %q returned no result (is the metric scraped, are its labels right?)", p.Query)
	}
	return out, nil
}

func sampleValue(v [2]any) (float64, error) {
	s, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %q: %w", s, err)
	}
	return f, nil
}

func labels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// maxSeries is how many series a message quotes.
const maxSeries = 3

func sortedSeries(vals map[string]float64) []string {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func formatValues(vals map[string]float64) string {
	keys := sortedSeries(vals)
	var parts []string
	for i, k := range keys {
		if i == maxSeries {
			parts = append(parts, fmt.Sprintf("and %d more series", len(keys)-maxSeries))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %v", k, vals[k]))
	}
	return strings.Join(parts, ", ")
}
