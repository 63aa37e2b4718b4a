package faults

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// row is one fault case's line in the table.
type row struct {
	fault       string
	survived    bool
	lost, twice int
	recover     time.Duration
	note        string
}

// results collects the rows of the cases that ran.
type results struct {
	mu   sync.Mutex
	rows []row
}

var table results

// add records a case's row; a case that failed its assertions is recorded
// as not survived whatever it measured.
func (r *results) add(t *testing.T, x row) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			x.survived = false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rows = append(r.rows, x)
	})
}

// print writes the table to w and to $STAGEHAND_FAULTS_TABLE (default
// <repo>/bin/faults.md); nothing when no case ran.
func (r *results) print(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rows) == 0 {
		return
	}
	sort.Slice(r.rows, func(i, j int) bool { return r.rows[i].fault < r.rows[j].fault })
	var b strings.Builder
	b.WriteString("| fault | survived | workloads lost | patched twice | seconds to recover | note |\n|---|---|---|---|---|---|\n")
	for _, x := range r.rows {
		yes := "no"
		if x.survived {
			yes = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %s |\n", x.fault, yes, x.lost, x.twice, x.recover.Seconds(), x.note)
	}
	fmt.Fprint(w, "\nfault table\n"+b.String())
	path := os.Getenv("STAGEHAND_FAULTS_TABLE")
	if path == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return
		}
		path = filepath.Join(root, "bin", "faults.md")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		_ = os.WriteFile(path, []byte(b.String()), 0o644)
	}
}
