package identity

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   ID
		legacy bool
	}{
		{in: "github:alice", want: ID{GitHub, "alice"}},
		{in: "token:ci-deployer", want: ID{Token, "ci-deployer"}},
		{in: "kubernetes:system:serviceaccount:ci:deployer", want: ID{Kubernetes, "system:serviceaccount:ci:deployer"}},
		{in: "stagehand:reconciler", want: Reconciler},
		{in: "alice", want: ID{Name: "alice"}, legacy: true},
		{in: "system:serviceaccount:ci:deployer", want: ID{Name: "system:serviceaccount:ci:deployer"}, legacy: true},
		{in: "github:", want: ID{Name: "github:"}, legacy: true},
		{in: "GitHub:alice", want: ID{Name: "GitHub:alice"}, legacy: true},
		{in: "", want: ID{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := Parse(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Parse(%q) (-want +got):\n%s", tc.in, diff)
			}
			if got.Legacy() != tc.legacy {
				t.Errorf("Legacy() = %v, want %v", got.Legacy(), tc.legacy)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want the input %q back", got.String(), tc.in)
			}
		})
	}
}

func TestParseTyped(t *testing.T) {
	for _, bad := range []string{"alice", "robot:x", "github:", "github:al ice", "token:a\nb"} {
		if _, err := ParseTyped(bad); err == nil {
			t.Errorf("ParseTyped(%q) accepted", bad)
		}
	}
	if id, err := ParseTyped("github:alice"); err != nil || id != (ID{GitHub, "alice"}) {
		t.Errorf("ParseTyped(github:alice) = %v, %v", id, err)
	}
}

func TestEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"github:alice", "github:Alice", true},
		{"github:ci-locker", "token:ci-locker", false},
		{"token:ci-locker", "token:CI-locker", false},
		{"kubernetes:system:serviceaccount:a:b", "kubernetes:system:serviceaccount:a:b", true},
		{"stagehand-reconciler", "stagehand:reconciler", false},
		{"alice", "github:alice", false},
		{"alice", "alice", true},
	} {
		a, b := Parse(tc.a), Parse(tc.b)
		if got := a.Equal(b); got != tc.want {
			t.Errorf("%q.Equal(%q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := a.Key() == b.Key(); got != tc.want {
			t.Errorf("Key(%q) == Key(%q) is %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestReserved(t *testing.T) {
	for _, n := range []string{"stagehand", "Stagehand-Reconciler", "api-token", "skipConfirmation", "rollback", "stagehand:anything"} {
		if !Reserved(n) {
			t.Errorf("Reserved(%q) = false", n)
		}
	}
	for _, n := range []string{"alice", "ci-locker", "stagehand-bot"} {
		if Reserved(n) {
			t.Errorf("Reserved(%q) = true", n)
		}
	}
}

func TestPrincipalPerson(t *testing.T) {
	alice := ID{GitHub, "alice"}
	for _, tc := range []struct {
		name   string
		p      Principal
		want   ID
		person bool
	}{
		{"github user", Principal{ID: alice}, alice, true},
		{"token for alice", Principal{ID: ID{Token, "alice-cli"}, ActsFor: alice}, alice, true},
		{"service account for alice", Principal{ID: ID{Kubernetes, "system:serviceaccount:ci:x"}, ActsFor: alice}, alice, true},
		{"automation token", Principal{ID: ID{Token, "ci"}}, ID{}, false},
		{"stagehand", Principal{ID: Reconciler}, ID{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.p.Person()
			if got != tc.want || ok != tc.person {
				t.Errorf("Person() = %v, %v; want %v, %v", got, ok, tc.want, tc.person)
			}
			if tc.p.Automation() == tc.person {
				t.Errorf("Automation() = %v", tc.p.Automation())
			}
		})
	}
}

func TestJSON(t *testing.T) {
	type rec struct {
		Owner ID `json:"owner"`
	}
	for _, in := range []string{`{"owner":"github:alice"}`, `{"owner":"alice"}`} {
		var r rec
		if err := json.Unmarshal([]byte(in), &r); err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != in {
			t.Errorf("round trip of %s gave %s", in, out)
		}
	}
}
