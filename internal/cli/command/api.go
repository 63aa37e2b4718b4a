package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/spf13/cobra"

	"github.com/stagehand-gitops/stagehand/internal/api"
)

// APIServer returns server, else $STAGEHAND_SERVER, checked to be an
// http(s) URL.
func APIServer(server string) (string, error) {
	if server == "" {
		server = os.Getenv("STAGEHAND_SERVER")
	}
	if server == "" {
		return "", Usagef("--server is required (or set $STAGEHAND_SERVER)")
	}
	if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", Usagef("--server %q: want an http(s) URL such as http://localhost:8080", server)
	}
	return server, nil
}

// Refused reports the API's refusal of what on the command's stderr as
// "Error: WHAT refused (STATUS): MESSAGE" and exits 1; other errors (the
// server unreachable, an answer that does not decode) pass on.
func Refused(cmd *cobra.Command, what string, err error) error {
	var e *api.Error
	if errors.As(err, &e) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s refused (%d): %s\n", what, e.Status, e.Message)
		return Exit(1, nil)
	}
	return err
}

// WriteJSON prints v as indented JSON (every -o json of the CLIs).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
