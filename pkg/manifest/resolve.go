package manifest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// maxLinkHops bounds symbolic link resolution (as the kernel does).
const maxLinkHops = 40

// Environments lists the environments under <root>/environments: every
// directory holding a manifest.json, sorted by name.
func Environments(fsys fs.FS, root string) ([]string, error) {
	root = path.Clean(root)
	if !fs.ValidPath(root) {
		return nil, fmt.Errorf("listing environments: invalid root %q: must be a relative slash-separated path inside the repository", root)
	}
	dir := path.Join(root, "environments")
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("listing environments in %s: %w", dir, err)
	}
	var envs []string
	for _, e := range ents {
		fi, err := fs.Stat(fsys, path.Join(dir, e.Name(), "manifest.json"))
		if err == nil && fi.Mode().IsRegular() {
			envs = append(envs, e.Name())
		}
	}
	return envs, nil
}

// Repo is where the manifests are: Root, a relative slash-separated path,
// within FS (a checkout, a git tree, a snapshot of pkg/gitsource).
type Repo struct {
	FS   fs.FS
	Root string // "." for the repository's top
}

// Resolve reads <Root>/environments/<env>/manifest.json and its includes
// from repo's FS and returns the environment's effective services. Problems
// in the files are returned together as an *ErrorList; other errors (bad
// arguments or options, ctx ending) are plain. Resolve stops when ctx ends
// and returns an error wrapping ctx.Err().
func Resolve(ctx context.Context, repo Repo, env string, opts ...Option) (*Environment, error) {
	fsys, root := repo.FS, repo.Root
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("resolving environment %q: %w", env, err)
	}
	root = path.Clean(root)
	if !fs.ValidPath(root) {
		return nil, fmt.Errorf("resolving environment %q: invalid root %q: must be a relative slash-separated path inside the repository", env, root)
	}
	if env == "" || env == "." || env == ".." || strings.ContainsAny(env, `/\`) {
		return nil, fmt.Errorf("resolving environment %q: invalid name: must be one directory name under environments/", env)
	}
	r := &resolver{
		ctx:   ctx,
		fsys:  fsys,
		o:     o,
		c:     collector{max: o.maxErrors},
		files: make(map[string]*loaded),
		seq:   make([]ref, 0, 1024),
		marks: make([]mark, 0, 1024),
		real:  make(map[string]string),
	}
	_, r.links = fsys.(fs.ReadLinkFS)
	name := path.Join(root, "environments", env, "manifest.json")
	lay := r.visit(name, nil, include{}, 0)
	if r.stopped != nil {
		return nil, fmt.Errorf("resolving environment %q: stopped after reading %d files: %w", env, len(r.files), r.stopped)
	}
	if err := r.c.err(); err != nil {
		return nil, err
	}
	e := r.finish(lay)
	e.Name = env
	e.Root = lay.File
	return e, nil
}

// loaded is the outcome of reading and parsing one file.
type loaded struct {
	f   *file
	err string // why it could not be read
}

type resolver struct {
	ctx     context.Context
	stopped error // ctx's error once it ended
	fsys    fs.FS
	o       options
	c       collector
	links   bool               // fsys can tell symbolic links
	files   map[string]*loaded // by real path
	real    map[string]string  // link-free paths of checked prefixes
	stack   []string           // real paths of the current include chain
	spent   budget             // work done so far, against o's limits
	over    bool               // a budget was crossed: nothing more is read
	seq     []ref              // every service entry in effective order, overrides included
	marks   []mark
	root    *file
}

// ref is an entry in the effective sequence.
type ref struct {
	f *file
	e *entry
}

// mark ties a layout service to its entry so overrides can be flagged.
type mark struct {
	l *Layout
	i int
	r ref
}

// site is where an include was written, for errors about it.
func (r *resolver) siteErr(from *file, inc include, msg string) {
	if from == nil {
		r.c.add(Error{File: inc.path, Message: msg})
		return
	}
	line, col := from.pos(inc.off)
	r.c.add(Error{File: from.name, Line: line, Column: col, Pointer: "/includes/" + strconv.Itoa(inc.idx), Message: msg})
}

// visit resolves name (already joined and cleaned), included from the file
// from at inc (from is nil for the root manifest), and returns its layout
// node, or nil when it could not be read.
func (r *resolver) visit(name string, from *file, inc include, depth int) *Layout {
	if from == nil {
		inc.path = name
	}
	if r.halted() {
		return nil
	}
	if depth > r.o.maxDepth {
		r.siteErr(from, inc, fmt.Sprintf("include %s nests deeper than the limit of %d levels", quote(inc.path), r.o.maxDepth))
		return nil
	}
	if r.spent.includes++; r.spent.includes > r.o.maxIncludes {
		r.overBudget(from, inc, name, fmt.Sprintf("goes over the limit of %d includes per environment (a file counts once per place that includes it)", r.o.maxIncludes))
		return nil
	}
	real, err := r.realPath(name)
	if err != nil {
		if from == nil {
			r.c.add(Error{File: name, Message: err.Error()})
		} else {
			r.siteErr(from, inc, fmt.Sprintf("include %s: %v", quote(inc.path), err))
		}
		return nil
	}
	for i, s := range r.stack {
		if s == real {
			chain := append(append([]string{}, r.stack[i:]...), real)
			r.siteErr(from, inc, "include cycle: "+strings.Join(chain, " → "))
			return nil
		}
	}
	ld := r.load(real, from, inc)
	if r.halted() {
		return nil
	}
	if ld.err != "" {
		if from == nil {
			r.c.add(Error{File: real, Message: "reading the environment's manifest: " + ld.err})
		} else {
			r.siteErr(from, inc, fmt.Sprintf("include %s: %s: %s", quote(inc.path), clip(real), ld.err))
		}
		return nil
	}
	f := ld.f
	if f.broken {
		return nil // its syntax error is reported; what was read is not trusted
	}
	if from == nil {
		r.root = f
	} else if f.hasSkip && !f.warned {
		f.warned = true
		line, col := f.pos(f.skipOff)
		r.c.warn(Error{File: f.name, Line: line, Column: col, Pointer: "/skipConfirmation",
			Message: "skipConfirmation is ignored in an included file; only the environment's manifest.json decides"})
	}
	if r.spent.services += len(f.services); r.spent.services > r.o.maxServices {
		r.overBudget(from, inc, real, fmt.Sprintf("brings the environment to %d service entries, over the limit of %d (a file's services count once per place that includes it)", r.spent.services, r.o.maxServices))
		return nil
	}
	lay := &Layout{File: f.name, Owner: Owner(f.name), Services: make([]LayoutService, 0, len(f.services)), Includes: make([]*Layout, 0, len(f.includes))}
	r.stack = append(r.stack, real)
	dir := path.Dir(f.name)
	for _, in := range f.includes {
		target, msg := includeTarget(dir, in.path)
		if msg != "" {
			r.siteErr(f, in, msg)
			continue
		}
		if child := r.visit(target, f, in, depth+1); child != nil {
			lay.Includes = append(lay.Includes, child)
		}
	}
	r.stack = r.stack[:len(r.stack)-1]
	for i := range f.services {
		rf := ref{f: f, e: &f.services[i]}
		r.seq = append(r.seq, rf)
		r.marks = append(r.marks, mark{l: lay, i: len(lay.Services), r: rf})
		lay.Services = append(lay.Services, LayoutService{Name: f.services[i].svc.Name})
	}
	return lay
}

// includeTarget joins an include path to the including file's directory,
// refusing absolute paths and paths that leave the repository.
func includeTarget(dir, p string) (string, string) {
	switch {
	case p == "":
		return "", "empty include path; expected a path relative to this file such as \"./other.json\""
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return "", fmt.Sprintf("include %s is an absolute path; includes must be relative to the including file", quote(p))
	case strings.Contains(p, `\`):
		return "", fmt.Sprintf("include %s contains a backslash; use '/' to separate directories", quote(p))
	}
	t := path.Join(dir, p)
	if t == ".." || strings.HasPrefix(t, "../") {
		return "", fmt.Sprintf("include %s leaves the repository (resolves to %s); includes must stay inside it", quote(p), quote(t))
	}
	return t, ""
}

var errOutside = errors.New("symbolic link points outside the repository")

// realPath resolves the symbolic links in name, component by component, and
// fails when one points outside the repository. Missing files are returned
// as they are, for load to report.
func (r *resolver) realPath(name string) (string, error) {
	if !r.links {
		return name, nil
	}
	done, rest, hops := "", name, 0
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, "/")
		if comp == "" || comp == "." {
			continue
		}
		next := comp
		if done != "" {
			next = done + "/" + comp
		}
		if v, ok := r.real[next]; ok {
			done = v
			continue
		}
		fi, err := fs.Lstat(r.fsys, next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if rest != "" {
					next += "/" + rest
				}
				return next, nil
			}
			return "", fmt.Errorf("checking %s: %w", next, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			r.real[next] = next
			done = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("%s: too many levels of symbolic links", name)
		}
		target, err := fs.ReadLink(r.fsys, next)
		if err != nil {
			return "", fmt.Errorf("reading symbolic link %s: %w", next, err)
		}
		if path.IsAbs(target) || strings.HasPrefix(target, `\`) || (len(target) > 1 && target[1] == ':') {
			return "", fmt.Errorf("%s -> %s: %w", next, target, errOutside)
		}
		t := path.Join(path.Dir(next), target)
		if t == ".." || strings.HasPrefix(t, "../") {
			return "", fmt.Errorf("%s -> %s: %w", next, target, errOutside)
		}
		if rest != "" {
			t += "/" + rest
		}
		done, rest = "", t
	}
	if done == "" {
		return ".", nil
	}
	return done, nil
}

// load reads and parses the file at the link-free path name once, checking
// the file and byte budgets before reading it. Only regular files are read:
// a FIFO, device or socket is refused from its mode, before any open.
func (r *resolver) load(name string, from *file, inc include) *loaded {
	if ld, ok := r.files[name]; ok {
		return ld
	}
	ld := &loaded{}
	r.files[name] = ld
	fi, err := fs.Stat(r.fsys, name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ld.err = "file does not exist"
	case err != nil:
		ld.err = err.Error()
	case fi.IsDir():
		ld.err = "is a directory, not a manifest file"
	case !fi.Mode().IsRegular():
		ld.err = "is " + fileKind(fi.Mode()) + ", not a regular file; only regular files may be included"
	case fi.Size() > r.o.maxFileSize:
		ld.err = fmt.Sprintf("file is %d bytes, over the limit of %d bytes", fi.Size(), r.o.maxFileSize)
	}
	if ld.err != "" {
		return ld
	}
	if len(r.files) > r.o.maxFiles {
		r.overBudget(from, inc, name, fmt.Sprintf("goes over the limit of %d distinct files per environment", r.o.maxFiles))
		return ld
	}
	if r.spent.bytes+fi.Size() > r.o.maxBytes {
		r.overBudget(from, inc, name, fmt.Sprintf("brings the environment to %d bytes read, over the limit of %d bytes", r.spent.bytes+fi.Size(), r.o.maxBytes))
		return ld
	}
	data, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		ld.err = err.Error()
		return ld
	}
	if int64(len(data)) > r.o.maxFileSize {
		ld.err = fmt.Sprintf("file is %d bytes, over the limit of %d bytes", len(data), r.o.maxFileSize)
		return ld
	}
	if r.spent.bytes += int64(len(data)); r.spent.bytes > r.o.maxBytes {
		r.overBudget(from, inc, name, fmt.Sprintf("brings the environment to %d bytes read, over the limit of %d bytes", r.spent.bytes, r.o.maxBytes))
		return ld
	}
	ld.f = &file{name: name, data: data}
	chain := func() string { return strings.Join(append(append([]string{}, r.stack...), name), " → ") }
	if err := parse(r.ctx, ld.f, &r.c, parseRules{o: r.o, chain: chain}); err != nil {
		r.stopped = err
		return ld
	}
	ld.f.checkDuplicates(&r.c)
	return ld
}

// checkDuplicates reports service names given twice in one file and keeps
// only the first entry.
func (f *file) checkDuplicates(c *collector) {
	if len(f.services) < 2 {
		return
	}
	kept := f.services[:0]
	var first map[string]int // for long files; short ones compare pairwise
	if len(f.services) > 32 {
		first = make(map[string]int, len(f.services))
	}
	for _, e := range f.services {
		i, dup := -1, false
		if first != nil {
			if i, dup = first[e.svc.Name]; !dup {
				first[e.svc.Name] = len(kept)
			}
		} else {
			for j := range kept {
				if kept[j].svc.Name == e.svc.Name {
					i, dup = j, true
					break
				}
			}
		}
		if dup {
			line, col := f.pos(e.nameOff)
			fl, fc := f.pos(kept[i].nameOff)
			c.add(Error{File: f.name, Line: line, Column: col, Pointer: "/services/" + strconv.Itoa(e.idx) + "/name",
				Message: fmt.Sprintf("service %q is defined twice in this file (first at line %d, column %d); a file may define a service once", e.svc.Name, fl, fc)})
			continue
		}
		kept = append(kept, e)
	}
	f.services = kept
}

// finish turns the effective sequence into the environment.
func (r *resolver) finish(lay *Layout) *Environment {
	last := make(map[string]int, len(r.seq))
	for i, rf := range r.seq {
		last[rf.e.svc.Name] = i
	}
	env := &Environment{
		SkipConfirmation: r.root.skip,
		Services:         make([]Service, 0, len(last)),
		Overrides:        []Override{},
		Warnings:         r.c.warnings,
		Layout:           lay,
	}
	if env.Warnings == nil {
		env.Warnings = []Error{}
	}
	for i, rf := range r.seq {
		w := last[rf.e.svc.Name]
		if w == i {
			s := rf.e.svc
			s.Source = rf.f.name
			env.Services = append(env.Services, s)
			continue
		}
		if win := r.seq[w]; win.e != rf.e {
			env.Overrides = append(env.Overrides, Override{Service: rf.e.svc.Name, Winner: win.location(), Shadowed: rf.location()})
		}
	}
	for _, m := range r.marks {
		ls := &m.l.Services[m.i]
		ls.Line, ls.Column = m.r.f.entryPos(m.r.e)
		ls.Pointer = "/services/" + strconv.Itoa(m.r.e.idx)
		if win := r.seq[last[m.r.e.svc.Name]]; win.e != m.r.e {
			ls.Overridden = true
			ls.OverriddenBy = win.f.name
		}
	}
	return env
}

func (rf ref) location() Location {
	line, col := rf.f.entryPos(rf.e)
	return Location{File: rf.f.name, Line: line, Column: col, Pointer: "/services/" + strconv.Itoa(rf.e.idx)}
}
