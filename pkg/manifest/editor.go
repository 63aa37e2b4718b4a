package manifest

import (
	"context"
	"errors"
	"fmt"
)

// Errors of the editor, checked with errors.Is.
var (
	// ErrNotFound means the service or container to edit is not in the file.
	ErrNotFound = errors.New("not found")
	// ErrExists means the service or container to add is already in the file.
	ErrExists = errors.New("already exists")
)

// Editor changes one manifest file in place, keeping its formatting: key
// order, indentation, line endings and the trailing newline. Only the bytes
// of the values that change are touched, so a tag bump changes one line.
type Editor struct {
	doc *document
}

// Edit opens a manifest file's bytes for editing. name is the repo-relative
// name used in errors. The file must be a valid manifest (problems come back
// as an *ErrorList); of the options only AllowUnknownKeys matters.
func Edit(name string, data []byte, opts ...Option) (*Editor, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("editing %s: %w", name, err)
	}
	if int64(len(data)) > o.maxFileSize {
		return nil, fmt.Errorf("editing %s: file is %d bytes, over the limit of %d bytes", name, len(data), o.maxFileSize)
	}
	f := &file{name: name, data: data}
	c := collector{max: o.maxErrors}
	if err := parse(context.Background(), f, &c, parseRules{o: o}); err != nil {
		return nil, fmt.Errorf("editing %s: %w", name, err)
	}
	f.checkDuplicates(&c)
	if err := c.err(); err != nil {
		return nil, err
	}
	d := &document{file: name, data: append([]byte(nil), data...)}
	if err := d.reparse(); err != nil {
		return nil, err
	}
	return &Editor{doc: d}, nil
}

// Bytes returns the edited file.
func (e *Editor) Bytes() []byte { return append([]byte(nil), e.doc.data...) }

// Changed reports whether any edit changed the bytes.
func (e *Editor) Changed() bool { return e.doc.dirty }

// service returns the object of the service named name.
func (e *Editor) service(name string) (*node, int, error) {
	list := e.doc.root.get("services")
	if list != nil && list.kind == '[' {
		for i, s := range list.elems {
			if n := s.get("name"); n != nil && n.kind == '"' && n.str == name {
				return s, i, nil
			}
		}
	}
	return nil, -1, fmt.Errorf("editing %s: service %q: %w", e.doc.file, name, ErrNotFound)
}

// container returns the object of the service's container whose dockerName
// (defaulted to the service name) is dockerName; "" means the service name.
func (e *Editor) container(service, dockerName string) (svc, ctr *node, idx int, err error) {
	svc, _, err = e.service(service)
	if err != nil {
		return nil, nil, -1, err
	}
	if dockerName == "" {
		dockerName = service
	}
	if list := svc.get("containers"); list != nil && list.kind == '[' {
		for i, c := range list.elems {
			name := service
			if n := c.get("dockerName"); n != nil && n.kind == '"' && n.str != "" {
				name = n.str
			}
			if name == dockerName {
				return svc, c, i, nil
			}
		}
	}
	return nil, nil, -1, fmt.Errorf("editing %s: container %q of service %q: %w", e.doc.file, dockerName, service, ErrNotFound)
}

// Services returns the service names in the file, in order.
func (e *Editor) Services() []string {
	var names []string
	if list := e.doc.root.get("services"); list != nil {
		for _, s := range list.elems {
			if n := s.get("name"); n != nil && n.kind == '"' {
				names = append(names, n.str)
			}
		}
	}
	return names
}

// Container returns the current values of a service's container, with
// DockerName defaulted; dockerName "" means the service name.
func (e *Editor) Container(service, dockerName string) (Container, error) {
	_, c, _, err := e.container(service, dockerName)
	if err != nil {
		return Container{}, err
	}
	out := Container{DockerName: service}
	if n := c.get("dockerName"); n != nil && n.str != "" {
		out.DockerName = n.str
	}
	if n := c.get("dockerTag"); n != nil {
		out.DockerTag = n.str
	}
	if n := c.get("dockerDigest"); n != nil {
		out.DockerDigest = n.str
	}
	return out, nil
}

// SetImage sets the tag and digest of a service's container (dockerName ""
// means the service name). A digest is added after dockerTag when the key is
// absent; an empty digest removes the key.
func (e *Editor) SetImage(service, dockerName, tag, digest string) error {
	if msg := checkTag(tag); msg != "" {
		return fmt.Errorf("editing %s: %s", e.doc.file, msg)
	}
	if digest != "" {
		if msg := checkDigest(digest); msg != "" {
			return fmt.Errorf("editing %s: %s", e.doc.file, msg)
		}
	}
	_, c, _, err := e.container(service, dockerName)
	if err != nil {
		return err
	}
	t := c.get("dockerTag")
	if err := e.doc.splice(t.start, t.end, jsonString(tag)); err != nil {
		return err
	}
	_, c, _, _ = e.container(service, dockerName)
	i := c.index("dockerDigest")
	switch {
	case digest == "" && i >= 0:
		return e.doc.removeMember(c, i)
	case digest == "":
		return nil
	case i >= 0:
		v := c.members[i].val
		return e.doc.splice(v.start, v.end, jsonString(digest))
	}
	return e.doc.insertMember(c, c.index("dockerTag"), "dockerDigest", digest)
}

