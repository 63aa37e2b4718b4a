package command

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
)

// TestQuietOnStop: a "context canceled" error is an error while the process
// runs, and an info line once it stops; any other error stays an error.
func TestQuietOnStop(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx, stop := context.WithCancel(t.Context())
	l := QuietOnStop(ctx, base).WithName("runtime").WithValues("lock", "ns/l")
	canceled := fmt.Errorf("retrieving lease: %w", context.Canceled)
	l.Error(canceled, "before")
	stop()
	l.Error(canceled, "after")
	l.Error(errors.New("forbidden"), "other")
	want := []string{
		`runtime "msg"="before" "error"="retrieving lease: context canceled" "lock"="ns/l"`,
		`runtime "level"=0 "msg"="after" "lock"="ns/l" "error"="retrieving lease: context canceled" "stopping"=true`,
		`runtime "msg"="other" "error"="forbidden" "lock"="ns/l"`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}
