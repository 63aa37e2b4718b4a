package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/stagehand-gitops/stagehand/pkg/lock"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/registry"
	"github.com/stagehand-gitops/stagehand/pkg/workload"
)

// Target is one cluster and namespace an environment deploys to.
type Target struct {
	Name      string
	Namespace string
	Client    kubernetes.Interface
	// Dynamic, when set, reaches the workload kinds served by a
	// CustomResourceDefinition (Argo Rollouts' Rollout); without it the
	// target has none of them.
	Dynamic dynamic.Interface
	// Recorder, when set, receives the per-workload Events (the daemon sets
	// fluxcd's events.Recorder over an EventWriter). When nil, an EventWriter
	// writes them through Client. Apply waits for its calls to return, so a
	// recorder that writes before returning has every Event written by then.
	Recorder record.EventRecorder
}

// cluster is what reaches t's workloads.
func (t Target) cluster() workload.Cluster {
	return workload.Cluster{Client: t.Client, Dynamic: t.Dynamic}
}

// Request is what to plan or apply: an environment's resolved manifest at a
// revision, against its targets.
type Request struct {
	Environment *manifest.Environment
	Revision    string
	Targets     []Target
	// LockPath is the environment's lock path prefix; a change is checked at
	// "<LockPath>/<target>/<service>".
	LockPath string
}

