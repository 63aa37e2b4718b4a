package command

import (
	"context"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/stagehand-gitops/stagehand/internal/api"
)

// AddAPIFlags adds --server and --token-file, the flags of every command
// that talks to the reconciler's API.
func AddAPIFlags(fl *pflag.FlagSet, server, tokenFile *string) {
	fl.StringVar(server, "server", "", "URL of the reconciler's API (default $STAGEHAND_SERVER)")
	fl.StringVar(tokenFile, "token-file", "", "file holding the API bearer token (default: $STAGEHAND_TOKEN)")
}

// APIClient returns the client of the API at server (apiServer) with the
// bearer token the caller's credentials give (UserToken's order), each
// request bounded by timeout.
func APIClient(server, tokenFile string, timeout time.Duration) (*api.Client, error) {
	server, err := APIServer(server)
	if err != nil {
		return nil, err
	}
	token, err := UserToken(context.Background(), os.LookupEnv, TokenFlag{File: tokenFile, Flag: "--token-file", User: "--server"})
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(server, token, api.WithClientTimeout(timeout))
	if err != nil {
		return nil, Usagef("--server: %v", err)
	}
	return c, nil
}
