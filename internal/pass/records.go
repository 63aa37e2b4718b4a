package pass

import (
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/state"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// The records every step writes with, and reads back: a pending plan's
// plan, the changes an entry or in-flight record keeps, the manifest a
// history entry keeps, the phase once an apply in flight is dropped.

// DecodePlan reads the plan of p, env's pending plan; when it cannot, it
// says why and returns a plan that has only p's environment, revision and
// planHash.
func DecodePlan(env string, p *approval.Pending) (*reconcile.Plan, error) {
	var plan reconcile.Plan
	if err := json.Unmarshal(p.Plan, &plan); err != nil {
		return &reconcile.Plan{Environment: env, Revision: p.Revision, PlanHash: p.PlanHash},
			fmt.Errorf("decoding the pending plan %s of environment %s: %w", p.PlanHash, env, err)
	}
	return &plan, nil
}

// ChangesJSON is cs as a record keeps them ([] for none).
func ChangesJSON(cs []reconcile.Change) json.RawMessage {
	if cs == nil {
		cs = []reconcile.Change{}
	}
	b, err := json.Marshal(cs)
	if err != nil { // plain strings: cannot happen
		panic(fmt.Sprintf("encoding changes: %v", err))
	}
	return b
}

// NotApplying is the phase of st once its apply in flight is dropped
// unrecorded (it did not start, or what is left of it was not approved):
// the pending plan's, or at rest.
func NotApplying(st *state.EnvState) status.Phase {
	if st.Pending != nil && !st.Pending.Release {
		return status.PhaseAwaitingApproval
	}
	return st.AtRest()
}

// ResolvedManifest is envM as a history entry keeps it, with the git blob
// hash of every file it read in s. nil when envM is nil. A file whose hash
// cannot be read (it vanished from the cache) is kept with an empty hash.
func ResolvedManifest(s gitsource.Snapshot, envM *manifest.Environment) *approval.Manifest {
	if envM == nil {
		return nil
	}
	m := &approval.Manifest{Root: envM.Root, Services: envM.Services, Layout: envM.Layout, Files: []approval.File{}}
	if m.Services == nil {
		m.Services = []manifest.Service{}
	}
	seen := map[string]bool{}
	envM.Layout.Walk(func(l *manifest.Layout) {
		if seen[l.File] {
			return
		}
		seen[l.File] = true
		m.Files = append(m.Files, approval.File{Path: l.File, Blob: blobHash(s.FS, l.File)})
	})
	return m
}

// blobHash is the git blob hash of name in fsys: the tree entry's when fsys
// is a git tree (pkg/gitsource's TreeFS), else computed from the content.
func blobHash(fsys fs.FS, name string) string {
	if fsys == nil {
		return ""
	}
	if fi, err := fs.Stat(fsys, name); err == nil {
		if e, ok := fi.Sys().(*object.TreeEntry); ok && e != nil {
			return e.Hash.String()
		}
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return ""
	}
	return plumbing.ComputeHash(plumbing.BlobObject, b).String()
}
