package keyless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/prbot"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// conventionalFile is the file a repository owns by its name when
// pipeline.yaml's owners does not list that name: the repository path's
// last segment, exactly as the verified claim spells it, followed by
// ".json" (acme/checkout-api owns checkout-api.json). Nothing is trimmed or
// cleaned: acme/manifest.json owns manifest.json.json, not manifest.json.
// "" when the segment makes no file name.
func conventionalFile(repo string) string {
	seg := repo[strings.LastIndex(repo, "/")+1:]
	name := seg + ".json"
	if seg == "." || seg == ".." || !prbot.ValidFileName(name) {
		return ""
	}
	return name
}

// basis is what the ownership rules of a bump are judged on: pipeline.yaml
// and the base branch's head commit whose files are read, once for every
// rule.
type basis struct {
	pipeline *promote.Pipeline
	ref      string
}

// byName checks a bump of req.File that the caller may do only because the
// file is named after its repository (conventional ownership, not an
// owners entry), against the manifests at at.ref:
//   - a root manifest (environments/<env>/manifest.json) is never owned by
//     a name: rollbacks and promotions write overrides there;
//   - a file included from more than one place, by any environment, is
//     never owned by a name: a bump would change what others deploy;
//   - the name is matched exactly: a file spelled like the repository but
//     for case is refused (and named);
//   - every environment deploying the file (and the bumped one) must apply
//     without an approval (skipConfirmation, and no approval task before
//     the deployment): where a person approves, only files owners names
//     may be bumped keylessly.
//
// A refusal is a 403 NotOwner naming the file and the rule.
func (a *BumpAPI) byName(ctx context.Context, at basis, req prbot.BumpRequest, repo string) error {
	pl, ref := at.pipeline, at.ref
	rel := path.Join("environments", req.Env, req.File)
	file := a.bot.Path(rel)
	if req.File == "manifest.json" {
		return refuse(http.StatusForbidden, "NotOwner", "repository %s may not bump %s: a root manifest is never owned by a repository's name, only by an entry in %s's owners", repo, file, pl.File)
	}
	fsys, err := a.bot.Snapshot(ctx, ref)
	if err != nil {
		return err
	}
	if _, err := fs.Stat(fsys, file); errors.Is(err, fs.ErrNotExist) {
		if folded := foldedNames(fsys, path.Dir(file), req.File); len(folded) > 0 {
			return refuse(http.StatusForbidden, "NotOwner", "repository %s may not bump %s: a repository owns by its name only the file spelled exactly like it, case included (%s does not exist); an entry in %s's owners can give it another file", repo, strings.Join(folded, ", "), file, pl.File)
		}
	} else if err != nil {
		return fmt.Errorf("reading %s at %s: %w", file, ref, err)
	}

	envs, err := manifest.Environments(fsys, a.bot.Root())
	if err != nil {
		return fmt.Errorf("listing environments at %s: %w", ref, err)
	}
	var (
		places    []string            // files that include file, once per include
		deployers = map[string]bool{} // environments whose resolution includes file
		resolved  = map[string]*manifest.Environment{}
	)
	for _, env := range envs {
		e, err := manifest.Resolve(ctx, manifest.Repo{FS: fsys, Root: a.bot.Root()}, env, a.bot.ManifestOptions()...)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("resolving environment %s at %s: %w", env, ref, err)
			}
			return refuse(http.StatusConflict, "Conflict", "repository %s may not bump %s by its name: environment %s does not resolve at %s, so whether it includes the file is unknown (%v)", repo, file, env, ref, err)
		}
		resolved[env] = e
		walkIncludes(e.Layout, func(parent, child string) {
			if child == file {
				places = append(places, parent)
				deployers[env] = true
			}
		})
	}
	if len(places) > 1 {
		slices.Sort(places)
		return refuse(http.StatusForbidden, "NotOwner", "repository %s may not bump %s: it is included from more than one place (%s), and a shared file is never owned by a repository's name, only by an entry in %s's owners", repo, file, strings.Join(slices.Compact(places), ", "), pl.File)
	}
	deployers[req.Env] = true
	for _, env := range slices.Sorted(maps.Keys(deployers)) {
		why := needsApproval(pl, env, resolved[env])
		if why == "" {
			continue
		}
		return refuse(http.StatusForbidden, "NotOwner", "repository %s may not bump %s: environment %q needs an approval (%s), and there a keyless bump may change only a file %s's owners names", repo, file, env, why, pl.File)
	}
	return nil
}

// needsApproval says why env's plans wait for a person ("" when they are
// applied at once): no skipConfirmation in its root manifest, or an
// approval task before the deployment in its stage's sequence. An
// environment that does not resolve needs one.
func needsApproval(pl *promote.Pipeline, env string, e *manifest.Environment) string {
	switch {
	case e == nil:
		return fmt.Sprintf("environments/%s/manifest.json does not resolve", env)
	case !e.SkipConfirmation:
		return fmt.Sprintf("%s has no skipConfirmation: true", e.Root)
	}
	st, ok := pl.Stage(env)
	if !ok {
		return ""
	}
	for _, t := range st.SequenceTasks() {
		switch t.Name {
		case promote.TaskDeployment:
			return ""
		case promote.TaskApproval:
			return fmt.Sprintf("its sequence in %s has an approval task before the deployment", pl.File)
		}
	}
	return ""
}

// walkIncludes calls fn for every include edge of the tree, once per place a
// file is included (a file included twice, or below two includers, is seen
// twice).
func walkIncludes(l *manifest.Layout, fn func(parent, child string)) {
	if l == nil {
		return
	}
	for _, c := range l.Includes {
		fn(l.File, c.File)
		walkIncludes(c, fn)
	}
}

// foldedNames lists the files of dir (as paths) spelled like name but for case (name
// itself excluded), sorted.
func foldedNames(fsys fs.FS, dir, name string) []string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && e.Name() != name && strings.EqualFold(e.Name(), name) {
			out = append(out, path.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out
}
