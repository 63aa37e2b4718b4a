package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// doraBackend is prod with a scripted history: a failed deploy on day 2
// restored by a succeeded one on day 3, and one on day 20 (and the
// backend's rejected entry, not a deploy).
type doraBackend struct{ backend }

func (b *doraBackend) History(ctx context.Context, env string) ([]approval.Entry, error) {
	if _, err := b.backend.History(ctx, env); err != nil {
		return nil, err
	}
	day := func(n int) time.Time { return time.Date(2026, 3, 1+n, 0, 0, 0, 0, time.UTC) }
	return []approval.Entry{
		{ID: 4, Revision: "r3", Result: approval.ResultSucceeded, Started: day(20).Add(-time.Minute), Finished: day(20)},
		{ID: 3, Revision: "r2", Result: approval.ResultSucceeded, Started: day(3).Add(-time.Minute), Finished: day(3)},
		{ID: 2, Revision: "r1", Result: approval.ResultFailed, Started: day(2).Add(-time.Minute), Finished: day(2)},
		{ID: 1, Revision: "r0", Result: approval.ResultRejected, Finished: day(1)},
	}, nil
}

// hourBefore dates every range's first commit an hour before 2026-03-21
// (r3) or 2026-03-04 (r2).
type hourBefore struct{}

func (hourBefore) FirstCommit(_ context.Context, _, head string) (time.Time, error) {
	switch head {
	case "r3":
		return time.Date(2026, 3, 20, 23, 0, 0, 0, time.UTC), nil
	case "r2":
		return time.Date(2026, 3, 3, 23, 0, 0, 0, time.UTC), nil
	}
	return time.Time{}, errors.New("unknown revision")
}

func TestDORA(t *testing.T) {
	now := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	r, err := dora.NewReporter(dora.WithCommits(hourBefore{}), dora.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(&doraBackend{}, withOps(t), WithDORA(r))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c := newClient(t, srv, token)

	got, err := c.DORA(context.Background(), "prod", "")
	if err != nil {
		t.Fatal(err)
	}
	want := &dora.Report{Environment: "prod", Window: "30d", From: now.Add(-30 * 24 * time.Hour), To: now,
		HistoryFrom: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Complete: true,
		Deploys: 3, Succeeded: 2, Failed: 1, DeploysPerDay: 2.0 / 30,
		LeadTime:       dora.Durations{Count: 2, MedianSeconds: 3600, P90Seconds: 3600, MaxSeconds: 3600},
		ChangeFailures: 1, ChangeFailureRate: 1.0 / 3,
		TimeToRestore: dora.Durations{Count: 1, MedianSeconds: 86400, P90Seconds: 86400, MaxSeconds: 86400}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DORA over the default window (-want +got):\n%s", diff)
	}
	got, err = c.DORA(context.Background(), "prod", "2w")
	if err != nil {
		t.Fatal(err)
	}
	if got.Window != "14d" || got.Deploys != 1 || got.Succeeded != 1 || got.ChangeFailures != 0 {
		t.Errorf("DORA over 2w = %+v; want the deploy of day 20 alone", got)
	}

	for _, tc := range []struct {
		name, path string
		status     int
		code, msg  string
	}{
		{name: "a window past the longest", path: "/api/v1/environments/prod/dora?window=400d", status: 400, code: CodeInvalidWindow,
			msg: `invalid window \"400d\": longer than the longest window, 366d`},
		{name: "not a window", path: "/api/v1/environments/prod/dora?window=month", status: 400, code: CodeInvalidWindow,
			msg: `invalid window \"month\": want a number of days (30d), weeks (2w) or a duration (36h)`},
		{name: "a huge window", path: "/api/v1/environments/prod/dora?window=" + strings.Repeat("9", 4000) + "d", status: 400, code: CodeInvalidWindow,
			msg: `invalid window \"99999999999999999999999999999999\"…`},
		{name: "a negative one", path: "/api/v1/environments/prod/dora?window=-720h", status: 400, code: CodeInvalidWindow, msg: `shorter than a minute`},
		{name: "twice", path: "/api/v1/environments/prod/dora?window=1d&window=400d", status: 400, code: "BadRequest", msg: "window given 2 times"},
		{name: "an unknown environment", path: "/api/v1/environments/qa/dora", status: 404, code: CodeUnknownEnvironment, msg: `unknown environment \"qa\"`},
		{name: "no token", path: "/api/v1/environments/prod/dora", status: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := token
			if tc.status == http.StatusUnauthorized {
				tok = ""
			}
			status, body := call(t, srv, "GET", tc.path, tok, "")
			if status != tc.status || !strings.Contains(body, `"code": "`+tc.code) || !strings.Contains(body, tc.msg) {
				t.Errorf("GET %.80s = %d %s; want %d %s naming %s", tc.path, status, body, tc.status, tc.code, tc.msg)
			}
		})
	}
	var apiErr *Error
	if _, err := c.DORA(context.Background(), "prod", "400d"); !errors.As(err, &apiErr) || apiErr.Code != CodeInvalidWindow {
		t.Errorf("Client.DORA(400d) = %v; want an *api.Error with code %s", err, CodeInvalidWindow)
	}
}
