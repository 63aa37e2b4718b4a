package policy

import (
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Input is what a rule's when sees: the variables plan, revision, now, history and locks.
type Input struct {
	Plan     Plan     `json:"plan"`
	Revision Revision `json:"revision"`
	// Now is the API server's clock, the same for every replica (rules pick a zone:
	// now.getHours("Europe/London")).
	Now time.Time `json:"now"`
	// History is the environment's recent deploys, newest first.
	History []Deploy `json:"history,omitempty"`
	// Locks are the environment's deploy locks in force.
	Locks []Lock `json:"locks,omitempty"`
}

// Plan is the plan to approve, as the variable plan: its changes, the distinct services they touch.
type Plan struct {
	Environment string   `json:"environment"`
	Changes     []Change `json:"changes"`
	// Services are the distinct services of Changes, sorted.
	Services []string `json:"services"`
}

// Change is one container's image change: plan.changes[i].
type Change struct {
	Service   string `json:"service"`
	Target    string `json:"target"`
	Workload  string `json:"workload"`
	Container string `json:"container"`
	From      Image  `json:"from"`
	To        Image  `json:"to"`
}

// Image is an image reference taken apart: c.to.image is the whole reference, c.to.repository the name
// without tag or digest, c.to.tag and c.to.digest ("" when absent).
type Image struct {
	Image      string `json:"image"`
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
}

// Revision is the revision to deploy: its SHA, and of the commits since the last applied one their
// authors, the files they change and their messages' trailers.
type Revision struct {
	SHA string `json:"sha"`
	// Authors are the e-mail addresses (or GitHub logins) of the authors and committers of the commits to
	// deploy, as four-eyes reads them.
	Authors []string `json:"authors"`
	// Files are the repository-relative paths the commits to deploy change (sorted).
	Files []string `json:"files,omitempty"`
	// Trailers are their messages' trailers by key in canonical case ("Change-Risk": ["low"]), each value
	// once, the newest commit's first.
	Trailers map[string][]string `json:"trailers,omitempty"`
}

// Deploy is one entry of the environment's history: revision.result is succeeded, failed, rejected or
// interrupted.
type Deploy struct {
	Revision string    `json:"revision"`
	Result   string    `json:"result"`
	Services []string  `json:"services"`
	Finished time.Time `json:"finished"`
}

// Lock is one deploy lock in force: service "" locks the whole environment; type is the lock's kind
// (deploy, incident, freeze, hold, automation).
type Lock struct {
	Service string `json:"service"`
	Author  string `json:"author"`
	Type    string `json:"type"`
}

// FromPlan is the variable plan for p.
func FromPlan(p *reconcile.Plan) Plan {
	out := Plan{Environment: p.Environment, Changes: make([]Change, len(p.Changes))}
	seen := map[string]bool{}
	for i, c := range p.Changes {
		out.Changes[i] = Change{Service: c.Service, Target: c.Target, Workload: c.Kind + "/" + c.Name, Container: c.Container,
			From: ParseImage(c.From), To: ParseImage(c.To)}
		if !seen[c.Service] {
			seen[c.Service] = true
			out.Services = append(out.Services, c.Service)
		}
	}
	sortStrings(out.Services)
	return out
}

// ParseImage takes ref apart: registry.example.com:5000/team/app:1.2.3@sha256:… has the repository
// registry.example.com:5000/team/app, the tag 1.2.3 and the digest sha256:….
func ParseImage(ref string) Image {
	img := Image{Image: ref}
	rest := ref
	if name, digest, ok := strings.Cut(rest, "@"); ok {
		rest, img.Digest = name, digest
	}
	slash := strings.LastIndex(rest, "/")
	if colon := strings.LastIndex(rest, ":"); colon > slash {
		rest, img.Tag = rest[:colon], rest[colon+1:]
	}
	img.Repository = rest
	return img
}
