package crds

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// lister is discovery that lists widgets in test.stagehand.io/v1 from its
// after-th read on (0: never), and the group version itself from the first.
type lister struct {
	after int64
	reads atomic.Int64
}

func (l *lister) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	n := l.reads.Add(1)
	if gv != "test.stagehand.io/v1" {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "gadgets"}}}
	if l.after > 0 && n >= l.after {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: "widgets"})
	}
	return list, nil
}

// TestServed: Apply's wait for discovery ends once discovery lists the
// definition's resource in every version it serves (a version not served is
// not waited for), and otherwise fails naming the resource and the group
// version. A definition is Established a moment before discovery lists it,
// and a check of discovery made at once took the Environment resources for
// missing.
func TestServed(t *testing.T) {
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.stagehand.io", Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets"}, Versions: versions}}
	}
	v1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true}
	v0 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v0", Served: false}
	o := options{established: 300 * time.Millisecond, interval: time.Millisecond}
	tests := []struct {
		name      string
		crd       *apiextensionsv1.CustomResourceDefinition
		after     int64
		wantReads int64
		wantErr   string
	}{
		{name: "listed at once", crd: crd(v1), after: 1, wantReads: 1},
		{name: "listed at the fourth read", crd: crd(v1), after: 4, wantReads: 4},
		{name: "a version not served is not waited for", crd: crd(v0, v1), after: 1, wantReads: 1},
		{name: "never listed", crd: crd(v1), wantErr: "waiting for discovery to list widgets in test.stagehand.io/v1 (not listed yet)"},
		{name: "a group version never served", crd: crd(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true}),
			wantErr: `waiting for discovery to list widgets in test.stagehand.io/v2 ( "test.stagehand.io/v2" not found)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &lister{after: tt.after}
			err := served(context.Background(), l, tt.crd, o)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("served: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("served: %v, want an error starting %q", err, tt.wantErr)
			case tt.wantErr == "" && l.reads.Load() != tt.wantReads:
				t.Errorf("served read discovery %d times, want %d", l.reads.Load(), tt.wantReads)
			}
		})
	}
}
