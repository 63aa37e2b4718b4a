package config

import "testing"

func TestUI(t *testing.T) {
	off, on := false, true
	for _, tc := range []struct {
		name, yaml string
		want       UI
		err        string
	}{
		{name: "default: on", yaml: "{}", want: UI{}},
		{name: "shorthand off", yaml: "server: {ui: false}", want: UI{Enabled: &off}},
		{name: "shorthand on", yaml: "server: {ui: true}", want: UI{Enabled: &on}},
		{name: "mapping", yaml: "server: {ui: {enabled: false}}", want: UI{Enabled: &off}},
		{name: "demo on loopback", yaml: "server: {listen: '127.0.0.1:8080', ui: {demoLogin: demo}}", want: UI{DemoLogin: "demo"}},
		{name: "demo on localhost", yaml: "server: {listen: 'localhost:8080', ui: {demoLogin: demo}}", want: UI{DemoLogin: "demo"}},
		{name: "demo on every address", yaml: "server: {ui: {demoLogin: demo}}", err: `server.ui.demoLogin: signs in anyone without GitHub, so it needs a loopback server.listen such as 127.0.0.1:8080; got ":8080"`},
		{name: "demo on a public address", yaml: "server: {listen: '10.0.0.1:8080', ui: {demoLogin: demo}}", err: "needs a loopback server.listen"},
		{name: "demo bad login", yaml: "server: {listen: '127.0.0.1:8080', ui: {demoLogin: 'a b'}}", err: `server.ui.demoLogin: "a b" is not a GitHub-style login`},
		{name: "oauth half", yaml: "server: {ui: {oauth: {clientIDFile: /id}}}", err: "server.ui.oauth: clientIDFile and clientSecretFile go together"},
		{name: "oauth without the app", yaml: "server: {ui: {oauth: {clientIDFile: /id, clientSecretFile: /secret}}}", err: "server.ui.oauth: needs github.app"},
		{name: "oauth bad web URL", yaml: "server: {ui: {oauth: {webURL: 'github.com'}}}", err: `server.ui.oauth.webURL: "github.com" is not an absolute http(s) URL`},
		{name: "unknown key", yaml: "server: {ui: {colour: blue}}", err: `unknown field "colour"`},
		{name: "not a mapping", yaml: "server: {ui: 3}", err: "server.ui: want true, false or a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkParse(t, tc.yaml, tc.err, tc.want, func(c *Config) UI { return c.Server.UI })
		})
	}
}
