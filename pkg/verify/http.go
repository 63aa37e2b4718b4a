package verify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
)

// maxBody is how much of a body a bodyRegexp is matched against.
const maxBody = 1 << 20

// http requests h.URL every interval for the duration and judges the
// failure ratio; the message quotes the last failure.
func (v *Verifier) http(ctx context.Context, h *HTTP) verdict {
	body := h.body
	if body == nil && h.BodyRegexp != "" {
		var err error
		if body, err = regexp.Compile(h.BodyRegexp); err != nil {
			return verdict{Fail, fmt.Sprintf("bodyRegexp %q: %v", h.BodyRegexp, err)}
		}
	}
	var failed, total int
	var last string
	every(ctx, h.Interval, h.Duration, func(rctx context.Context) {
		if ctx.Err() != nil {
			return
		}
		total++
		if why := v.request(rctx, h, body); why != "" {
			failed++
			last = why
		}
	})
	res := judge(count{failed, total, "requests"}, h.WarningRatio, h.FailureRatio)
	if failed > 0 {
		res.message += "; last: " + last
	}
	return res
}

// request sends one request and says why it failed ("" when it did not).
func (v *Verifier) request(ctx context.Context, h *HTTP, body *regexp.Regexp) string {
	req, err := http.NewRequestWithContext(ctx, h.Method, h.URL, nil)
	if err != nil {
		return err.Error()
	}
	for k, val := range h.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = val
			continue
		}
		req.Header.Set(k, val)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return fmt.Sprintf("%s %s: %v", h.Method, h.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode != h.ExpectStatus {
		return fmt.Sprintf("%s %s: status %d, want %d", h.Method, h.URL, resp.StatusCode, h.ExpectStatus)
	}
	if body != nil {
		if err != nil {
			return fmt.Sprintf("%s %s: reading body: %v", h.Method, h.URL, err)
		}
		if !body.Match(b) {
			return fmt.Sprintf("%s %s: body does not match %q", h.Method, h.URL, h.BodyRegexp)
		}
	}
	return ""
}
