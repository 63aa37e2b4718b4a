package testenv

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestBuffer: a child process and goroutines write while the test reads
// (run with -race); every write is kept.
func TestBuffer(t *testing.T) {
	var buf Buffer
	cmd := exec.Command("sh", "-c", "echo from-child; echo to-stderr >&2")
	cmd.Stdout, cmd.Stderr = &buf, &buf
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(&buf, "line-%d\n", i)
			_ = buf.String()
		}()
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	got := buf.String()
	for _, want := range []string{"from-child\n", "to-stderr\n", "line-0\n", "line-7\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("buffer lacks %q:\n%s", want, got)
		}
	}
}