// AddService appends a service at the end of the file's services list
// (creating the list when absent).
func (e *Editor) AddService(s Service) error {
	if msg := checkName(s.Name); msg != "" {
		return fmt.Errorf("editing %s: %s", e.doc.file, msg)
	}
	if err := checkNew(s); err != nil {
		return fmt.Errorf("editing %s: service %q: %w", e.doc.file, s.Name, err)
	}
	if _, _, err := e.service(s.Name); err == nil {
		return fmt.Errorf("editing %s: service %q: %w", e.doc.file, s.Name, ErrExists)
	}
	list := e.doc.root.get("services")
	if list == nil {
		return e.doc.insertMember(e.doc.root, len(e.doc.root.members)-1, "services", []any{serviceValue(s)})
	}
	return e.doc.appendElem(list, serviceValue(s))
}

// RemoveService removes a service entry from the file.
func (e *Editor) RemoveService(name string) error {
	_, i, err := e.service(name)
	if err != nil {
		return err
	}
	return e.doc.removeElem(e.doc.root.get("services"), i)
}

// AddContainer appends a container to a service (creating its containers
// list when absent). An empty DockerName, or one equal to the service name,
// is left out of the file.
func (e *Editor) AddContainer(service string, c Container) error {
	svc, _, err := e.service(service)
	if err != nil {
		return err
	}
	if err := checkNew(Service{Name: service, Containers: []Container{c}}); err != nil {
		return fmt.Errorf("editing %s: service %q: %w", e.doc.file, service, err)
	}
	if _, _, _, err := e.container(service, c.DockerName); err == nil {
		return fmt.Errorf("editing %s: container %q of service %q: %w", e.doc.file, c.DockerName, service, ErrExists)
	}
	list := svc.get("containers")
	if list == nil {
		return e.doc.insertMember(svc, len(svc.members)-1, "containers", []any{containerValue(service, c)})
	}
	return e.doc.appendElem(list, containerValue(service, c))
}

// RemoveContainer removes a service's container (dockerName "" means the
// service name).
func (e *Editor) RemoveContainer(service, dockerName string) error {
	svc, _, i, err := e.container(service, dockerName)
	if err != nil {
		return err
	}
	return e.doc.removeElem(svc.get("containers"), i)
}

func checkNew(s Service) error {
	if s.Version != "" {
		if msg := checkSemver(s.Version); msg != "" {
			return errors.New(msg)
		}
	}
	for _, c := range s.Containers {
		msg := checkTag(c.DockerTag)
		if msg == "" && c.DockerName != "" {
			msg = checkDockerName(c.DockerName)
		}
		if msg == "" && c.DockerDigest != "" {
			msg = checkDigest(c.DockerDigest)
		}
		if msg != "" {
			return errors.New(msg)
		}
	}
	return nil
}

// SetVersion sets a service's version, adding the key after "name" when it
// is absent; an empty version removes the key.
func (e *Editor) SetVersion(service, version string) error {
	if version != "" {
		if msg := checkSemver(version); msg != "" {
			return fmt.Errorf("editing %s: %s", e.doc.file, msg)
		}
	}
	svc, _, err := e.service(service)
	if err != nil {
		return err
	}
	i := svc.index("version")
	switch {
	case version == "" && i >= 0:
		return e.doc.removeMember(svc, i)
	case version == "":
		return nil
	case i >= 0:
		v := svc.members[i].val
		return e.doc.splice(v.start, v.end, jsonString(version))
	}
	return e.doc.insertMember(svc, svc.index("name"), "version", version)
}

// Service returns a service entry as written in the file: Source is the
// file, and a container's DockerName is "" when the file leaves it out.
func (e *Editor) Service(name string) (Service, error) {
	svc, _, err := e.service(name)
	if err != nil {
		return Service{}, err
	}
	out := Service{Name: name, Source: e.doc.file, Containers: []Container{}}
	if v := svc.get("version"); v != nil {
		out.Version = v.str
	}
	if list := svc.get("containers"); list != nil {
		for _, c := range list.elems {
			var ctr Container
			if n := c.get("dockerName"); n != nil {
				ctr.DockerName = n.str
			}
			if n := c.get("dockerTag"); n != nil {
				ctr.DockerTag = n.str
			}
			if n := c.get("dockerDigest"); n != nil {
				ctr.DockerDigest = n.str
			}
			out.Containers = append(out.Containers, ctr)
		}
	}
	return out, nil
}
