package version

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Stamped with -ldflags "-X github.com/stagehand-gitops/stagehand/internal/version.version=v1.2.3 ..."
// by `make build` and `make release`; empty in a plain go build.
var (
	version string
	commit  string
	date    string
)

// Info is one build's identity.
type Info struct {
	// Version is the release (v1.2.3), or the module version Go recorded
	// (a pseudo-version, or "(devel)") for an unstamped build.
	Version string `json:"version"`
	// Commit is the git commit built; "" when unknown.
	Commit string `json:"commit,omitempty"`
	// Date is when it was built (the commit's time for an unstamped build),
	// RFC 3339; "" when unknown.
	Date string `json:"date,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running build's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, version, commit, date)
}

// from builds Info from the stamped values, falling back to bi (nil when the
// binary has no build information).
func from(bi *debug.BuildInfo, version, commit, date string) Info {
	i := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		if i.Version == "" {
			i.Version = "(unknown)"
		}
		return i
	}
	if bi.GoVersion != "" {
		i.GoVersion = bi.GoVersion
	}
	var vcsCommit, vcsTime string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vcsCommit = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	if i.Version == "" {
		i.Version = bi.Main.Version
	}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	if i.Commit == "" {
		i.Commit = vcsCommit
	}
	if i.Date == "" {
		i.Date = vcsTime
	}
	return i
}

// String is one line for a person: "v1.2.3 (commit 3f2a9c1, built 2026-11-28T10:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	s := i.Version + " ("
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += "commit " + c
		if i.Modified {
			s += "+modified"
		}
		s += ", "
	}
	if i.Date != "" {
		s += "built " + i.Date + ", "
	}
	return s + i.GoVersion + " " + i.Platform + ")"
}

// Handler serves i as JSON (GET /version).
func Handler(i Info) http.Handler {
	b, err := json.Marshal(i)
	if err != nil {
		panic(fmt.Sprintf("encoding the build information: %v", err)) // Info holds strings and a bool only
	}
	b = append(b, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

// Collector is the stagehand_build_info gauge: 1, with the build's version,
// commit and Go version as labels (join it on the labels to tell which
// build each replica runs).
func Collector(i Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "stagehand_build_info",
		Help:        "1, labelled with the running build's version, commit and Go version.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
