package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stagehand-gitops/stagehand/internal/api"
)

// addAPIFlags adds --server and --token-file, the flags of every command
// that talks to the reconciler's API.
func addAPIFlags(fl *pflag.FlagSet, server, tokenFile *string) {
	fl.StringVar(server, "server", "", "URL of the reconciler's API (default $STAGEHAND_SERVER)")
	fl.StringVar(tokenFile, "token-file", "", "file holding the API bearer token (default: $STAGEHAND_TOKEN)")
}

// apiServer returns server, else $STAGEHAND_SERVER, checked to be an
// http(s) URL.
func apiServer(server string) (string, error) {
	if server == "" {
		server = os.Getenv("STAGEHAND_SERVER")
	}
	if server == "" {
		return "", usagef("--server is required (or set $STAGEHAND_SERVER)")
	}
	if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usagef("--server %q: want an http(s) URL such as http://localhost:8080", server)
	}
	return server, nil
}

// apiClient returns the client of the API at server (apiServer) with the
// bearer token the caller's credentials give (userToken's order), each
// request bounded by timeout.
func apiClient(server, tokenFile string, timeout time.Duration) (*api.Client, error) {
	server, err := apiServer(server)
	if err != nil {
		return nil, err
	}
	token, err := userToken(context.Background(), os.LookupEnv, tokenFile, "--token-file", "--server")
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(server, token, api.WithClientTimeout(timeout))
	if err != nil {
		return nil, usagef("--server: %v", err)
	}
	return c, nil
}

// refused reports the API's refusal of what on the command's stderr as
// "Error: WHAT refused (STATUS): MESSAGE" and exits 1; other errors (the
// server unreachable, an answer that does not decode) pass on.
func refused(cmd *cobra.Command, what string, err error) error {
	var e *api.Error
	if errors.As(err, &e) {
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s refused (%d): %s\n", what, e.Status, e.Message)
		return exitCode(1, nil)
	}
	return err
}
