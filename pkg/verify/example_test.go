package verify_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
	"github.com/stagehand-gitops/stagehand/pkg/verify"
)

// TestExamplePipeline: every test and evaluation task of the example
// pipeline.yaml is a valid verification task.
func TestExamplePipeline(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "environments")
	pl, err := promote.Load(os.DirFS(dir), ".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range pl.Stages {
		for _, task := range st.SequenceTasks() {
			if task.Name != promote.TaskTest && task.Name != promote.TaskEvaluation {
				continue
			}
			if _, err := verify.ParseTask(task.Name, task.Properties); err != nil {
				t.Errorf("stage %s: %v", st.Name, err)
			}
			n++
		}
	}
	if n < 3 {
		t.Errorf("the example has %d verification tasks; want the three kinds shown", n)
	}
}
