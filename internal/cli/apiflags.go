package cli

import (
	"net/url"
	"os"

	"github.com/spf13/pflag"
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
// bearer token the caller's credentials give (userToken's order).
func apiClient(server, tokenFile string) (decisionFlags, string, error) {
	server, err := apiServer(server)
	if err != nil {
		return decisionFlags{}, "", err
	}
	c := decisionFlags{server: server, tokenFile: tokenFile}
	token, err := c.token()
	return c, token, err
}
