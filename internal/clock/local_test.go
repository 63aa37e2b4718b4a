//go:build !stagehand_faketime

package clock

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLocalIgnoresOffset: a binary built without the stagehand_faketime tag
// (every shipped one) runs on the host's clock whatever the environment says.
func TestLocalIgnoresOffset(t *testing.T) {
	for _, v := range []string{"2h", "-2h", "nonsense"} {
		t.Run(v, func(t *testing.T) {
			now, err := Local(func(string) (string, bool) { return v, true })
			if err != nil {
				t.Fatal(err)
			}
			if d := now().Sub(time.Now()); d < -time.Second || d > time.Second {
				t.Errorf("Local with %s=%s is %s off the host's clock; the hook must not be in an untagged build", "STAGEHAND_FAKETIME_OFFSET", v, d)
			}
		})
	}
}

// TestHookOnlyWithTag: the files of an untagged build do not include the
// faketime hook (the list go build would compile).
func TestHookOnlyWithTag(t *testing.T) {
	for _, c := range []struct {
		tags string
		want bool
	}{{"", false}, {"stagehand_faketime", true}} {
		out, err := exec.Command("go", "list", "-tags="+c.tags, "-f", "{{.GoFiles}}", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		if got := strings.Contains(string(out), "local_faketime.go"); got != c.want {
			t.Errorf("tags %q: compiled files %s; local_faketime.go included = %v, want %v", c.tags, out, got, c.want)
		}
	}
}
