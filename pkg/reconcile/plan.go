package reconcile

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// Workload kinds a service maps to.
const (
	KindDeployment  = workload.KindDeployment
	KindStatefulSet = workload.KindStatefulSet
	KindDaemonSet   = workload.KindDaemonSet
	KindCronJob     = workload.KindCronJob
	KindRollout     = workload.KindRollout // Argo Rollouts' Rollout
)

// RolloutGVR is the resource of Argo Rollouts' Rollouts.
var RolloutGVR = workload.RolloutGVR

// InitPrefix marks an init container in Change.Container ("init:migrate");
// Kubernetes container names cannot contain a colon, so it never collides.
const InitPrefix = workload.InitPrefix

// Plan is what applying an environment's manifest at a revision would change.
// Its JSON is the `reconciler plan -o json` contract.
type Plan struct {
	Environment      string      `json:"environment"`
	Revision         string      `json:"revision"`
	SkipConfirmation bool        `json:"skipConfirmation"`
	PlanHash         string      `json:"planHash"`
	Changes          []Change    `json:"changes"`
	Blocked          []Blocked   `json:"blocked"`
	Problems         []Problem   `json:"problems"`
	Unmanaged        []Unmanaged `json:"unmanaged"`
	// Unchanged counts the mapped containers already running the desired image.
	Unchanged int `json:"unchanged"`
	// HistoryRewritten, set by the caller that knows what was applied, is
	// the last applied revision that Revision does not descend from (a
	// force-push, history rewound); empty when history moved forward.
	HistoryRewritten string `json:"historyRewritten,omitempty"`
}

// Change is one container image to change in one workload.
type Change struct {
	Service   string `json:"service"`
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Container is the container's name, or InitPrefix + name for an init container.
	Container string `json:"container"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// Blocked is a change a deploy lock forbids; it is not applied.
type Blocked struct {
	Change
	// Locks are the human messages of the locks that block the change.
	Locks []string `json:"locks"`
}

// Problem is why a service is not (fully) applied in a target: no workload,
// an ambiguous or missing container, a registry error or a digest mismatch,
// or a target that does not answer. The service's changes in that target are
// left out of the plan.
type Problem struct {
	Service string `json:"service"`
	Target  string `json:"target"`
	Message string `json:"message"`
	// Unreachable is true when the target's API server did not answer
	// (ErrUnreachable): what the service needs there is unknown.
	Unreachable bool `json:"unreachable,omitempty"`
}

// UnreachableTargets lists, sorted, the targets the plan could not read;
// their services' changes are not in the plan.
func (p *Plan) UnreachableTargets() []string {
	var out []string
	for _, pr := range p.Problems {
		if pr.Unreachable && !slices.Contains(out, pr.Target) {
			out = append(out, pr.Target)
		}
	}
	slices.Sort(out)
	return out
}

// Unmanaged is a workload labelled with the selector label whose value names
// no service of the manifest.
type Unmanaged struct {
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// Service is the workload's selector label value.
	Service string `json:"service"`
}

// WorkloadKey names one workload in one target.
type WorkloadKey struct {
	Target    string `json:"target"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// Key returns the workload the change is in.
func (c Change) Key() WorkloadKey {
	return WorkloadKey{Target: c.Target, Namespace: c.Namespace, Kind: c.Kind, Name: c.Name}
}

// IsInit reports whether the change is to an init container.
func (c Change) IsInit() bool { return strings.HasPrefix(c.Container, InitPrefix) }

// ContainerName returns the container's name without InitPrefix.
func (c Change) ContainerName() string { return strings.TrimPrefix(c.Container, InitPrefix) }

func (k WorkloadKey) String() string {
	return fmt.Sprintf("%s/%s %s/%s", k.Target, k.Namespace, k.Kind, k.Name)
}

func compareChanges(a, b Change) int {
	return cmp.Or(
		cmp.Compare(a.Target, b.Target),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Container, b.Container),
		cmp.Compare(a.Service, b.Service),
		cmp.Compare(a.From, b.From),
		cmp.Compare(a.To, b.To),
	)
}

// Hash returns the sha256 (hex, "sha256:" prefixed) of environment, revision
// and the canonical JSON of changes (sorted by target, namespace, kind, name
// and container, encoded with the Change field order and no white space),
// each followed by a newline. Binding the environment and the revision means
// an approval of one plan can never approve an identical plan that comes back
// later at another revision or in another environment.
func Hash(environment, revision string, changes []Change) string {
	sorted := slices.Clone(changes)
	if sorted == nil {
		sorted = []Change{}
	}
	slices.SortFunc(sorted, compareChanges)
	b, err := json.Marshal(sorted)
	if err != nil { // a slice of structs of strings always encodes
		panic(fmt.Sprintf("encoding changes: %v", err))
	}
	h := sha256.New()
	h.Write([]byte(environment + "\n" + revision + "\n"))
	h.Write(b)
	h.Write([]byte("\n"))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// finish sorts every list, makes nil lists empty (so JSON shows []) and sets
// the hash.
func (p *Plan) finish() {
	if p.Changes == nil {
		p.Changes = []Change{}
	}
	if p.Blocked == nil {
		p.Blocked = []Blocked{}
	}
	if p.Problems == nil {
		p.Problems = []Problem{}
	}
	if p.Unmanaged == nil {
		p.Unmanaged = []Unmanaged{}
	}
	slices.SortFunc(p.Changes, compareChanges)
	slices.SortFunc(p.Blocked, func(a, b Blocked) int { return compareChanges(a.Change, b.Change) })
	slices.SortFunc(p.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Message, b.Message))
	})
	p.Problems = slices.Compact(p.Problems)
	slices.SortFunc(p.Unmanaged, func(a, b Unmanaged) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	p.PlanHash = Hash(p.Environment, p.Revision, p.Changes)
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

// Workloads returns the distinct workloads the plan's changes touch, sorted.
func (p *Plan) Workloads() []WorkloadKey {
	var keys []WorkloadKey
	for _, c := range p.Changes {
		if len(keys) == 0 || keys[len(keys)-1] != c.Key() {
			keys = append(keys, c.Key())
		}
	}
	return keys
}
