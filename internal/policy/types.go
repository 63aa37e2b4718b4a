package policy

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The CEL types of the variables. They are declared by hand rather than through reflection, and each
// value is made a CEL value once per decision (a record of its fields' values): a rule reads a field of
// each of 500 changes, 20 rules a decision, and reading a record's field is an index where reflection
// costs microseconds and an allocation.
var (
	planT     = types.NewObjectType("stagehand.Plan")
	changeT   = types.NewObjectType("stagehand.Change")
	imageT    = types.NewObjectType("stagehand.Image")
	revisionT = types.NewObjectType("stagehand.Revision")
	deployT   = types.NewObjectType("stagehand.Deploy")
	lockT     = types.NewObjectType("stagehand.Lock")
	stringsT  = types.NewListType(types.StringType)
	trailersT = types.NewMapType(types.StringType, stringsT)
)

// field is one field of a declared type: its name, CEL type, and its CEL value made from the Go value
// in a decision's arena.
type field struct {
	name string
	typ  *types.Type
	val  func(a *arena, v any) ref.Val
}

func str(get func(v any) string) func(*arena, any) ref.Val {
	return func(_ *arena, v any) ref.Val { return types.String(get(v)) }
}

func strs(get func(v any) []string) func(*arena, any) ref.Val {
	return func(a *arena, v any) ref.Val { return types.NewStringList(a.p, get(v)) }
}

// structs are the declared types' fields in order, by type name. It is set once by init (its fields'
// values refer to record, which reads it) and never changed.
var structs map[string][]field

func init() { structs = declared() }

func declared() map[string][]field {
	return map[string][]field{
		planT.TypeName(): {
			{"environment", types.StringType, str(func(v any) string { return v.(*Plan).Environment })},
			{"changes", types.NewListType(changeT), func(a *arena, v any) ref.Val { return changeList(a, v.(*Plan).Changes) }},
			{"services", stringsT, strs(func(v any) []string { return v.(*Plan).Services })},
		},
		changeT.TypeName(): {
			{"service", types.StringType, str(func(v any) string { return v.(*Change).Service })},
			{"target", types.StringType, str(func(v any) string { return v.(*Change).Target })},
			{"workload", types.StringType, str(func(v any) string { return v.(*Change).Workload })},
			{"container", types.StringType, str(func(v any) string { return v.(*Change).Container })},
			{"from", imageT, func(a *arena, v any) ref.Val { return a.record(imageT, &v.(*Change).From) }},
			{"to", imageT, func(a *arena, v any) ref.Val { return a.record(imageT, &v.(*Change).To) }},
		},
		imageT.TypeName(): {
			{"image", types.StringType, str(func(v any) string { return v.(*Image).Image })},
			{"repository", types.StringType, str(func(v any) string { return v.(*Image).Repository })},
			{"tag", types.StringType, str(func(v any) string { return v.(*Image).Tag })},
			{"digest", types.StringType, str(func(v any) string { return v.(*Image).Digest })},
		},
		revisionT.TypeName(): {
			{"sha", types.StringType, str(func(v any) string { return v.(*Revision).SHA })},
			{"authors", stringsT, strs(func(v any) []string { return v.(*Revision).Authors })},
			{"files", stringsT, strs(func(v any) []string { return v.(*Revision).Files })},
			{"trailers", trailersT, func(a *arena, v any) ref.Val { return trailerMap(a.p, v.(*Revision).Trailers) }},
		},
		deployT.TypeName(): {
			{"revision", types.StringType, str(func(v any) string { return v.(*Deploy).Revision })},
			{"result", types.StringType, str(func(v any) string { return v.(*Deploy).Result })},
			{"services", stringsT, strs(func(v any) []string { return v.(*Deploy).Services })},
			{"finished", types.TimestampType, func(_ *arena, v any) ref.Val { return types.Timestamp{Time: v.(*Deploy).Finished} }},
		},
		lockT.TypeName(): {
			{"service", types.StringType, str(func(v any) string { return v.(*Lock).Service })},
			{"author", types.StringType, str(func(v any) string { return v.(*Lock).Author })},
			{"type", types.StringType, str(func(v any) string { return v.(*Lock).Type })},
		},
	}
}

