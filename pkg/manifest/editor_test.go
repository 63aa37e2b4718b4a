package manifest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	digestA = "sha256:f48a20f48cbc2b965e37ff9144048c644890cb37cefa85fafc8fae7f89b15455"
	digestB = "sha256:499442b8120888f3dddefe40f8a771ac252b2fd03b5efa122f61dd5bbfb32352"
)

const prettyDoc = `{
    "services": [
        {
            "name": "checkout-api",
            "version": "1.4.0",
            "containers": [
                {
                    "dockerTag": "1.4.0"
                }
            ]
        },
        {
            "name": "payments-api",
            "containers": [
                {
                    "dockerName": "payments-worker",
                    "dockerTag": "2.0.1",
                    "dockerDigest": "` + digestA + `"
                },
                {
                    "dockerTag": "2.0.1"
                }
            ]
        }
    ]
}
`

func TestEditor(t *testing.T) {
	tests := []struct {
		name string
		in   string
		edit func(*Editor) error
		want string
	}{
		{
			name: "tag bump changes one line",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetImage("checkout-api", "", "1.5.0", "") },
			want: replaceLine(prettyDoc, `                    "dockerTag": "1.4.0"`, `                    "dockerTag": "1.5.0"`),
		},
		{
			name: "digest added after dockerTag",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetImage("checkout-api", "", "1.5.0", digestB) },
			want: replaceLine(prettyDoc, `                    "dockerTag": "1.4.0"`,
				`                    "dockerTag": "1.5.0",`+"\n"+`                    "dockerDigest": "`+digestB+`"`),
		},
		{
			name: "digest replaced in place",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetImage("payments-api", "payments-worker", "2.0.2", digestB) },
			want: replaceLine(replaceLine(prettyDoc,
				`                    "dockerTag": "2.0.1",`, `                    "dockerTag": "2.0.2",`),
				`                    "dockerDigest": "`+digestA+`"`, `                    "dockerDigest": "`+digestB+`"`),
		},
		{
			name: "digest cleared removes the key",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetImage("payments-api", "payments-worker", "2.0.1", "") },
			want: replaceLine(replaceLine(prettyDoc,
				`                    "dockerTag": "2.0.1",`, `                    "dockerTag": "2.0.1"`),
				`                    "dockerDigest": "`+digestA+`"`+"\n", ``),
		},
		{
			name: "same values leave the bytes alone",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetImage("payments-api", "payments-worker", "2.0.1", digestA) },
			want: prettyDoc,
		},
		{
			name: "compact one-line file stays on one line",
			in:   `{"services":[{"name":"a","containers":[{"dockerTag":"1"}]}]}`,
			edit: func(e *Editor) error { return e.SetImage("a", "", "2", digestA) },
			want: `{"services":[{"name":"a","containers":[{"dockerTag":"2","dockerDigest":"` + digestA + `"}]}]}`,
		},
		{
			name: "remove the second service",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.RemoveService("payments-api") },
			want: `{
    "services": [
        {
            "name": "checkout-api",
            "version": "1.4.0",
            "containers": [
                {
                    "dockerTag": "1.4.0"
                }
            ]
        }
    ]
}
`,
		},
		{
			name: "remove the first service",
			in:   `{"services": [{"name": "a"}, {"name": "b"}]}`,
			edit: func(e *Editor) error { return e.RemoveService("a") },
			want: `{"services": [{"name": "b"}]}`,
		},
		{
			name: "remove the only service",
			in:   "{\n  \"services\": [\n    {\"name\": \"a\"}\n  ]\n}",
			edit: func(e *Editor) error { return e.RemoveService("a") },
			want: "{\n  \"services\": []\n}",
		},
		{
			name: "add a service in the file's indentation",
			in:   "{\n  \"services\": [\n    {\n      \"name\": \"a\"\n    }\n  ]\n}\n",
			edit: func(e *Editor) error {
				return e.AddService(Service{Name: "web-frontend", Version: "3.1.0", Containers: []Container{{DockerTag: "3.1.0", DockerDigest: digestA}}})
			},
			want: "{\n  \"services\": [\n    {\n      \"name\": \"a\"\n    },\n    {\n      \"name\": \"web-frontend\",\n      \"version\": \"3.1.0\",\n" +
				"      \"containers\": [\n        {\n          \"dockerTag\": \"3.1.0\",\n          \"dockerDigest\": \"" + digestA + "\"\n        }\n      ]\n    }\n  ]\n}\n",
		},
		{
			name: "add a service to an empty list with tabs",
			in:   "{\n\t\"includes\": [\"./x.json\"],\n\t\"services\": []\n}\n",
			edit: func(e *Editor) error {
				return e.AddService(Service{Name: "web", Containers: []Container{{DockerName: "acme/web", DockerTag: "1"}}})
			},
			want: "{\n\t\"includes\": [\"./x.json\"],\n\t\"services\": [\n\t\t{\n\t\t\t\"name\": \"web\",\n\t\t\t\"containers\": [\n\t\t\t\t{\n" +
				"\t\t\t\t\t\"dockerName\": \"acme/web\",\n\t\t\t\t\t\"dockerTag\": \"1\"\n\t\t\t\t}\n\t\t\t]\n\t\t}\n\t]\n}\n",
		},
		{
			name: "add services key when absent",
			in:   "{\n  \"includes\": []\n}\n",
			edit: func(e *Editor) error { return e.AddService(Service{Name: "web"}) },
			want: "{\n  \"includes\": [],\n  \"services\": [\n    {\n      \"name\": \"web\"\n    }\n  ]\n}\n",
		},
		{
			name: "add to an empty object",
			in:   "{}\n",
			edit: func(e *Editor) error { return e.AddService(Service{Name: "web"}) },
			want: "{\n  \"services\": [\n    {\n      \"name\": \"web\"\n    }\n  ]\n}\n",
		},
		{
			name: "CRLF line endings kept",
			in:   "{\r\n  \"services\": [\r\n    {\"name\": \"a\", \"containers\": [{\"dockerTag\": \"1\"}]}\r\n  ]\r\n}\r\n",
			edit: func(e *Editor) error { return e.AddContainer("a", Container{DockerName: "sidecar", DockerTag: "2"}) },
			want: "{\r\n  \"services\": [\r\n    {\"name\": \"a\", \"containers\": [{\"dockerTag\": \"1\"}, {\"dockerName\": \"sidecar\", \"dockerTag\": \"2\"}]}\r\n  ]\r\n}\r\n",
		},
		{
			name: "add containers key to a service",
			in:   "{\n  \"services\": [\n    {\n      \"name\": \"a\"\n    }\n  ]\n}\n",
			edit: func(e *Editor) error { return e.AddContainer("a", Container{DockerTag: "1.0.0"}) },
			want: "{\n  \"services\": [\n    {\n      \"name\": \"a\",\n      \"containers\": [\n        {\n          \"dockerTag\": \"1.0.0\"\n        }\n      ]\n    }\n  ]\n}\n",
		},
		{
			name: "remove a container",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.RemoveContainer("payments-api", "payments-worker") },
			want: `{
    "services": [
        {
            "name": "checkout-api",
            "version": "1.4.0",
            "containers": [
                {
                    "dockerTag": "1.4.0"
                }
            ]
        },
        {
            "name": "payments-api",
            "containers": [
                {
                    "dockerTag": "2.0.1"
                }
            ]
        }
    ]
}
`,
		},
		{
			name: "version replaced in place",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetVersion("checkout-api", "1.5.0") },
			want: replaceLine(prettyDoc, `            "version": "1.4.0",`, `            "version": "1.5.0",`),
		},
		{
			name: "version added after name",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetVersion("payments-api", "2.1.0") },
			want: replaceLine(prettyDoc, `            "name": "payments-api",`, `            "name": "payments-api",`+"\n"+`            "version": "2.1.0",`),
		},
		{
			name: "empty version removes the key",
			in:   prettyDoc,
			edit: func(e *Editor) error { return e.SetVersion("checkout-api", "") },
			want: replaceLine(prettyDoc, `            "version": "1.4.0",`+"\n", ``),
		},
		{
			name: "RFC example: no indentation at all",
			in:   "{\n\"services\": [\n{\n\"name\": \"a\",\n\"containers\": [\n{\n\"dockerTag\": \"e96ae0a\"\n}\n]\n}\n]\n}\n",
			edit: func(e *Editor) error { return e.SetImage("a", "", "f00ba47", digestA) },
			want: "{\n\"services\": [\n{\n\"name\": \"a\",\n\"containers\": [\n{\n\"dockerTag\": \"f00ba47\",\n\"dockerDigest\": \"" + digestA + "\"\n}\n]\n}\n]\n}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Edit("environments/devel/x.json", []byte(tt.in))
			if err != nil {
				t.Fatalf("Edit: %v", err)
			}
			if err := tt.edit(e); err != nil {
				t.Fatalf("edit: %v", err)
			}
			got := string(e.Bytes())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("bytes (-want +got):\n%s", diff)
			}
			if e.Changed() != (tt.in != tt.want) {
				t.Errorf("Changed() = %v", e.Changed())
			}
			// The result is still a valid manifest.
			if _, err := Edit("x.json", e.Bytes()); err != nil {
				t.Errorf("edited file does not parse: %v", err)
			}
		})
	}
}

