package promote_test

import (
	"fmt"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// TestHostilePipelines: pipeline files far beyond any real one, or written
// to blow up, are refused with their exact error, quickly and within a
// memory budget, and many problems are answered with the first 50.
func TestHostilePipelines(t *testing.T) {
	seq := func(tasks string) string {
		return "stages:\n  - name: devel\n    sequence:\n      - deployment\n" + tasks
	}
	var manyTasks, badTasks, stages strings.Builder
	for i := range promote.MaxTasks {
		fmt.Fprintf(&manyTasks, "      - name: test\n        properties: {http: {url: \"https://shop.example.com/%d\"}}\n", i)
	}
	for i := range 60 {
		fmt.Fprintf(&badTasks, "      - bogus%d\n", i)
	}
	stages.WriteString("stages:\n")
	for i := range promote.MaxStages + 1 {
		fmt.Fprintf(&stages, "  - name: s%d\n", i)
	}
	lol := "{a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"
	prev := "a"
	for i := range 9 {
		name := fmt.Sprintf("b%d", i)
		lol += fmt.Sprintf(", %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	lol += "}"
	for _, tc := range []struct {
		name, doc, want string
		maxAlloc        uint64
	}{
		{"over 1 MiB", seq("      - name: test\n        properties: {x: \"" + strings.Repeat("a", promote.MaxFileSize) + "\"}\n"),
			"pipeline.yaml: the file is 1048680 bytes long; at most 1048576 are accepted", 4 << 20},
		{"101 tasks", seq(manyTasks.String()), "pipeline.yaml:4:7: stages[0].sequence: 101 tasks; at most 100 are accepted", 16 << 20},
		{"101 stages", stages.String(), "pipeline.yaml:2:3: stages: 101 stages; at most 100 are accepted", 4 << 20},
		{"60 unknown tasks", seq(badTasks.String()),
			`pipeline.yaml:54:9: stages[0].sequence[50]: unknown task "bogus49"; want one of "approval", "deployment", "test", "evaluation", "release"` + "\npipeline.yaml: ... and 10 more problems", 4 << 20},
		{"billion laughs", seq("      - name: test\n        properties: " + lol + "\n"),
			"pipeline.yaml:6:21: stages[0].sequence[1].properties: yaml: document contains excessive aliasing", 4 << 20},
		{"deep nesting", seq("      - name: test\n        properties: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"),
			"exceeded max depth of 10000", 16 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := allocated()
			start := time.Now()
			_, err := promote.Parse("pipeline.yaml", []byte(tc.doc))
			took, alloc := time.Since(start), allocated()-before
			if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want %q", err, tc.want)
			}
			if took > 2*time.Second {
				t.Errorf("took %s, want under 2s", took)
			}
			if alloc > tc.maxAlloc {
				t.Errorf("allocated %d bytes, want at most %d", alloc, tc.maxAlloc)
			}
		})
	}
}

func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
