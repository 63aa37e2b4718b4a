package manifest

import (
	"context"
	"fmt"
	"strconv"
)

var (
	rootKeys      = []string{"includes", "services", "skipConfirmation"}
	serviceKeys   = []string{"name", "version", "containers"}
	containerKeys = []string{"dockerName", "dockerTag", "dockerDigest"}
)

// decoder reads one manifest file straight into its typed form in a single
// pass, checking syntax, types and the value grammars as it goes.
type decoder struct {
	scanner
	path        pointerPath // where in the file the decoder is
	ctx         context.Context
	f           *file
	c           *collector
	allow       bool          // unknown keys are warnings
	maxServices int           // service entries one file may define
	chain       func() string // the include chain that led to the file, for limit errors; nil outside Resolve
	ctrOffs     []ctrOff      // where the current service's containers start
}

// ctxCheckEvery is how many service entries are decoded between two looks
// at the context.
const ctxCheckEvery = 1024

// limitError aborts the parse of one file that crossed a limit; it is
// reported as is, without "syntax error".
type limitError struct {
	off int
	msg string
}

// ctxError aborts the parse when the context ended.
type ctxError struct{ err error }

// ctrOff locates a parsed container for duplicate reports.
type ctrOff struct{ off, idx int }

// parseRules is what a parse allows and names in its errors.
type parseRules struct {
	o options
	// chain is the include chain that led to the file, for limit errors;
	// nil outside Resolve.
	chain func() string
}

// parse decodes f.data into f, reporting every problem to c. A syntax error
// stops the file; type and value errors do not. It returns ctx's error when
// ctx ended during the parse (f is then broken).
func parse(ctx context.Context, f *file, c *collector, rules parseRules) (err error) {
	d := &decoder{scanner: scanner{data: f.data}, path: make(pointerPath, 0, 8), ctx: ctx, f: f, c: c,
		allow: rules.o.allowUnknownKeys, maxServices: rules.o.maxServices, chain: rules.chain}
	defer func() {
		switch r := recover().(type) {
		case nil:
		case syntaxError:
			d.errAt(r.off, d.path.String(), "syntax error: "+r.msg)
			f.broken = true
		case limitError:
			d.errAt(r.off, d.path.String(), r.msg)
			f.broken = true
		case ctxError:
			f.broken = true
			err = r.err
		default:
			panic(r)
		}
	}()
	if len(d.data) >= 3 && string(d.data[:3]) == "\ufeff" {
		d.fail(0, "byte order mark at the start of the file; save it as UTF-8 without BOM")
	}
	d.ws()
	if d.eof() {
		d.fail(d.i, "empty file, expected a JSON object")
	}
	if d.at(d.i) != '{' {
		d.errAt(d.i, "", "the manifest must be a JSON object, got "+d.describeHere())
		d.skip()
	} else {
		d.root()
	}
	d.ws()
	if !d.eof() {
		d.fail(d.i, "found %s after the end of the manifest object; a manifest holds one JSON object", d.describeHere())
	}
	return nil
}

func (d *decoder) errAt(off int, ptr, msg string) {
	if d.c.full() {
		d.c.omitted++
		return
	}
	line, col := d.f.pos(off)
	d.c.add(Error{File: d.f.name, Line: line, Column: col, Pointer: ptr, Message: msg})
}

// typeErr reports a value of the wrong type at the cursor and skips it.
func (d *decoder) typeErr(want string) {
	off, got := d.i, d.describeHere()
	d.skip() // a syntax error inside the value is reported instead
	d.errAt(off, d.path.String(), fmt.Sprintf("wrong type: expected %s, got %s", want, got))
}

// dupKey reports a key given twice in one object; seen tracks known keys.
func (d *decoder) dupKey(seen *uint8, bit uint8, k string, off int) {
	if *seen&bit != 0 {
		d.errAt(off, d.path.String()+"/"+k, fmt.Sprintf("duplicate key %q in the same object; give each key once", k))
	}
	*seen |= bit
}

