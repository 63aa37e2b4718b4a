package verify

import (
	"reflect"
	"strings"
)

// Keys lists every key a task's properties may hold, as dotted paths (a
// map's keys written <name>), for the documentation's check.
func Keys() []string { return keys("", reflect.TypeFor[properties]()) }

func keys(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Map:
		return []string{prefix + ".<name>"}
	case reflect.Struct:
	default:
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		out = append(out, name)
		out = append(out, keys(name, f.Type)...)
	}
	return out
}