func (req Request) validate() error {
	if req.Environment == nil {
		return errors.New("planning: no environment")
	}
	if len(req.Targets) == 0 {
		return fmt.Errorf("planning %s: no targets", req.Environment.Name)
	}
	seen := map[string]bool{}
	for _, t := range req.Targets {
		if t.Name == "" || t.Namespace == "" || t.Client == nil {
			return fmt.Errorf("planning %s: target %q needs a name, a namespace and a client", req.Environment.Name, t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("planning %s: duplicate target %q", req.Environment.Name, t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// inventory is what one List per kind, or the target's watches, found in a
// target.
type inventory struct {
	target    Target
	workloads []*workload.Workload
	byLabel   map[string][]*workload.Workload
	byName    map[string][]*workload.Workload
	label     string
	err       error // the target could not be read: every service has this problem
}

func newInventory(t Target, label string) *inventory {
	return &inventory{target: t, label: label, byLabel: map[string][]*workload.Workload{}, byName: map[string][]*workload.Workload{}}
}

func (inv *inventory) add(w *workload.Workload) {
	if w.CanaryPrimary {
		return // Flagger's copy of a Canary's target, not a workload of a service
	}
	inv.workloads = append(inv.workloads, w)
	if v, ok := w.Labels[inv.label]; ok {
		inv.byLabel[v] = append(inv.byLabel[v], w)
	}
	inv.byName[w.Name] = append(inv.byName[w.Name], w)
}

// inventory reads t's workloads: from its watches while Watch runs (unless
// live), else with one List per kind. Either way it waits at most the
// target timeout.
func (pl *planner) inventory(ctx context.Context, t Target, services []manifest.Service, live bool) *inventory {
	if !live {
		if tw := pl.cache.of(t, pl.o.selectorLabel); tw != nil {
			inv, err := tw.inventory(ctx, t, pl.o.selectorLabel, pl.o.targetTimeout)
			if err == nil {
				inv, err = pl.getUnlabelled(ctx, inv, services)
			}
			if err != nil {
				inv = newInventory(t, pl.o.selectorLabel)
				inv.err = err
			}
			return inv
		}
	}
	inv := newInventory(t, pl.o.selectorLabel)
	ctx, cancel := context.WithTimeout(ctx, pl.o.targetTimeout)
	defer cancel()
	start := time.Now()
	// The kinds are listed at once: an apply's plan waits for the slowest
	// List, not for the sum of four round trips.
	lists := make([][]*workload.Workload, workload.Count)
	errs := make([]error, workload.Count)
	var wg sync.WaitGroup
	for i := range workload.Count {
		wg.Go(func() { lists[i], errs[i] = workload.List(ctx, t.cluster(), t.Namespace, workload.At(i).Name()) })
	}
	wg.Wait()
	for i := range workload.Count {
		if errs[i] != nil {
			inv.err = unreachable(t.Name, start, errs[i])
			return inv
		}
		for _, w := range lists[i] {
			inv.add(w)
		}
	}
	return inv
}

// unreachable is err as an *UnreachableError when it says the target did
// not answer (a timeout, a refused connection), else err naming the target.
func unreachable(target string, since time.Time, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsServiceUnavailable(err) {
		return fmt.Errorf("target %s: %w", target, err)
	}
	return &UnreachableError{Target: target, Since: since, Err: err}
}

// getUnlabelled reads, for each service without a labelled workload in the
// watched inv, the workloads named like it (the watches hold only labelled
// ones): one Get per kind. It returns inv, or a copy with what it found: inv
// is shared with other plans.
func (pl *planner) getUnlabelled(ctx context.Context, inv *inventory, services []manifest.Service) (*inventory, error) {
	var names []string
	for _, s := range services {
		if len(s.Containers) > 0 && len(inv.byLabel[s.Name]) == 0 {
			names = append(names, s.Name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, pl.o.targetTimeout)
	defer cancel()
	start := time.Now()
	found := make([][]*workload.Workload, len(names))
	err := forEach(len(names), pl.o.concurrency, func(i int) error {
		for k := range workload.Count {
			w, err := workload.Get(ctx, inv.target.cluster(), workload.At(k).Name(), types.NamespacedName{Namespace: inv.target.Namespace, Name: names[i]})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return unreachable(inv.target.Name, start, err)
			}
			if _, labelled := w.Labels[pl.o.selectorLabel]; !labelled && !w.CanaryPrimary {
				found[i] = append(found[i], w)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var more []*workload.Workload
	for _, ws := range found {
		more = append(more, ws...)
	}
	if len(more) == 0 {
		return inv, nil
	}
	own := *inv
	own.workloads = append(slices.Clip(inv.workloads), more...)
	own.byName = maps.Clone(inv.byName)
	for _, w := range more { // unlabelled: never in byLabel
		own.byName[w.Name] = append(slices.Clip(own.byName[w.Name]), w)
	}
	return &own, nil
}

// inventories reads every target concurrently; a target that cannot be
// read has its inventory's err set, and does not hold up the others.
func (pl *planner) inventories(ctx context.Context, targets []Target, services []manifest.Service, live bool) []*inventory {
	out := make([]*inventory, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { out[i] = pl.inventory(ctx, t, services, live) })
	}
	wg.Wait()
	return out
}

// workloadsOf returns the workloads of service in inv: those labelled with
// it, else those named like it that carry no selector label.
func (pl *planner) workloadsOf(inv *inventory, service string) []*workload.Workload {
	if ws := inv.byLabel[service]; len(ws) > 0 {
		return ws
	}
	var out []*workload.Workload
	for _, w := range inv.byName[service] {
		if _, labelled := w.Labels[pl.o.selectorLabel]; !labelled {
			out = append(out, w)
		}
	}
	return out
}

// planner computes plans: it reads each target's workloads (its watches,
// or Lists), binds the services' containers to them, resolves images with
// the registry and has the lock gate set aside what a lock forbids.
type planner struct {
	o     *options
	cache *watchCache
	locks *lockGate
}

// binding is one manifest container matched to one pod-template container.
type binding struct {
	service string
	target  Target
	w       *workload.Workload
	pc      workload.Container
	running imageRef
	want    manifest.Container
}

// Plan computes what applying req would change. It reads each target's
// watches (while Watch runs) or lists each workload kind once per target,
// and resolves each distinct image once. A target that cannot be read within
// the target timeout gives each service a problem there (ErrUnreachable's
// message: "target … unreachable since …"); the other targets are planned.
func (r *Reconciler) Plan(ctx context.Context, req Request) (*Plan, error) {
	return r.planner.plan(ctx, req, false)
}

// plan is Plan; live reads the targets with Lists even while Watch runs.
func (pl *planner) plan(ctx context.Context, req Request, live bool) (*Plan, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	var locks *lockCheck
	if live {
		// Apply's plan reads the API servers, not the watches: the lock
		// check goes beside the Lists instead of after them.
		locks = pl.locks.query(ctx, req)
	}
	invs := pl.inventories(ctx, req.Targets, req.Environment.Services, live)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("planning %s: %w", req.Environment.Name, err)
	}
	p := &Plan{
		Environment:      req.Environment.Name,
		Revision:         req.Revision,
		SkipConfirmation: req.Environment.SkipConfirmation,
	}
	type svcTarget struct{ service, target string }
	broken := map[svcTarget]bool{}
	problem := func(service, target, format string, a ...any) {
		p.Problems = append(p.Problems, Problem{Service: service, Target: target, Message: fmt.Sprintf(format, a...)})
		broken[svcTarget{service, target}] = true
	}

	reachable := invs[:0:0]
	for _, inv := range invs {
		if inv.err == nil {
			reachable = append(reachable, inv)
			continue
		}
		for _, s := range req.Environment.Services {
			if len(s.Containers) > 0 {
				problem(s.Name, inv.target.Name, "%v", inv.err)
				p.Problems[len(p.Problems)-1].Unreachable = errors.Is(inv.err, ErrUnreachable)
			}
		}
	}
	bindings := pl.mapServices(p, reachable, req.Environment.Services, problem)
	res := pl.resolveBindings(ctx, bindings)
	for _, b := range bindings {
		if broken[svcTarget{b.service, b.target.Name}] {
			continue
		}
		to, msg := pl.desired(b, res)
		if msg != "" {
			problem(b.service, b.target.Name, "%s", msg)
			continue
		}
		if to == b.pc.Image {
			p.Unchanged++
			continue
		}
		p.Changes = append(p.Changes, Change{
			Service: b.service, Target: b.target.Name, Namespace: b.w.Namespace,
			Kind: b.w.Kind, Name: b.w.Name, Container: b.pc.Name, From: b.pc.Image, To: to,
		})
	}
	// A problem found late (registry) drops changes already collected.
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		if !broken[svcTarget{c.Service, c.Target}] {
			kept = append(kept, c)
		}
	}
	p.Changes = kept
	if err := pl.locks.block(ctx, p, lockScope{prefix: req.LockPath, begun: locks, live: live}); err != nil {
		return nil, fmt.Errorf("planning %s: %w", req.Environment.Name, err)
	}
	p.finish()
	return p, nil
}

// mapServices binds the services' containers to workload containers in
// every inventory, and lists in p the labelled workloads no service names.
func (pl *planner) mapServices(p *Plan, invs []*inventory, services []manifest.Service, problem func(service, target, format string, a ...any)) []binding {
	known := map[string]bool{}
	for _, s := range services {
		known[s.Name] = true
	}
	var bindings []binding
	for _, inv := range invs {
		t := inv.target
		for _, w := range inv.workloads {
			if v, ok := w.Labels[pl.o.selectorLabel]; ok && !known[v] {
				p.Unmanaged = append(p.Unmanaged, Unmanaged{Target: t.Name, Namespace: t.Namespace, Kind: w.Kind, Name: w.Name, Service: v})
			}
		}
		for _, s := range services {
			if len(s.Containers) == 0 {
				continue
			}
			ws := pl.workloadsOf(inv, s.Name)
			if len(ws) == 0 {
				problem(s.Name, t.Name, "no %s labelled %s=%s or named %s in namespace %s",
					workload.Names(t.cluster()), pl.o.selectorLabel, s.Name, s.Name, t.Namespace)
				continue
			}
			bindings = append(bindings, pl.bind(s, t, ws, problem)...)
		}
	}
	return bindings
}

// bind matches each container of s to exactly one pod-template container in
// the service's workloads, reporting missing and ambiguous matches.
func (pl *planner) bind(s manifest.Service, t Target, ws []*workload.Workload, problem func(service, target, format string, a ...any)) []binding {
	var out []binding
	claimed := map[string]string{} // workload kind/name/container -> dockerName
	for _, mc := range s.Containers {
		dockerName := mc.DockerName
		if dockerName == "" {
			dockerName = s.Name
		}
		found := 0
		for _, w := range ws {
			var hits []workload.Container
			for _, pc := range w.Containers {
				if parseImage(pc.Image).matches(dockerName) {
					hits = append(hits, pc)
				}
			}
			switch {
			case len(hits) > 1:
				names := make([]string, len(hits))
				for i, h := range hits {
					names[i] = h.Name
				}
				problem(s.Name, t.Name, "ambiguous image %s: containers %s of %s %s/%s all match",
					dockerName, strings.Join(names, ", "), w.Kind, w.Namespace, w.Name)
				found++
			case len(hits) == 1:
				found++
				id := w.Kind + "/" + w.Name + "/" + hits[0].Name
				if other, ok := claimed[id]; ok {
					problem(s.Name, t.Name, "ambiguous image: container %s of %s %s/%s matches both %s and %s",
						hits[0].Name, w.Kind, w.Namespace, w.Name, other, dockerName)
					continue
				}
				claimed[id] = dockerName
				mc.DockerName = dockerName
				out = append(out, binding{service: s.Name, target: t, w: w, pc: hits[0], running: parseImage(hits[0].Image), want: mc})
			}
		}
		if found == 0 {
			names := make([]string, len(ws))
			for i, w := range ws {
				names[i] = w.Kind + "/" + w.Name
			}
			problem(s.Name, t.Name, "no container whose image repository is or ends with /%s in %s (namespace %s)",
				dockerName, strings.Join(names, ", "), t.Namespace)
		}
	}
	return out
}

// resolveBindings asks the registry about each distinct repository:tag that
// verification or pinning needs, once per pull context when credentials are
// per workload (pkg/registry). A cached digest that disagrees with a
// dockerDigest to verify is asked again, so a tag moved within the cache's
// TTL is never reported as a mismatch.
func (pl *planner) resolveBindings(ctx context.Context, bs []binding) map[registry.Key]registry.Resolution {
	seen := map[registry.Key]bool{}
	var keys []registry.Key
	kcs := pl.o.resolver.Session()
	for _, b := range bs {
		if (b.want.DockerDigest != "" && pl.o.verifyDigests) || (b.want.DockerDigest == "" && pl.o.pinDigests) {
			k := pl.imageKeyOf(b)
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
				kcs.Add(pl.pullOf(b.target, b.w))
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	res := kcs.ResolveAll(ctx, keys, false)
	var again []registry.Key
	for _, b := range bs {
		k := pl.imageKeyOf(b)
		if got, ok := res[k]; ok && got.Cached && b.want.DockerDigest != "" && got.Digest != b.want.DockerDigest && !slices.Contains(again, k) {
			again = append(again, k)
		}
	}
	if len(again) > 0 {
		maps.Copy(res, kcs.ResolveAll(ctx, again, true))
	}
	return res
}

// pullOf returns the pull context of w in t; the zero key when credentials
// are not per workload.
func (pl *planner) pullOf(t Target, w *workload.Workload) (registry.Pull, registry.PullContext) {
	if pl.o.registry.Keychains == nil {
		return registry.Pull{}, registry.PullContext{}
	}
	pc := registry.PullContext{Target: t.Name, Client: t.Client, Namespace: w.Namespace, ServiceAccount: w.ServiceAccount}
	for _, s := range w.PullSecrets {
		if s.Name != "" && !slices.Contains(pc.ImagePullSecrets, s.Name) {
			pc.ImagePullSecrets = append(pc.ImagePullSecrets, s.Name)
		}
	}
	return pc.Key(), pc
}

// imageKeyOf is what b's wanted image is resolved as.
func (pl *planner) imageKeyOf(b binding) registry.Key {
	pk, _ := pl.pullOf(b.target, b.w)
	return registry.Key{Repository: b.running.Repository, Tag: b.want.DockerTag, Pull: pk}
}

// desired returns the image b should run, or a problem message.
func (pl *planner) desired(b binding, res map[registry.Key]registry.Resolution) (string, string) {
	want := imageRef{Repository: b.running.Repository, Tag: b.want.DockerTag, Digest: b.want.DockerDigest}
	k := pl.imageKeyOf(b)
	switch {
	case want.Digest != "" && pl.o.verifyDigests:
		got := res[k]
		if errors.Is(got.Err, registry.ErrTagNotFound) {
			return "", fmt.Sprintf("cannot verify dockerDigest %s: the registry has no tag %s", want.Digest, k)
		}
		if got.Err != nil {
			return "", fmt.Sprintf("cannot verify dockerDigest %s of %s: %v", want.Digest, k, got.Err)
		}
		if got.Digest != want.Digest {
			return "", fmt.Sprintf("dockerDigest %s does not match the registry: %s is %s", want.Digest, k, got.Digest)
		}
	case want.Digest == "" && pl.o.pinDigests:
		got := res[k]
		if errors.Is(got.Err, registry.ErrTagNotFound) {
			return "", fmt.Sprintf("cannot pin a digest: the registry has no tag %s", k)
		}
		if got.Err != nil {
			return "", fmt.Sprintf("cannot pin a digest for %s: %v", k, got.Err)
		}
		want.Digest = got.Digest
	}
	return want.String(), ""
}

// forEach runs fn(0) … fn(n-1), at most limit at a time, and joins their errors.
func forEach(n, limit int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(1, limit))
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lockSegment makes a target or service name a valid lock path segment
// (lowercase letters, digits and dashes).
func lockSegment(s string) string { return lock.Segment(s) }