// unknown reports an unknown key (an error, or a warning when allowed),
// skips its value and returns the known key an error suggested instead, if
// any. A warning returns "": the value under the unknown key is ignored, so a
// required key it may have meant to give is still missing and must be
// reported as such, or the entry would silently disappear.
func (d *decoder) unknown(off int, k []byte, known []string) (suggested string) {
	key := string(k)
	d.path.push(key)
	msg := "unknown key " + quote(key)
	s := Suggest(key, known)
	if s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	} else {
		msg += "; accepted keys: " + joinKeys(known)
	}
	line, col := d.f.pos(off)
	e := Error{File: d.f.name, Line: line, Column: col, Pointer: d.path.String(), Message: msg}
	if d.allow {
		s = ""
		d.c.warn(e)
	} else {
		d.c.add(e)
	}
	d.skip()
	d.path.pop()
	return s
}

func (d *decoder) root() {
	var seen uint8
	d.object(func(k []byte, off int) {
		switch string(k) {
		case "services":
			d.dupKey(&seen, 1, "services", off)
			d.path.push("services")
			d.services()
			d.path.pop()
		case "includes":
			d.dupKey(&seen, 2, "includes", off)
			d.path.push("includes")
			d.includes()
			d.path.pop()
		case "skipConfirmation":
			d.dupKey(&seen, 4, "skipConfirmation", off)
			d.path.push("skipConfirmation")
			if c := d.at(d.i); c == 't' || c == 'f' {
				d.f.skipOff = d.i
				d.f.hasSkip = true
				d.f.skip = d.boolean()
			} else {
				d.typeErr("a boolean (true or false)")
			}
			d.path.pop()
		default:
			d.unknown(off, k, rootKeys)
		}
	})
}

// object walks the members of the JSON object at the cursor (its '{'
// already checked), calling member with each key and the key's offset while
// the cursor is on the member's value.
func (d *decoder) object(member func(k []byte, off int)) {
	if d.open('}') {
		return
	}
	for {
		d.ws()
		off := d.i
		k := d.key()
		member(k, off)
		if !d.next('}') {
			break
		}
	}
	d.nest--
}

// array walks the JSON array at the cursor, calling elem with the cursor on
// each element and its index pushed on the pointer; any other value is a type
// error naming want.
func (d *decoder) array(want string, elem func(n int)) {
	if d.at(d.i) != '[' {
		d.typeErr(want)
		return
	}
	if d.open(']') {
		return
	}
	for n := 0; ; n++ {
		d.ws()
		d.path.pushIdx(n)
		elem(n)
		d.path.pop()
		if !d.next(']') {
			break
		}
	}
	d.nest--
}

func (d *decoder) includes() {
	d.array("an array of relative file paths", func(n int) {
		if d.peek("a value") != '"' {
			d.typeErr("a relative file path string")
			return
		}
		off := d.i
		d.f.includes = append(d.f.includes, include{path: d.str(), off: off, idx: n})
	})
}

func (d *decoder) services() {
	d.array("an array of service objects", func(n int) {
		if d.peek("a value") != '{' {
			d.typeErr("a service object")
			return
		}
		if d.f.services == nil {
			d.f.services = make([]entry, 0, 32)
		}
		if n%ctxCheckEvery == ctxCheckEvery-1 {
			if err := d.ctx.Err(); err != nil {
				panic(ctxError{err})
			}
		}
		if len(d.f.services) >= d.maxServices {
			msg := fmt.Sprintf("this file defines more than %d service entries, the limit per environment", d.maxServices)
			if d.chain != nil {
				msg += "; include chain: " + d.chain()
			}
			panic(limitError{off: d.i, msg: msg})
		}
		d.service(n)
	})
}

