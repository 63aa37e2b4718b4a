package docs_test

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestConfigurationDocumented checks docs/configuration.md against the code
// in both directions: a key the code reads without a table row fails, and
// so does a row for a key that no longer exists.
func TestConfigurationDocumented(t *testing.T) {
	b, err := os.ReadFile("reference/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		section string // the "## " heading of the file's part of the document
		keys    []string
	}{
		{"reconciler.yaml", jsonKeys("", reflect.TypeFor[config.Config]())},
		{"pipeline.yaml", promote.Keys()},
		{"prbot.yaml", jsonKeys("", reflect.TypeFor[config.Prbot]())},
		{"verification tasks", verify.Keys()},
	} {
		t.Run(tc.section, func(t *testing.T) {
			rows := documented(string(b), tc.section)
			if len(rows) == 0 {
				t.Fatalf("configuration.md has no section %q with key rows", "## "+tc.section)
			}
			want := sorted(tc.keys)
			if diff := cmp.Diff(want, sorted(rows)); diff != "" {
				t.Errorf("docs/configuration.md, section %s: key rows differ from the code (-code +docs); "+
					"add a row | `key` | type | default | example | what it does | for every key:\n%s", tc.section, diff)
			}
		})
	}
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// keyed is a mapping that also accepts a scalar shorthand (server.ui: false):
// its keys are documented one by one all the same.
var keyed = reflect.TypeFor[interface{ DocumentedKeys() }]()

// jsonKeys lists the keys of t's JSON form under prefix: a map's keys are
// written <name>, a list's elements [].
func jsonKeys(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) && !t.Implements(keyed) { // a scalar in YAML, such as config.Duration
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return jsonKeys(prefix+".<name>", t.Elem())
	case reflect.Slice:
		return jsonKeys(prefix+"[]", t.Elem())
	case reflect.Struct:
	default:
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		out = append(out, key)
		out = append(out, jsonKeys(key, f.Type)...)
	}
	return out
}

var keyRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// documented returns the keys of the table rows in the "## section" part
// of doc.
func documented(doc, section string) []string {
	var keys []string
	in := false
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == section
			continue
		}
		if m := keyRow.FindStringSubmatch(line); in && m != nil {
			keys = append(keys, m[1])
		}
	}
	return keys
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}
