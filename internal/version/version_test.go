package version

import (
	"encoding/json"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestFrom(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261128100000-3f2a9c1d0e0f"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a9c1d0e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b"},
			{Key: "vcs.time", Value: "2026-11-28T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		name                  string
		bi                    *debug.BuildInfo
		version, commit, date string
		want                  Info
	}{
		{name: "stamped", bi: bi, version: "v1.2.3", commit: "abc", date: "2026-12-01T00:00:00Z",
			want: Info{Version: "v1.2.3", Commit: "abc", Date: "2026-12-01T00:00:00Z", Modified: true, GoVersion: "go1.26.8"}},
		{name: "from the toolchain", bi: bi,
			want: Info{Version: "v0.0.0-20261128100000-3f2a9c1d0e0f", Commit: "3f2a9c1d0e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b", Date: "2026-11-28T10:00:00Z", Modified: true, GoVersion: "go1.26.8"}},
		{name: "nothing recorded", bi: &debug.BuildInfo{GoVersion: "go1.26.8"}, want: Info{Version: "(devel)", GoVersion: "go1.26.8"}},
		{name: "no build information", want: Info{Version: "(unknown)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := from(tc.bi, tc.version, tc.commit, tc.date)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Info{}, "Platform"), cmpopts.IgnoreFields(Info{}, "GoVersion")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.GoVersion == "" || got.Platform == "" {
				t.Errorf("GoVersion %q, Platform %q: want both", got.GoVersion, got.Platform)
			}
		})
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "3f2a9c1d0e0f1a2b3c4d", Date: "2026-11-28T10:00:00Z", Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}
	want := "v1.2.3 (commit 3f2a9c1d0e0f+modified, built 2026-11-28T10:00:00Z, go1.26.8 linux/amd64)"
	if got := i.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestHandler(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	rec := httptest.NewRecorder()
	Handler(i).ServeHTTP(rec, httptest.NewRequest("GET", "/version", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var got Info
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(i, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestCollector(t *testing.T) {
	r := prometheus.NewRegistry()
	r.MustRegister(Collector(Info{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.26.8"}))
	want := `# HELP stagehand_build_info 1, labelled with the running build's version, commit and Go version.
# TYPE stagehand_build_info gauge
stagehand_build_info{commit="abc",goversion="go1.26.8",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "stagehand_build_info"); err != nil {
		t.Error(err)
	}
}