// trailerMap is revision.trailers: a map of string lists.
func trailerMap(p *provider, m map[string][]string) ref.Val {
	out := make(map[ref.Val]ref.Val, len(m))
	for k, vs := range m {
		out[types.String(k)] = types.NewStringList(p, vs)
	}
	return types.NewRefValMap(p, out)
}

// provider declares the types of structs over an empty registry.
type provider struct {
	*types.Registry
	// shapes are the declared types' shapes, by type name.
	shapes map[string]*shape
}

func newProvider() *provider {
	p := &provider{Registry: types.NewEmptyRegistry(), shapes: map[string]*shape{}}
	for name, fs := range structs {
		p.shapes[name] = &shape{typ: types.NewObjectType(name), fs: fs}
	}
	return p
}

// shape is what the records of one declared type share: the type and its fields.
type shape struct {
	typ *types.Type
	fs  []field
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := structs[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p *provider) FindStructFieldNames(name string) ([]string, bool) {
	if fs, ok := structs[name]; ok {
		names := make([]string, len(fs))
		for i, f := range fs {
			names[i] = f.name
		}
		slices.Sort(names)
		return names, true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p *provider) FindStructFieldType(name, fieldName string) (*types.FieldType, bool) {
	fs, ok := structs[name]
	if !ok {
		return p.Registry.FindStructFieldType(name, fieldName)
	}
	i := slices.IndexFunc(fs, func(f field) bool { return f.name == fieldName })
	if i < 0 {
		return nil, false
	}
	return &types.FieldType{Type: fs[i].typ, IsSet: func(any) bool { return true },
		GetFrom: func(obj any) (any, error) {
			r, ok := obj.(*record)
			if !ok {
				return nil, fmt.Errorf("reading field %s of %s: not a %s", fieldName, reflect.TypeOf(obj), name)
			}
			return r.get(i), nil
		}}, true
}

// NewValue refuses to build the declared types: rules read values, they make none.
func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := structs[name]; ok {
		return types.NewErr("%s cannot be constructed in a rule", name)
	}
	return p.Registry.NewValue(name, fields)
}

// NativeToValue passes CEL values through; anything else as CEL adapts it.
func (p *provider) NativeToValue(v any) ref.Val {
	if rv, ok := v.(ref.Val); ok {
		return rv
	}
	return p.Registry.NativeToValue(v)
}

// record is a value of a declared type: its Go pointer and its fields' CEL values in declared order,
// each made when a rule first reads it (a rule reads a field or two of 500 changes; making every field's
// value of every change for each decision cost more than the rules). A record belongs to one decision's
// activation, read by one rule at a time, and lives in its arena.
type record struct {
	*shape
	a      *arena
	v      any
	fields []ref.Val
}

// get is the value of field i, made on its first read.
func (r *record) get(i int) ref.Val {
	if r.fields[i] == nil {
		r.fields[i] = r.fs[i].val(r.a, r.v)
	}
	return r.fields[i]
}

// record makes the CEL value of v, a pointer to a value of the declared type t.
func (a *arena) record(t *types.Type, v any) ref.Val {
	sh := a.p.shapes[t.TypeName()]
	r := &a.records(1)[0]
	*r = record{shape: sh, a: a, v: v, fields: a.values(len(sh.fs))}
	return obj{r}
}

// list makes the CEL list of a slice of values of the declared type t: its records and their fields'
// room taken from the arena in one piece each.
func list[T any](a *arena, t *types.Type, s []T) ref.Val {
	sh := a.p.shapes[t.TypeName()]
	n := len(sh.fs)
	recs, vals, room := a.records(len(s)), a.values(len(s)), a.values(len(s)*n)
	for i := range s {
		recs[i] = record{shape: sh, a: a, v: &s[i], fields: room[i*n : (i+1)*n : (i+1)*n]}
		vals[i] = obj{&recs[i]}
	}
	return newRecords(a.p, vals)
}

// changeList is list for plan.changes, with the records of each change's from and to images made in
// the same pieces (a rule reading c.to.tag of 500 changes would otherwise make 1000 records and their
// room one by one).
func changeList(a *arena, s []Change) ref.Val {
	cs, is := a.p.shapes[changeT.TypeName()], a.p.shapes[imageT.TypeName()]
	n, m := len(cs.fs), len(is.fs)
	recs, imgs, vals := a.records(len(s)), a.records(2*len(s)), a.values(len(s))
	room, imgRoom := a.values(len(s)*n), a.values(2*len(s)*m)
	from, to := fieldIndex(changeT, "from"), fieldIndex(changeT, "to")
	for i := range s {
		c := &s[i]
		recs[i] = record{shape: cs, a: a, v: c, fields: room[i*n : (i+1)*n : (i+1)*n]}
		for j, img := range []*Image{&c.From, &c.To} {
			k := 2*i + j
			imgs[k] = record{shape: is, a: a, v: img, fields: imgRoom[k*m : (k+1)*m : (k+1)*m]}
		}
		recs[i].fields[from], recs[i].fields[to] = obj{&imgs[2*i]}, obj{&imgs[2*i+1]}
		vals[i] = obj{&recs[i]}
	}
	return newRecords(a.p, vals)
}

// fieldIndex is the index of the field name among the declared type t's.
func fieldIndex(t *types.Type, name string) int {
	return slices.IndexFunc(structs[t.TypeName()], func(f field) bool { return f.name == name })
}

// records is a CEL list of records. It is CEL's own list over the same values, but hands its elements
// out as they are: CEL's iterator boxes every index (an allocation past 255) and adapts every element it
// reads, in each rule's scan of 500 changes.
type records struct {
	traits.Lister
	vals []ref.Val
}

func newRecords(p *provider, vals []ref.Val) records {
	return records{Lister: types.NewRefValList(p, vals).(traits.Lister), vals: vals}
}

// Get is element i.
func (l records) Get(i ref.Val) ref.Val {
	if n, ok := i.(types.Int); ok && n >= 0 && int64(n) < int64(len(l.vals)) {
		return l.vals[n]
	}
	return l.Lister.Get(i)
}

// Iterator walks the elements in order.
func (l records) Iterator() traits.Iterator { return &recordIterator{vals: l.vals} }

// recordIterator is an iterator over records: an iterator is a CEL value only to be passed around.
type recordIterator struct {
	vals []ref.Val
	next int
}

func (it *recordIterator) HasNext() ref.Val { return types.Bool(it.next < len(it.vals)) }

func (it *recordIterator) Next() ref.Val {
	if it.next >= len(it.vals) {
		return nil
	}
	it.next++
	return it.vals[it.next-1]
}

func (*recordIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("type conversion on iterators not supported")
}

func (*recordIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }

func (*recordIterator) Equal(ref.Val) ref.Val { return types.NewErr("no such overload") }

func (*recordIterator) Type() ref.Type { return types.IteratorType }

func (*recordIterator) Value() any { return nil }

// obj is a record as a CEL value.
type obj struct{ *record }

func (o obj) ConvertToNative(t reflect.Type) (any, error) {
	if reflect.TypeOf(o.v).AssignableTo(t) {
		return o.v, nil
	}
	return nil, fmt.Errorf("%s cannot be converted to %v", o.typ, t)
}

func (o obj) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return o.typ
	}
	if t.TypeName() == o.typ.TypeName() {
		return o
	}
	return types.NewErr("type conversion error from %s to %s", o.typ, t)
}

func (o obj) Equal(other ref.Val) ref.Val {
	x, ok := other.(obj)
	if !ok || x.typ.TypeName() != o.typ.TypeName() {
		return types.False
	}
	return types.Bool(reflect.DeepEqual(o.v, x.v))
}

func (o obj) Type() ref.Type { return o.typ }

// Value is the record, which the fields' getters read.
func (o obj) Value() any { return o.record }
