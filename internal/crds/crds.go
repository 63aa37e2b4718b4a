package crds

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	lockcrd "github.com/stagehand-gitops/stagehand/pkg/lock/crd"
)

// RevisionAnnotation holds a definition's revision: a positive integer raised
// with every change of the definition. A definition in the cluster without it
// (or with a value that is not a number) is older than any of ours.
const RevisionAnnotation = "stagehand.io/crd-revision"

// FieldManager is the field manager of Apply's server-side applies.
const FieldManager = "stagehand-crds"

// EnvironmentsFile is the name of the environments.stagehand.io definition's
// YAML, next to this package's source and in the chart's crds/.
const EnvironmentsFile = "environments.stagehand.io.yaml"

//go:embed environments.stagehand.io.yaml
var environments []byte

// Environments returns the YAML of the environments.stagehand.io
// CustomResourceDefinition.
func Environments() []byte { return bytes.Clone(environments) }

// Definition is one CustomResourceDefinition as this build ships it.
type Definition struct {
	// File is the name of its YAML file in the chart's crds/.
	File string
	// YAML is the definition.
	YAML []byte
}

// Definitions are the definitions this build ships: the chart's crds/.
func Definitions() []Definition {
	return []Definition{
		{File: lockcrd.File, YAML: lockcrd.Locks()},
		{File: EnvironmentsFile, YAML: Environments()},
	}
}

// Action is what Apply did with one definition.
type Action string

// The actions.
const (
	// Created: the definition was missing.
	Created Action = "created"
	// Upgraded: the cluster's definition was older (a lower revision, or none).
	Upgraded Action = "upgraded"
	// Current: the cluster's definition has this build's revision; nothing
	// was written.
	Current Action = "current"
	// Newer: the cluster's definition has a higher revision, put there by a
	// newer build; nothing was written.
	Newer Action = "newer"
)

// Result is what Apply did with one definition.
type Result struct {
	Name   string
	Action Action
	// Have is the cluster's revision before Apply (0: none or missing), Want
	// this build's.
	Have, Want int
}

type options struct {
	defs        []Definition
	manager     string
	established time.Duration
	interval    time.Duration
}

// Option configures Apply.
type Option func(*options) error

// WithDefinitions applies defs instead of Definitions().
func WithDefinitions(defs ...Definition) Option {
	return func(o *options) error {
		if len(defs) == 0 {
			return errors.New("WithDefinitions: no definition given")
		}
		o.defs = defs
		return nil
	}
}

// WithEstablishedTimeout bounds how long Apply waits for each definition it
// wrote to be established, and then to be listed by discovery; default 30s
// each.
func WithEstablishedTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("WithEstablishedTimeout: %v is not positive", d)
		}
		o.established = d
		return nil
	}
}

// Apply brings the cluster's definitions up to this build's: each one
// missing is created and each one older is upgraded, by a server-side apply
// with FieldManager that takes over the fields it sets (Helm created them, or
// an older build applied them); one with this build's revision or a newer one
// is left alone. It waits until each definition it wrote is established.
func Apply(ctx context.Context, c apiextensions.Interface, opts ...Option) ([]Result, error) {
	o := options{defs: Definitions(), manager: FieldManager, established: 30 * time.Second, interval: 100 * time.Millisecond}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring CRD apply: %w", err)
		}
	}
	// Every definition is read before any is written: a bad one writes none.
	wants := make([]*apiextensionsv1.CustomResourceDefinition, len(o.defs))
	bodies := make([][]byte, len(o.defs))
	for i, d := range o.defs {
		var err error
		if wants[i], bodies[i], err = parse(d); err != nil {
			return nil, err
		}
	}
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	var out []Result
	for i, d := range o.defs {
		want, body := wants[i], bodies[i]
		r := Result{Name: want.Name, Want: revision(want)}
		have, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			r.Action = Created
		case err != nil:
			return out, fmt.Errorf("reading CRD %s: %w", want.Name, err)
		default:
			r.Have = revision(have)
			switch {
			case r.Have == r.Want:
				r.Action = Current
			case r.Have > r.Want:
				r.Action = Newer
			default:
				r.Action = Upgraded
			}
		}
		if r.Action == Current || r.Action == Newer {
			out = append(out, r)
			continue
		}
		force := true
		if _, err := crds.Patch(ctx, want.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: o.manager, Force: &force}); err != nil {
			return out, fmt.Errorf("applying CRD %s (%s, revision %d over %d): %w", want.Name, d.File, r.Want, r.Have, err)
		}
		if err := established(ctx, crds, want.Name, o); err != nil {
			return out, err
		}
		if err := served(ctx, c.Discovery(), want, o); err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// parse reads d as a CustomResourceDefinition with a revision, and returns it
// with the JSON body of its apply.
func parse(d Definition) (*apiextensionsv1.CustomResourceDefinition, []byte, error) {
	body, err := yaml.YAMLToJSON(d.YAML)
	if err != nil {
		return nil, nil, fmt.Errorf("reading CRD file %s: %w", d.File, err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(d.YAML, &crd); err != nil {
		return nil, nil, fmt.Errorf("reading CRD file %s: %w", d.File, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, nil, fmt.Errorf("reading CRD file %s: kind %q name %q: want a named CustomResourceDefinition", d.File, crd.Kind, crd.Name)
	}
	if revision(&crd) < 1 {
		return nil, nil, fmt.Errorf("reading CRD file %s: annotation %s is %q: want a positive integer", d.File, RevisionAnnotation, crd.Annotations[RevisionAnnotation])
	}
	return &crd, body, nil
}

// revision is crd's RevisionAnnotation, 0 when it has none or not a positive
// number.
func revision(crd *apiextensionsv1.CustomResourceDefinition) int {
	n, err := strconv.Atoi(crd.Annotations[RevisionAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// served waits until the API server's discovery lists want's resource in
// every version it serves (asking every o.interval, within o.established). A
// definition is Established a moment before discovery says so, and a client
// that looks there first (a RESTMapper, `kubectl get`, the reconciler's own
// check for the Environment resources) would take it for missing.
func served(ctx context.Context, d resourceLister, want *apiextensionsv1.CustomResourceDefinition, o options) error {
	for _, v := range want.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := want.Spec.Group + "/" + v.Name
		var last string
		err := wait.PollUntilContextTimeout(ctx, o.interval, o.established, true, func(context.Context) (bool, error) {
			res, err := d.ServerResourcesForGroupVersion(gv)
			if err != nil {
				last = err.Error()
				return false, nil
			}
			for _, r := range res.APIResources {
				if r.Name == want.Spec.Names.Plural {
					return true, nil
				}
			}
			last = "not listed yet"
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for discovery to list %s in %s (%s): %w", want.Spec.Names.Plural, gv, last, err)
		}
	}
	return nil
}

// resourceLister is the part of discovery.DiscoveryInterface served reads.
type resourceLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

var _ resourceLister = discovery.DiscoveryInterface(nil)

type crdClient interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

// established waits until the definition name is established (asking every
// o.interval, for up to o.established), or names the condition it was left in.
func established(ctx context.Context, crds crdClient, name string, o options) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, o.interval, o.established, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			switch {
			case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
				return true, nil
			case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
				return false, fmt.Errorf("CRD %s: names not accepted: %s", name, c.Message)
			}
		}
		last = "not established yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established (%s): %w", name, last, err)
	}
	return nil
}