func replaceLine(s, old, repl string) string {
	i := indexOf(s, old)
	if i < 0 {
		panic("replaceLine: " + old + " not found")
	}
	return s[:i] + repl + s[i+len(old):]
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestEditorErrors(t *testing.T) {
	e, err := Edit("x.json", []byte(prettyDoc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func() error
		is   error
	}{
		{"unknown service", func() error { return e.SetImage("nope", "", "1", "") }, ErrNotFound},
		{"unknown container", func() error { return e.SetImage("checkout-api", "sidecar", "1", "") }, ErrNotFound},
		{"service exists", func() error { return e.AddService(Service{Name: "checkout-api"}) }, ErrExists},
		{"container exists", func() error { return e.AddContainer("payments-api", Container{DockerTag: "1"}) }, ErrExists},
		{"remove unknown", func() error { return e.RemoveService("nope") }, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.edit(); !errors.Is(err, tt.is) {
				t.Errorf("got %v, want %v", err, tt.is)
			}
		})
	}
	for _, bad := range []func() error{
		func() error { return e.SetImage("checkout-api", "", "-bad", "") },
		func() error { return e.SetImage("checkout-api", "", "1.0", "sha256:short") },
		func() error { return e.AddService(Service{Name: "Bad Name"}) },
	} {
		if err := bad(); err == nil {
			t.Error("invalid value accepted")
		}
	}
	if e.Changed() {
		t.Error("failed edits changed the file")
	}
	if _, err := Edit("x.json", []byte(`{"services": [{"name": "a"}, {"name": "a"}]}`)); err == nil {
		t.Error("Edit accepted an invalid manifest")
	}
}

func TestContainer(t *testing.T) {
	e, err := Edit("x.json", []byte(prettyDoc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Container("payments-api", "payments-worker")
	if err != nil {
		t.Fatal(err)
	}
	want := Container{DockerName: "payments-worker", DockerTag: "2.0.1", DockerDigest: digestA}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	svc, err := e.Service("payments-api")
	if err != nil {
		t.Fatal(err)
	}
	wantSvc := Service{Name: "payments-api", Source: "x.json", Containers: []Container{
		{DockerName: "payments-worker", DockerTag: "2.0.1", DockerDigest: digestA},
		{DockerTag: "2.0.1"},
	}}
	if diff := cmp.Diff(wantSvc, svc); diff != "" {
		t.Errorf("Service (-want +got):\n%s", diff)
	}
	if err := e.SetVersion("checkout-api", "1.x"); err == nil {
		t.Error("SetVersion accepted an invalid version")
	}
	if diff := cmp.Diff([]string{"checkout-api", "payments-api"}, e.Services()); diff != "" {
		t.Errorf("Services (-want +got):\n%s", diff)
	}
}
