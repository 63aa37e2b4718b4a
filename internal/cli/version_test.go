package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/version"
)

func TestVersionCommand(t *testing.T) {
	want := version.Get()
	for name, root := range map[string]func(io.Writer, io.Writer) *cobra.Command{"reconciler": NewReconciler, "prbot": NewPrbot} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := root(&out, io.Discard)
			cmd.SetArgs([]string{"version"})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(out.String()); got != name+" "+want.String() {
				t.Errorf("%s version = %q, want %q", name, got, name+" "+want.String())
			}
			out.Reset()
			cmd = root(&out, io.Discard)
			cmd.SetArgs([]string{"version", "-o", "json"})
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			var got version.Info
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got != want {
				t.Errorf("%s version -o json = %s (%v), want %+v", name, out.String(), err, want)
			}
			cmd = root(io.Discard, io.Discard)
			cmd.SetArgs([]string{"version", "-o", "yaml"})
			if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
				t.Errorf("version -o yaml = %v, want a usage error naming the value", err)
			}
		})
	}
}
