package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parsed returns the services of a manifest file as the decoder reads them.
func parsed(t *testing.T, data []byte) []Service {
	t.Helper()
	f := &file{name: "m.json", data: data}
	c := collector{max: DefaultMaxErrors}
	o, _ := buildOptions(nil)
	if err := parse(t.Context(), f, &c, parseRules{o: o}); err != nil {
		t.Fatal(err)
	}
	if err := c.err(); err != nil {
		t.Fatalf("invalid: %v\n%s", err, data)
	}
	var out []Service
	for _, e := range f.services {
		out = append(out, e.svc)
	}
	return out
}

// FuzzEdit edits arbitrary valid manifests: every edit must leave a valid
// manifest that differs from the original exactly by the edit.
func FuzzEdit(f *testing.F) {
	f.Add([]byte(prettyDoc), "9.9.9", true)
	f.Add([]byte(rfcExample), "f00", false)
	f.Add([]byte(`{"services":[{"name":"a","containers":[{"dockerTag":"1","dockerDigest":"`+digestA+`"},{"dockerName":"b","dockerTag":"1"}]}]}`), "2", false)
	f.Add([]byte("{\r\n\t\"services\": [ { \"containers\" : [ { \"dockerTag\" : \"1\" } ] , \"name\" : \"x\" } ]\r\n}"), "3", true)
	f.Fuzz(func(t *testing.T, data []byte, tag string, withDigest bool) {
		ed, err := Edit("m.json", data)
		if err != nil || checkTag(tag) != "" {
			return
		}
		before := parsed(t, data)
		var target *Service
		for i := range before {
			if len(before[i].Containers) > 0 {
				target = &before[i]
				break
			}
		}
		if target == nil {
			return
		}
		digest := ""
		if withDigest {
			digest = digestB
		}
		ctr := target.Containers[0].DockerName
		if err := ed.SetImage(target.Name, ctr, tag, digest); err != nil {
			t.Fatalf("SetImage: %v", err)
		}
		target.Containers[0].DockerTag = tag
		target.Containers[0].DockerDigest = digest
		if diff := cmp.Diff(before, parsed(t, ed.Bytes())); diff != "" {
			t.Fatalf("after SetImage (-want +got):\n%s\n%s", diff, ed.Bytes())
		}
		if err := ed.AddContainer(target.Name, Container{DockerName: "zz/fuzz", DockerTag: "1"}); err != nil {
			t.Fatalf("AddContainer: %v", err)
		}
		if err := ed.RemoveContainer(target.Name, "zz/fuzz"); err != nil {
			t.Fatalf("RemoveContainer: %v", err)
		}
		if diff := cmp.Diff(before, parsed(t, ed.Bytes())); diff != "" {
			t.Fatalf("after add+remove (-want +got):\n%s\n%s", diff, ed.Bytes())
		}
	})
}
