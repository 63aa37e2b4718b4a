package manifest

import (
	"path"
	"strings"
)

// Environment is one resolved environment: the effective services of its root
// manifest and everything it includes.
type Environment struct {
	// Name is the environment's directory name under environments/.
	Name string `json:"environment"`
	// Root is the repo-relative path of the environment's root manifest,
	// e.g. "environments/devel/manifest.json".
	Root string `json:"root"`
	// SkipConfirmation is the root manifest's skipConfirmation (included
	// files cannot set it).
	SkipConfirmation bool `json:"skipConfirmation"`
	// Services in effective order: included files' services first, in include
	// order, then the file's own; an overriding entry stands where the winner
	// was written.
	Services []Service `json:"services"`
	// Overrides lists every entry shadowed by a later one of the same name.
	Overrides []Override `json:"overrides"`
	// Warnings are problems that do not stop the environment (an ignored
	// skipConfirmation in an included file, unknown keys when allowed).
	Warnings []Error `json:"warnings"`
	// Layout is the include tree rooted at the root manifest.
	Layout *Layout `json:"layout"`
}

// Service is one service entry of a manifest.
type Service struct {
	Name string `json:"name"`
	// Version is an optional SemVer 2.0 version ("" when absent).
	Version string `json:"version"`
	// Source is the repo-relative file that defined this entry.
	Source     string      `json:"source"`
	Containers []Container `json:"containers"`
}

// Container is one container image of a service.
type Container struct {
	// DockerName is the image repository name; it defaults to the service
	// name in resolved output.
	DockerName string `json:"dockerName"`
	// DockerTag is the image tag to deploy.
	DockerTag string `json:"dockerTag"`
	// DockerDigest is an optional "sha256:<64 hex>" digest ("" when absent).
	DockerDigest string `json:"dockerDigest"`
}

// Service returns the service named name and whether it exists.
func (e *Environment) Service(name string) (Service, bool) {
	for _, s := range e.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// Location points at a value in a manifest file.
type Location struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Pointer string `json:"pointer"`
}

// Override records that the entry at Shadowed was replaced by the later entry
// at Winner for the same service name.
type Override struct {
	Service  string   `json:"service"`
	Winner   Location `json:"winner"`
	Shadowed Location `json:"shadowed"`
}

// Layout is one node of the include tree: a file, the services it defines and
// the files it includes, in order. A file included from two places (a diamond)
// appears under both.
type Layout struct {
	// File is the repo-relative path of the file.
	File string `json:"file"`
	// Owner is the repository that owns the file by the RFC's naming
	// convention (see Owner).
	Owner    string          `json:"owner"`
	Services []LayoutService `json:"services"`
	Includes []*Layout       `json:"includes"`
}

// LayoutService is a service entry as written in one file.
type LayoutService struct {
	Name   string `json:"name"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	// Pointer is the entry's JSON pointer in File, e.g. "/services/2".
	Pointer string `json:"pointer"`
	// Overridden is true when a later entry of the same name won; OverriddenBy
	// then names the winning file.
	Overridden   bool   `json:"overridden"`
	OverriddenBy string `json:"overriddenBy,omitempty"`
}

// Walk calls fn for l and every node below it, depth first in include order.
func (l *Layout) Walk(fn func(*Layout)) {
	if l == nil {
		return
	}
	fn(l)
	for _, c := range l.Includes {
		c.Walk(fn)
	}
}

// Owner returns the repository that owns a manifest file by the RFC's
// convention: the file's base name without ".json"
// ("environments/devel/checkout-api.json" is owned by "checkout-api").
func Owner(file string) string {
	return strings.TrimSuffix(path.Base(file), ".json")
}
