package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// benchRepo builds a manifests repository of 500 files holding 10,000
// services: the root manifest includes 4 files, each of those 4 more, each of
// those 4 more, and those the remaining 415 (include depth 4). Every file
// defines 20 services, pretty-printed as people write them; one service in 20
// overrides one from an earlier file.
func benchRepo(tb testing.TB) (fstest.MapFS, [][]byte) {
	tb.Helper()
	const files, perFile = 500, 20
	names := make([]string, files)
	names[0] = "environments/prod/manifest.json"
	for i := 1; i < files; i++ {
		names[i] = fmt.Sprintf("environments/prod/repo-%03d.json", i)
	}
	// Level sizes 1, 4, 16, 64, 415: children of file i at level L are a
	// contiguous run of the next level.
	levels := [][2]int{{0, 1}, {1, 5}, {5, 21}, {21, 85}, {85, files}}
	children := make([][]int, files)
	for l := 0; l+1 < len(levels); l++ {
		parents := levels[l][1] - levels[l][0]
		kids := levels[l+1][1] - levels[l+1][0]
		for k := 0; k < kids; k++ {
			p := levels[l][0] + k*parents/kids
			children[p] = append(children[p], levels[l+1][0]+k)
		}
	}
	fsys := fstest.MapFS{}
	var all [][]byte
	svc := 0
	for i := 0; i < files; i++ {
		var b strings.Builder
		b.WriteString("{\n")
		if len(children[i]) > 0 {
			b.WriteString("  \"includes\": [\n")
			for j, c := range children[i] {
				sep := ","
				if j == len(children[i])-1 {
					sep = ""
				}
				fmt.Fprintf(&b, "    \"./repo-%03d.json\"%s\n", c, sep)
			}
			b.WriteString("  ],\n")
		}
		b.WriteString("  \"services\": [\n")
		for j := 0; j < perFile; j++ {
			name := fmt.Sprintf("service-%05d", svc)
			if j == 7 && svc > 1000 {
				name = fmt.Sprintf("service-%05d", svc-1000) // an override
			}
			svc++
			fmt.Fprintf(&b, "    {\n      \"name\": %q,\n      \"version\": \"1.%d.%d\",\n      \"containers\": [\n", name, svc%7, svc%13)
			fmt.Fprintf(&b, "        {\n          \"dockerTag\": \"1.%d.%d\",\n          \"dockerDigest\": \"sha256:%064x\"\n        }", svc%7, svc%13, svc)
			if svc%4 == 0 {
				fmt.Fprintf(&b, ",\n        {\n          \"dockerName\": \"acme/%s-worker\",\n          \"dockerTag\": \"1.%d.%d\"\n        }", name, svc%7, svc%13)
			}
			b.WriteString("\n      ]\n    }")
			if j < perFile-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  ]\n}\n")
		data := []byte(b.String())
		fsys[names[i]] = &fstest.MapFile{Data: data}
		all = append(all, data)
	}
	return fsys, all
}

func TestBenchRepo(t *testing.T) {
	fsys, all := benchRepo(t)
	env, err := Resolve(t.Context(), Repo{FS: fsys, Root: "."}, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 500 {
		t.Errorf("files = %d, want 500", len(all))
	}
	depth := 0
	var walk func(*Layout, int)
	walk = func(l *Layout, d int) {
		depth = max(depth, d)
		for _, c := range l.Includes {
			walk(c, d+1)
		}
	}
	walk(env.Layout, 0)
	if depth != 4 {
		t.Errorf("include depth = %d, want 4", depth)
	}
	if got := len(env.Services) + len(env.Overrides); got != 10000 {
		t.Errorf("services + overrides = %d, want 10000", got)
	}
}

// BenchmarkResolve resolves 10,000 services in 500 files (include depth 4).
// Compare with BenchmarkUnmarshal over the same bytes.
func BenchmarkResolve(b *testing.B) {
	fsys, all := benchRepo(b)
	b.SetBytes(totalSize(all))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(b.Context(), Repo{FS: fsys, Root: "."}, "prod"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshal only json.Unmarshals the bytes of BenchmarkResolve's
// 500 files into map[string]any: the yardstick (target: Resolve ≤ 3×).
func BenchmarkUnmarshal(b *testing.B) {
	_, all := benchRepo(b)
	b.SetBytes(totalSize(all))
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range all {
			var m map[string]any
			if err := json.Unmarshal(d, &m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func totalSize(files [][]byte) int64 {
	var n int64
	for _, d := range files {
		n += int64(len(d))
	}
	return n
}
