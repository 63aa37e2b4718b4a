package promote

import (
	"path"
	"strings"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// Change is one service that differs between the earlier stage and the later
// one, and where the edit that promotes it goes.
type Change struct {
	Service string `json:"service"`
	// New is true when the later stage does not have the service yet.
	New bool `json:"new"`
	// Override is true when the later stage's entry lives in a file outside
	// its own directory (a shared include): the promoted entry is added to
	// the stage's root manifest, where it overrides the shared one, instead
	// of editing a file other stages include too.
	Override bool `json:"override,omitempty"`
	// FromVersion and ToVersion are the services' optional SemVer versions.
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion,omitempty"`
	// Containers lists the containers whose tag or digest change, or that are added.
	Containers []ContainerChange `json:"containers"`
	// SourceFile is the earlier stage's file that defines the promoted entry.
	SourceFile string `json:"sourceFile"`
	// File is the later stage's file the edit lands in (see TargetFile).
	File string `json:"file"`
	// Owner is the upstream repository owning SourceFile by the ownership
	// convention ("" for a root manifest, which no repository owns).
	Owner string `json:"owner,omitempty"`
	// Health is the evidence that the earlier stage runs these versions
	// healthy (nil when the stage does not require it).
	Health *Evidence `json:"health,omitempty"`
	// Entry is the earlier stage's entry, added as a whole when New.
	Entry manifest.Service `json:"-"`
}

// ContainerChange is one container's move from one image to another.
type ContainerChange struct {
	DockerName string `json:"dockerName"`
	// New is true when the later stage's service lacks this container.
	New        bool   `json:"new"`
	FromTag    string `json:"fromTag,omitempty"`
	ToTag      string `json:"toTag"`
	FromDigest string `json:"fromDigest,omitempty"`
	ToDigest   string `json:"toDigest,omitempty"`
}

// Diff returns the services of from (the earlier stage) that differ in the
// later stage to, in from's order, each with the file of to that the edit
// belongs in.
//
// Rules: a container differs when its tag differs, or when from pins a digest
// that differs from to's (a tag without digest in from does not unpin to). A
// container present only in from is added. Services and containers present
// only in to are left alone: promotion never removes anything. A differing
// version alone is a change too.
func Diff(from, to *manifest.Environment) []Change {
	var out []Change
	for _, src := range from.Services {
		c := Change{Service: src.Name, ToVersion: src.Version, SourceFile: src.Source, Entry: src}
		if owner := manifest.Owner(src.Source); !isRootManifest(src.Source, from) {
			c.Owner = owner
		}
		dst, ok := to.Service(src.Name)
		if !ok {
			c.New = true
			for _, ct := range src.Containers {
				c.Containers = append(c.Containers, ContainerChange{DockerName: dockerName(src.Name, ct), New: true, ToTag: ct.DockerTag, ToDigest: ct.DockerDigest})
			}
			c.File = TargetFile(src.Source, to)
			out = append(out, c)
			continue
		}
		c.FromVersion = dst.Version
		for _, ct := range src.Containers {
			name := dockerName(src.Name, ct)
			have, found := container(dst, name)
			switch {
			case !found:
				c.Containers = append(c.Containers, ContainerChange{DockerName: name, New: true, ToTag: ct.DockerTag, ToDigest: ct.DockerDigest})
			case have.DockerTag != ct.DockerTag || (ct.DockerDigest != "" && ct.DockerDigest != have.DockerDigest):
				c.Containers = append(c.Containers, ContainerChange{DockerName: name, FromTag: have.DockerTag, ToTag: ct.DockerTag, FromDigest: have.DockerDigest, ToDigest: ct.DockerDigest})
			}
		}
		versionDiffers := src.Version != "" && src.Version != dst.Version
		if len(c.Containers) == 0 && !versionDiffers {
			continue
		}
		if !versionDiffers {
			c.ToVersion, c.FromVersion = "", ""
		}
		c.File = dst.Source
		if !inStage(dst.Source, to) {
			c.Override, c.File = true, to.Root
		}
		out = append(out, c)
	}
	return out
}

// TargetFile is where a service defined in sourceFile of the earlier stage
// is added in the later stage to: the file of to's include tree with the same
// base name (so "environments/devel/checkout-api.json" lands in
// "environments/staging/checkout-api.json" when staging includes one), else
// to's root manifest. Only files in to's own directory count: a shared
// include is never edited by a promotion. A service that already exists in
// to is edited where its effective entry is written (Change.File), so that
// the edit takes effect.
func TargetFile(sourceFile string, to *manifest.Environment) string {
	base := path.Base(sourceFile)
	found := ""
	to.Layout.Walk(func(l *manifest.Layout) {
		if found == "" && l.File != to.Root && path.Base(l.File) == base && inStage(l.File, to) {
			found = l.File
		}
	})
	if found != "" {
		return found
	}
	return to.Root
}

// inStage reports whether file lies in the directory of to's root manifest.
func inStage(file string, to *manifest.Environment) bool {
	return strings.HasPrefix(file, path.Dir(to.Root)+"/")
}

func isRootManifest(file string, env *manifest.Environment) bool {
	return file == env.Root || path.Base(file) == path.Base(env.Root)
}

func dockerName(service string, c manifest.Container) string {
	if c.DockerName == "" {
		return service
	}
	return c.DockerName
}

func container(s manifest.Service, name string) (manifest.Container, bool) {
	for _, c := range s.Containers {
		if dockerName(s.Name, c) == name {
			return c, true
		}
	}
	return manifest.Container{}, false
}

// SameVersions reports whether two entries of a service have the same
// version and the same containers with the same tags and digests.
func SameVersions(a, b manifest.Service) bool {
	if a.Version != b.Version || len(a.Containers) != len(b.Containers) {
		return false
	}
	for _, ca := range a.Containers {
		cb, ok := container(b, dockerName(a.Name, ca))
		if !ok || cb.DockerTag != ca.DockerTag || cb.DockerDigest != ca.DockerDigest {
			return false
		}
	}
	return true
}