func (d *decoder) service(n int) {
	e := entry{off: d.i, nameOff: -1, idx: n}
	hasName, nameKey := false, false
	d.ctrOffs = d.ctrOffs[:0]
	var seen uint8
	d.object(func(k []byte, off int) {
		switch string(k) {
		case "name":
			d.dupKey(&seen, 1, "name", off)
			nameKey = true
			if v, voff, ok := d.stringField("name", "a string", checkName); ok {
				e.svc.Name, e.nameOff, hasName = v, voff, true
			}
		case "version":
			d.dupKey(&seen, 2, "version", off)
			e.svc.Version, _, _ = d.stringField("version", `a SemVer string such as "1.2.3"`, checkSemver)
		case "containers":
			d.dupKey(&seen, 4, "containers", off)
			d.path.push("containers")
			d.containers(&e.svc)
			d.path.pop()
		default:
			if d.unknown(off, k, serviceKeys) == "name" {
				nameKey = true // reported as a misspelling
			}
		}
	})
	if !hasName {
		if !nameKey {
			d.errAt(e.off, d.path.String(), "service has no \"name\"; every service needs one")
		}
		return
	}
	for i := range e.svc.Containers {
		if e.svc.Containers[i].DockerName == "" {
			e.svc.Containers[i].DockerName = e.svc.Name
		}
	}
	if len(e.svc.Containers) > 1 {
		d.dupContainers(&e)
	}
	if e.svc.Containers == nil {
		e.svc.Containers = []Container{}
	}
	d.f.services = append(d.f.services, e)
}

// dupContainers reports two containers of one service with the same
// (defaulted) dockerName, in time linear in the number of containers.
func (d *decoder) dupContainers(e *entry) {
	cs := e.svc.Containers
	first := make(map[string]int, len(cs))
	for i := range cs {
		j, dup := first[cs[i].DockerName]
		if !dup {
			first[cs[i].DockerName] = i
			continue
		}
		at := d.ctrOffs[i]
		d.errAt(at.off, d.path.String()+"/containers/"+strconv.Itoa(at.idx),
			fmt.Sprintf("service %q has two containers with dockerName %q (containers %d and %d); each container needs its own dockerName",
				e.svc.Name, cs[i].DockerName, d.ctrOffs[j].idx, at.idx))
	}
}

func (d *decoder) containers(s *Service) {
	d.array("an array of container objects", func(n int) {
		if d.peek("a value") != '{' {
			d.typeErr("a container object")
			return
		}
		off := d.i
		if c, ok := d.container(); ok {
			s.Containers = append(s.Containers, c)
			d.ctrOffs = append(d.ctrOffs, ctrOff{off: off, idx: n})
		}
	})
}

func (d *decoder) container() (Container, bool) {
	var c Container
	start := d.i
	hasTag, misspelt := false, false
	var seen uint8
	d.object(func(k []byte, off int) {
		switch string(k) {
		case "dockerName":
			d.dupKey(&seen, 1, "dockerName", off)
			c.DockerName, _, _ = d.stringField("dockerName", "a string", checkDockerName)
		case "dockerTag":
			d.dupKey(&seen, 2, "dockerTag", off)
			hasTag = true
			c.DockerTag, _, _ = d.stringField("dockerTag", "a string", checkTag)
		case "dockerDigest":
			d.dupKey(&seen, 4, "dockerDigest", off)
			c.DockerDigest, _, _ = d.stringField("dockerDigest", "a string", checkDigest)
		default:
			if d.unknown(off, k, containerKeys) == "dockerTag" {
				misspelt = true
			}
		}
	})
	if !hasTag {
		if !misspelt {
			d.errAt(start, d.path.String(), "container has no \"dockerTag\"; every container needs the tag to deploy")
		}
		return c, false
	}
	if c.DockerTag == "" {
		return c, false // wrong type, already reported
	}
	return c, true
}

// stringField reads the string value of member key at the cursor and checks
// it with check, reporting a value of another type as not being want. It
// returns the value, its offset, and whether it was a string.
func (d *decoder) stringField(key, want string, check func(string) string) (v string, off int, ok bool) {
	d.path.push(key) // not popped by a defer: a syntax error panics, and its report needs the pointer
	if d.at(d.i) != '"' {
		d.typeErr(want)
		d.path.pop()
		return "", 0, false
	}
	off = d.i
	v = d.str()
	if msg := check(v); msg != "" {
		d.errAt(off, d.path.String(), msg)
	}
	d.path.pop()
	return v, off, true
}
