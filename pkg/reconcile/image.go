package reconcile

import "strings"

// imageRef is a container image reference split as written, without the
// normalisation a registry client applies ("nginx" stays "nginx").
type imageRef struct {
	Repository string // registry and path, e.g. "reg.example.com:5000/team/app"
	Tag        string // "" when absent
	Digest     string // "sha256:…" or ""
}

// parseImage splits image into repository, tag and digest.
func parseImage(image string) imageRef {
	var r imageRef
	rest := image
	if i := strings.Index(rest, "@"); i >= 0 {
		r.Digest = rest[i+1:]
		rest = rest[:i]
	}
	// A colon after the last slash starts the tag; one before it is a port.
	if i := strings.LastIndex(rest, ":"); i >= 0 && i > strings.LastIndex(rest, "/") {
		r.Tag = rest[i+1:]
		rest = rest[:i]
	}
	r.Repository = rest
	return r
}

// String joins the reference back: repo[:tag][@digest].
func (r imageRef) String() string {
	s := r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// matches reports whether the image repository is dockerName or ends with
// "/"+dockerName.
func (r imageRef) matches(dockerName string) bool {
	return r.Repository == dockerName || strings.HasSuffix(r.Repository, "/"+dockerName)
}
