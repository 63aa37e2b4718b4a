package config

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/stagehand-gitops/stagehand/internal/identity"
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
	c.validateActsFor(bad)
	c.Server.HTTP.Validate("server.http", bad)
	if g := c.Server.ShutdownGrace.Duration; g < time.Second || g > 10*time.Minute {
		bad("server.shutdownGrace", "%s: want a duration from 1s to 10m (default %s)", g, DefaultShutdownGrace)
	}
	if c.Server.UI.OAuth.ClientIDFile != "" && c.GitHub.App == nil {
		// Without the App nothing could say who may read or approve: every GitHub user could.
		bad("server.ui.oauth", "needs github.app, whose approvers rule (github.approvers) decides who may approve on the page")
	}
	if msgs := validation.IsDNS1123Label(c.State.Namespace); len(msgs) > 0 {
		bad("state.namespace", "invalid namespace %q: %s", c.State.Namespace, strings.Join(msgs, "; "))
	}
}

// validateActsFor checks server.kubernetesActsFor: each key a Kubernetes user name Stagehand accepts
// (no white space, not one of Stagehand's own names), each value the person as github:<login>.
func (c *Config) validateActsFor(bad func(field, format string, a ...any)) {
	m := c.Server.KubernetesActsFor
	if len(m) > 0 && !c.Server.KubernetesAuth {
		bad("server.kubernetesActsFor", "needs server.kubernetesAuth: true: without it no Kubernetes user is accepted")
	}
	users := make([]string, 0, len(m))
	for user := range m {
		users = append(users, user)
	}
	slices.Sort(users)
	for _, user := range users {
		field := "server.kubernetesActsFor." + user
		switch {
		case user == "" || len(user) > 253 || strings.ContainsFunc(user, unicode.IsSpace):
			bad("server.kubernetesActsFor", "user %q: want a Kubernetes user name of at most 253 characters without white space, e.g. system:serviceaccount:ci:alice-bot", user)
			continue
		case strings.HasPrefix(user, "kubernetes:"):
			bad(field, "want the user name as TokenReview returns it, without kubernetes:, e.g. %s", strings.TrimPrefix(user, "kubernetes:"))
			continue
		case identity.Reserved(user):
			bad(field, "user %q is one of the names Stagehand uses for itself", user)
			continue
		}
		id, err := identity.ParseTyped(m[user])
		switch {
		case err != nil || id.Kind != identity.GitHub:
			bad(field, "%q: want the person the user acts for as github:<login>", m[user])
		case identity.Reserved(id.Name):
			bad(field, "%q is one of the names Stagehand uses for itself", m[user])
		}
	}
}
