package config

import (
	"testing"
	"time"
)

func TestServerAndState(t *testing.T) {
	type out struct {
		Server Server
		State  State
	}
	grace := Duration{DefaultShutdownGrace}
	http := HTTP{ReadHeaderTimeout: Duration{10 * time.Second}, ReadTimeout: Duration{30 * time.Second},
		WriteTimeout: Duration{time.Minute}, IdleTimeout: Duration{2 * time.Minute}, MaxHeaderBytes: 64 << 10}
	for _, tc := range []struct {
		name, yaml string
		want       out
		err        string
	}{
		{name: "defaults", yaml: "{}", want: out{Server{Listen: ":8080", KubernetesAudience: "stagehand", ShutdownGrace: grace, HTTP: http}, State{Namespace: "stagehand"}}},
		{name: "state follows locks", yaml: "locks: {namespace: ops}", want: out{Server{Listen: ":8080", KubernetesAudience: "stagehand", ShutdownGrace: grace, HTTP: http}, State{Namespace: "ops"}}},
		{name: "own", yaml: "server: {listen: '127.0.0.1:9090', apiTokenFile: /s/token}\nstate: {namespace: deploys, kubeconfig: /k, context: c}",
			want: out{Server{Listen: "127.0.0.1:9090", APITokenFile: "/s/token", KubernetesAudience: "stagehand", ShutdownGrace: grace, HTTP: http}, State{Namespace: "deploys", Kubeconfig: "/k", Context: "c"}}},
		{name: "identity", yaml: "server: {tokensFile: /s/tokens.yaml, kubernetesAuth: true}",
			want: out{Server{Listen: ":8080", TokensFile: "/s/tokens.yaml", KubernetesAuth: true, KubernetesAudience: "stagehand", ShutdownGrace: grace, HTTP: http}, State{Namespace: "stagehand"}}},
		{name: "audience", yaml: "server: {kubernetesAuth: true, kubernetesAudience: stagehand-prod}",
			want: out{Server{Listen: ":8080", KubernetesAuth: true, KubernetesAudience: "stagehand-prod", ShutdownGrace: grace, HTTP: http}, State{Namespace: "stagehand"}}},
		{name: "acts for", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'system:serviceaccount:ci:alice-bot': 'github:alice'}}",
			want: out{Server{Listen: ":8080", KubernetesAuth: true, KubernetesAudience: "stagehand",
				KubernetesActsFor: map[string]string{"system:serviceaccount:ci:alice-bot": "github:alice"}, ShutdownGrace: grace, HTTP: http}, State{Namespace: "stagehand"}}},
		{name: "acts for without kubernetesAuth", yaml: "server: {kubernetesActsFor: {'system:serviceaccount:ci:alice-bot': 'github:alice'}}",
			err: "server.kubernetesActsFor: needs server.kubernetesAuth: true"},
		{name: "acts for a bare name", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'system:serviceaccount:ci:alice-bot': alice}}",
			err: `server.kubernetesActsFor.system:serviceaccount:ci:alice-bot: "alice": want the person the user acts for as github:<login>`},
		{name: "acts for a token", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'system:serviceaccount:ci:alice-bot': 'token:alice-cli'}}",
			err: `"token:alice-cli": want the person the user acts for as github:<login>`},
		{name: "acts for Stagehand", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'system:serviceaccount:ci:bot': 'github:Stagehand-Reconciler'}}",
			err: `"github:Stagehand-Reconciler" is one of the names Stagehand uses for itself`},
		{name: "acts for with a typed user", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'kubernetes:system:serviceaccount:ci:bot': 'github:alice'}}",
			err: `want the user name as TokenReview returns it, without kubernetes:`},
		{name: "acts for user with space", yaml: "server: {kubernetesAuth: true, kubernetesActsFor: {'a b': 'github:alice'}}",
			err: `server.kubernetesActsFor: user "a b": want a Kubernetes user name`},
		{name: "audience with space", yaml: "server: {kubernetesAudience: 'a b'}", err: `server.kubernetesAudience: "a b": want an audience`},
		{name: "listen without port", yaml: "server: {listen: localhost}", err: `server.listen: "localhost" is not host:port`},
		{name: "listen bad port", yaml: "server: {listen: ':http'}", err: `server.listen: ":http": want a port from 0 to 65535`},
		{name: "bad namespace", yaml: "state: {namespace: Stage_Hand}", err: `state.namespace: invalid namespace "Stage_Hand"`},
		{name: "shutdown grace", yaml: "server: {shutdownGrace: 5s}",
			want: out{Server{Listen: ":8080", KubernetesAudience: "stagehand", ShutdownGrace: Duration{5 * time.Second}, HTTP: http}, State{Namespace: "stagehand"}}},
		{name: "negative shutdown grace", yaml: "server: {shutdownGrace: -1s}", err: `server.shutdownGrace: -1s: want a duration from 1s to 10m`},
		{name: "http limits", yaml: "server: {http: {readHeaderTimeout: 2s, maxHeaderBytes: 8192}}",
			want: out{Server{Listen: ":8080", KubernetesAudience: "stagehand", ShutdownGrace: grace, HTTP: HTTP{ReadHeaderTimeout: Duration{2 * time.Second},
				ReadTimeout: http.ReadTimeout, WriteTimeout: http.WriteTimeout, IdleTimeout: http.IdleTimeout, MaxHeaderBytes: 8192}}, State{Namespace: "stagehand"}}},
		{name: "http limits out of range", yaml: "server: {http: {readTimeout: -1s, maxHeaderBytes: 100}}",
			err: "server.http.readTimeout: -1s: want a positive duration\nserver.http.maxHeaderBytes: 100: want from 1024"},
		{name: "unknown key", yaml: "server: {port: 80}", err: `unknown field "port"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) out { return out{c.Server, c.State} })
		})
	}
}
