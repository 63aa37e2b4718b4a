package config

import (
	"net"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validateServer checks the server: and state: sections.
func (c *Config) validateServer(bad func(field, format string, a ...any)) {
	if host, port, err := net.SplitHostPort(c.Server.Listen); err != nil {
		bad("server.listen", "%q is not host:port (e.g. \":8080\" or \"127.0.0.1:8080\")", c.Server.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || strings.ContainsAny(host, "/ ") {
		bad("server.listen", "%q: want a port from 0 to 65535", c.Server.Listen)
	}
	c.Server.UI.validate(c.Server.Listen, bad)
	if a := c.Server.KubernetesAudience; len(a) > 253 || strings.ContainsFunc(a, unicode.IsSpace) {
		bad("server.kubernetesAudience", "%q: want an audience of at most 253 characters without white space (default %s)", a, DefaultKubernetesAudience)
	}
	if c.Server.UI.OAuth.ClientIDFile != "" && c.GitHub.App == nil {
		// Without the App nothing could say who may read or approve: every GitHub user could.
		bad("server.ui.oauth", "needs github.app, whose approvers rule (github.approvers) decides who may approve on the page")
	}
	if msgs := validation.IsDNS1123Label(c.State.Namespace); len(msgs) > 0 {
		bad("state.namespace", "invalid namespace %q: %s", c.State.Namespace, strings.Join(msgs, "; "))
	}
}
