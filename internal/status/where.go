package status

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Placement is one service in one target, found by Where.
type Placement struct {
	Environment string `json:"environment"`
	Target      string `json:"target"`
	Namespace   string `json:"namespace"`
	Service     string `json:"service"`
	Version     string `json:"version,omitempty"`
	Container   string `json:"container"` // the manifest's dockerName
	// Live is the image running (the manifest's reference when in sync);
	// "" when a problem leaves it unknown.
	Live    string `json:"live"`
	Desired string `json:"desired"`
	State   string `json:"state"` // a Service state: in-sync, out-of-sync, blocked, problem
	// Running is true when the query matched the live image (or the service
	// name); false when only the desired image matched: it is on its way.
	Running bool `json:"running"`
	// Since is when Stagehand finished applying the live image here, from
	// the history; zero when the history does not say (applied before it, or
	// by someone else).
	Since         time.Time `json:"since,omitzero"`
	SinceRevision string    `json:"sinceRevision,omitempty"`
}

// Where answers "where is it running?": every target of envs where the
// service named query runs, or whose images match query as a tag, a
// version, a digest (or its first hex digits, at least seven) or a whole
// reference. Matching is case-insensitive; envs' order is kept.
func Where(envs []*Environment, query string) []Placement {
	q := strings.ToLower(strings.TrimSpace(query))
	out := []Placement{}
	if q == "" {
		return out
	}
	for _, e := range envs {
		applied := appliedAt(e.History)
		for _, s := range e.Services {
			byName := strings.ToLower(s.Name) == q
			for _, t := range s.Targets {
				for _, im := range t.Images {
					live := byName || imageMatches(im.Live, q) || strings.ToLower(s.Version) == q
					if !live && !imageMatches(im.Desired, q) {
						continue
					}
					p := Placement{Environment: e.Name, Target: t.Target, Namespace: t.Namespace, Service: s.Name, Version: s.Version,
						Container: im.DockerName, Live: im.Live, Desired: im.Desired, State: t.State, Running: live}
					if a, ok := applied[s.Name+"\x00"+t.Target+"\x00"+Tag(im.Live)]; ok && im.Live != "" {
						p.Since, p.SinceRevision = a.Finished, a.Revision
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// imageMatches reports whether ref (lowercase query q) is the image asked for.
func imageMatches(ref, q string) bool {
	if ref == "" {
		return false
	}
	ref = strings.ToLower(ref)
	if ref == q || Tag(ref) == q {
		return true
	}
	name, digest, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") && name[i+1:] == q {
		return true
	}
	if digest == "" {
		return false
	}
	hex := strings.TrimPrefix(q, "sha256:")
	return len(hex) >= 7 && strings.HasPrefix(strings.TrimPrefix(digest, "sha256:"), hex)
}

// appliedAt maps service, target and image tag to the newest history entry
// that applied that image there successfully.
func appliedAt(history []approval.Entry) map[string]approval.Entry {
	out := map[string]approval.Entry{}
	for _, h := range history { // newest first: the first seen wins
		if h.Result != approval.ResultSucceeded {
			continue
		}
		var cs []reconcile.Change
		if json.Unmarshal(h.Changes, &cs) != nil {
			continue
		}
		for _, c := range cs {
			k := c.Service + "\x00" + c.Target + "\x00" + Tag(c.To)
			if _, seen := out[k]; !seen {
				out[k] = h
			}
		}
	}
	return out
}
