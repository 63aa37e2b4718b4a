package workload

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJudgeCanary holds JudgeCanary's reading of each phase. The statuses
// are those Flagger 1.36 wrote in internal/flagger's runs (a Canary of
// Deployment web, three iterations, the kubernetes provider), with the
// weights of a mesh's canary for the weight case; internal/flagger proves
// the judgement against the running Flagger.
func TestJudgeCanary(t *testing.T) {
	const (
		before = "99fc45864"  // lastAppliedSpec at initialisation (web:1.0)
		after  = "547f97bd9f" // after the patch to web:2.0
	)
	canary := func(status string, analysis string) *Canary {
		t.Helper()
		doc := `{"metadata": {"name": "web", "namespace": "shop"},
			"spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "analysis": ` + analysis + `},
			"status": ` + status + `}`
		var c Canary
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	iterations := `{"interval": "10s", "threshold": 2, "iterations": 3}`
	runs := func(b bool, err error) func() (string, bool, error) {
		return func() (string, bool, error) { return "web-primary", b, err }
	}
	tests := []struct {
		name     string
		c        *Canary
		primary  func() (string, bool, error)
		want     Status
		deleting bool
	}{
		{
			name:    "initialized, not taken up yet",
			c:       canary(`{"phase": "Initialized", "lastAppliedSpec": "`+before+`", "lastPromotedSpec": "`+before+`"}`, iterations),
			primary: runs(false, nil),
			want:    Status{Message: "waiting for Flagger to start the analysis of canary web (Initialized)"},
		},
		{
			name:    "failed before, not taken up yet: not this apply's failure",
			c:       canary(`{"phase": "Failed", "lastAppliedSpec": "`+before+`"}`, iterations),
			primary: runs(false, nil),
			want:    Status{Message: "waiting for Flagger to start the analysis of canary web (Failed)"},
		},
		{
			name:    "the template Flagger promoted last: nothing to analyse",
			c:       canary(`{"phase": "Failed", "lastAppliedSpec": "`+before+`"}`, iterations),
			primary: runs(true, nil),
			want:    Status{Done: true, Message: "canary web: the primary web-primary runs the new images already (nothing for Flagger to analyse)"},
		},
		{
			name: "progressing",
			c: canary(`{"phase": "Progressing", "iterations": 2, "lastAppliedSpec": "`+after+`",
				"conditions": [{"type": "Promoted", "status": "Unknown", "reason": "Progressing", "message": "New revision detected, progressing canary analysis."}]}`, iterations),
			want: Status{Message: "canary analysing: 2 of 3 iterations"},
		},
		{
			name: "progressing with a failed check",
			c:    canary(`{"phase": "Progressing", "iterations": 1, "failedChecks": 1, "lastAppliedSpec": "`+after+`"}`, iterations),
			want: Status{Message: "canary analysing: 1 of 3 iterations, 1 of 2 failed checks allowed"},
		},
		{
			name: "progressing by weight",
			c:    canary(`{"phase": "Progressing", "canaryWeight": 20, "lastAppliedSpec": "`+after+`"}`, `{"interval": "1m", "maxWeight": 50, "stepWeight": 10}`),
			want: Status{Message: "canary analysing: weight 20 of 50"},
		},
		{
			name: "waiting for promotion",
			c:    canary(`{"phase": "WaitingPromotion", "iterations": 2, "lastAppliedSpec": "`+after+`"}`, iterations),
			want: Status{Message: "canary web analysed, waiting for its confirm-promotion webhook"},
		},
		{
			name: "finalising",
			c:    canary(`{"phase": "Finalising", "lastAppliedSpec": "`+after+`"}`, iterations),
			want: Status{Message: "canary web passed its analysis: Flagger is promoting it (Finalising)"},
		},
		{
			name:    "succeeded",
			c:       canary(`{"phase": "Succeeded", "lastAppliedSpec": "`+after+`", "lastPromotedSpec": "`+after+`"}`, iterations),
			primary: runs(true, nil),
			want:    Status{Done: true, Message: "canary web succeeded: Flagger promoted the new images to web-primary"},
		},
		{
			name:    "succeeded with another template",
			c:       canary(`{"phase": "Succeeded", "lastAppliedSpec": "7bf8f59bc4", "lastPromotedSpec": "7bf8f59bc4"}`, iterations),
			primary: runs(false, nil),
			want: Status{Failed: true, Message: "canary web succeeded, but its primary web-primary does not run the images of this apply: " +
				"Flagger promoted another pod template"},
		},
		{
			name:    "succeeded, primary unreadable",
			c:       canary(`{"phase": "Succeeded", "lastAppliedSpec": "`+after+`"}`, iterations),
			primary: runs(false, errors.New("reading Deployment shop/web-primary: timeout")),
			want:    Status{Message: "reading status: reading Deployment shop/web-primary: timeout"},
		},
		{
			name: "failed",
			c: canary(`{"phase": "Failed", "lastAppliedSpec": "`+after+`",
				"conditions": [{"type": "Promoted", "status": "False", "reason": "Failed", "message": "Canary analysis failed, Deployment scaled to zero."}]}`, iterations),
			want: Status{Failed: true, Message: "canary web failed: Canary analysis failed, Deployment scaled to zero; Flagger rolled back: its primary serves the images from before"},
		},
		{
			name:     "being deleted",
			c:        canary(`{"phase": "Succeeded", "lastAppliedSpec": "`+after+`"}`, iterations),
			deleting: true,
			want:     Status{Failed: true, Message: "the Flagger Canary web is being deleted"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.deleting {
				tc.c.Metadata.DeletionTimestamp = &metav1.Time{}
			}
			primary := tc.primary
			if primary == nil {
				primary = func() (string, bool, error) { t.Fatal("the primary was read"); return "", false, nil }
			}
			got := JudgeCanary(tc.c, before, primary)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(Status{})); diff != "" {
				t.Errorf("JudgeCanary (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCanaryPrimary: only a workload a flagger.app Canary controls is a
// primary; one it merely owns, or another controller's, is not.
func TestCanaryPrimary(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{"none", nil, false},
		{"controlled by a Canary", []metav1.OwnerReference{{APIVersion: "flagger.app/v1beta1", Kind: "Canary", Name: "web", Controller: &yes}}, true},
		{"owned, not controlled", []metav1.OwnerReference{{APIVersion: "flagger.app/v1beta1", Kind: "Canary", Name: "web", Controller: &no}}, false},
		{"another group's Canary", []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Canary", Name: "web", Controller: &yes}}, false},
		{"a Rollout", []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", Controller: &yes}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := canaryPrimary(&metav1.ObjectMeta{OwnerReferences: tc.owners}); got != tc.want {
				t.Errorf("canaryPrimary = %t, want %t", got, tc.want)
			}
		})
	}
}
