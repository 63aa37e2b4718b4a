package reconcile

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHashIsCanonical(t *testing.T) {
	a := Change{Service: "a", Target: "t", Namespace: "n", Kind: KindDeployment, Name: "a", Container: "app", From: "x:1", To: "x:2"}
	b := Change{Service: "b", Target: "t", Namespace: "n", Kind: KindCronJob, Name: "b", Container: "init:m", From: "y:1", To: "y:2"}
	const rev = "0123456789012345678901234567890123456789"
	if Hash("prod", rev, []Change{a, b}) != Hash("prod", rev, []Change{b, a}) {
		t.Errorf("hash depends on order")
	}
	c := a
	c.To = "x:3"
	if Hash("prod", rev, []Change{a, b}) == Hash("prod", rev, []Change{c, b}) {
		t.Errorf("hash ignores the target image")
	}
	if Hash("prod", rev, nil) != Hash("prod", rev, []Change{}) {
		t.Errorf("nil and empty changes hash differently")
	}
}

// TestHashBindsEnvironmentAndRevision: the same changes at another revision
// or in another environment are another plan, so an old approval of one
// cannot approve the other.
func TestHashBindsEnvironmentAndRevision(t *testing.T) {
	cs := []Change{{Service: "a", Target: "t", Namespace: "n", Kind: KindDeployment, Name: "a", Container: "app", From: "x:1", To: "x:2"}}
	base := Hash("prod", "1111111111111111111111111111111111111111", cs)
	for name, other := range map[string]string{
		"another revision":                   Hash("prod", "2222222222222222222222222222222222222222", cs),
		"another environment":                Hash("staging", "1111111111111111111111111111111111111111", cs),
		"a field moved across the separator": Hash("prod\n1111111111111111111111111111111111111111", "", cs),
	} {
		if other == base {
			t.Errorf("%s: same hash %s", name, base)
		}
	}
}

func TestPatchBody(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		changes []Change
		want    string
	}{
		{
			name:    "deployment with an init container",
			kind:    KindDeployment,
			changes: []Change{{Container: "app", To: "r/app:2"}, {Container: "init:migrate", To: "r/m:2"}},
			want:    `{"metadata":{"annotations":{"stagehand.io/revision":"abc"}},"spec":{"template":{"spec":{"containers":[{"image":"r/app:2","name":"app"}],"initContainers":[{"image":"r/m:2","name":"migrate"}]}}}}`,
		},
		{
			name:    "cronjob",
			kind:    KindCronJob,
			changes: []Change{{Container: "job", To: "r/job:2"}},
			want:    `{"metadata":{"annotations":{"stagehand.io/revision":"abc"}},"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"r/job:2","name":"job"}]}}}}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := patchBody(tt.kind, "abc", tt.changes)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal([]byte(tt.want), &w)
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLockSegment(t *testing.T) {
	for in, want := range map[string]string{"prod-a": "prod-a", "Web.API_v2": "web-api-v2"} {
		if got := lockSegment(in); got != want {
			t.Errorf("lockSegment(%q) = %q, want %q", in, got, want)
		}
	}
}
