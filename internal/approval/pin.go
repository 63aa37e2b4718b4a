package approval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// Pin is what an incident rollback (`reconciler rollback --now`) keeps in an
// environment's state: the versions of the services it rolled back. While it
// holds, the reconciler deploys those versions whatever git says of these
// services, so the cluster does not flip back to the newer ones before the
// rollback pull request merges. It goes when git says what it says (the
// pull request merged), when the pull request merges or the hold is
// released, or at ExpiresAt.
type Pin struct {
	// PR and URL are the rollback pull request.
	PR  int    `json:"pr"`
	URL string `json:"url"`
	// Revision is the commit rolled back to.
	Revision string `json:"revision"`
	// Services are the pinned entries: name, version and the containers
	// with the tag and digest to keep (containers not listed follow git).
	Services []manifest.Service `json:"services"`
	// Replaced are the same services as git said them when the pin was
	// placed (the versions rolled back from). A container whose tag git
	// later changes to a third one (neither pinned nor replaced: a change
	// merged since, which the reconciler applies as any) is no longer
	// pinned. Empty: the pin holds whatever git says.
	Replaced []manifest.Service `json:"replaced,omitempty"`
	By       string             `json:"by"`
	At       time.Time          `json:"at"`
	// ExpiresAt is the end of the rollback's hold.
	ExpiresAt time.Time `json:"expiresAt"`
}

// Message is how the status says it: "pinned by rollback #7".
func (p Pin) Message() string { return fmt.Sprintf("pinned by rollback #%d", p.PR) }

// Apply returns env with the pinned services' versions and containers in
// place of git's (env itself is not changed), and whether git already says
// what the pin says for every pinned service, or has moved past it (then the
// pin has done its work). A pinned service git does not have any more is
// left out; a version or container tag git changed since the pin to
// another than the pinned or the replaced one follows git.
func (p Pin) Apply(env *manifest.Environment) (*manifest.Environment, bool) {
	out := *env
	out.Services = make([]manifest.Service, len(env.Services))
	caughtUp := true
	for i, s := range env.Services {
		out.Services[i] = s
		pin, ok := p.service(s.Name)
		if !ok {
			continue
		}
		rep, hasRep := p.replaced(s.Name)
		s.Containers = append([]manifest.Container(nil), s.Containers...)
		if pin.Version != "" && pin.Version != s.Version && (!hasRep || rep.Version == "" || rep.Version == s.Version) {
			s.Version, caughtUp = pin.Version, false
		}
		for j, c := range s.Containers {
			name := dockerName(s.Name, c)
			pc, ok := pinnedContainer(pin, name)
			if !ok || c.DockerTag == pc.DockerTag && c.DockerDigest == pc.DockerDigest {
				continue
			}
			if hasRep {
				// Tags only: a digest the resolve added is no move of git's.
				if rc, ok := pinnedContainer(rep, name); ok && c.DockerTag != rc.DockerTag && c.DockerTag != pc.DockerTag {
					continue // git moved past the pin: a change merged since
				}
			}
			s.Containers[j].DockerTag, s.Containers[j].DockerDigest, caughtUp = pc.DockerTag, pc.DockerDigest, false
		}
		out.Services[i] = s
	}
	return &out, caughtUp
}

// Foreign returns the changes that are not the pin's: a change of a service
// the pin does not hold, or one that moves a pinned service's container to
// another tag than a pinned one (a container git changed since the target,
// which the rollback did not name). A plan with none of them but with
// changes is the pin's plan and nothing else.
func (p Pin) Foreign(changes []reconcile.Change) []reconcile.Change {
	var out []reconcile.Change
	for _, c := range changes {
		pin, ok := p.service(c.Service)
		if !ok || !slices.ContainsFunc(pin.Containers, func(pc manifest.Container) bool { return pc.DockerTag == imageTag(c.To) }) {
			out = append(out, c)
		}
	}
	return out
}

// DescribeChange names a change for a person: "worker: container worker of
// Deployment apps/worker in target a → registry.example.com/worker:3.0.0".
func DescribeChange(c reconcile.Change) string {
	return fmt.Sprintf("%s: container %s of %s %s/%s in target %s → %s", c.Service, c.Container, c.Kind, c.Namespace, c.Name, c.Target, c.To)
}

// imageTag is the tag of an image reference ("repo:tag", "repo:tag@digest";
// "" without one).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return ref[i+1:]
}

func (p Pin) service(name string) (manifest.Service, bool) { return findService(p.Services, name) }

func (p Pin) replaced(name string) (manifest.Service, bool) { return findService(p.Replaced, name) }

func findService(services []manifest.Service, name string) (manifest.Service, bool) {
	for _, s := range services {
		if s.Name == name {
			return s, true
		}
	}
	return manifest.Service{}, false
}

func pinnedContainer(s manifest.Service, name string) (manifest.Container, bool) {
	for _, c := range s.Containers {
		if dockerName(s.Name, c) == name {
			return c, true
		}
	}
	return manifest.Container{}, false
}

func dockerName(service string, c manifest.Container) string {
	if c.DockerName == "" {
		return service
	}
	return c.DockerName
}
