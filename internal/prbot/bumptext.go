package prbot

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/prbot/remote"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// text renders the pull request's title and body from what run's branch
// changes in its file compared with the base ("" Title: no difference).
func (bm *bumper) text(ctx context.Context, run *bumpRun) (string, string, error) {
	file, env := run.file, run.req.Env
	baseData, _, err := bm.repo.File(ctx, file, bm.repo.Base())
	if err != nil {
		return "", "", err
	}
	headData, _, err := bm.repo.File(ctx, file, run.branch)
	if err != nil {
		return "", "", err
	}
	before, after := containersOf(file, baseData), containersOf(file, headData)
	var parts, rows []string
	for _, k := range after.order {
		a, bf := after.m[k], before.m[k]
		if a == bf {
			continue
		}
		parts = append(parts, k.label()+" "+a.DockerTag)
		from := "—"
		if bf.DockerTag != "" {
			from = "`" + bf.DockerTag + "`"
		}
		digest := "—"
		if a.DockerDigest != "" {
			digest = "`" + a.DockerDigest + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | `%s` | %s |", k.service, k.container, from, a.DockerTag, digest))
	}
	if len(parts) == 0 {
		return "", "", nil
	}
	title := truncateTitle(fmt.Sprintf("Bump %s in %s: %s", path.Base(file), env, strings.Join(parts, ", ")))
	body := fmt.Sprintf("%s\nBumps `%s` (owned by `%s`).\n\n| service | container | from | to | digest |\n|---|---|---|---|---|\n%s\n\n_Opened by Stagehand prbot; later bumps of this file update this pull request._\n",
		remote.Marker("bump "+env+" "+path.Base(file)), file, manifest.Owner(file), strings.Join(rows, "\n"))
	if r := []rune(body); len(r) > promote.MaxBody {
		body = string(r[:promote.MaxBody-1]) + "…"
	}
	return title, body, nil
}

type containerKey struct{ service, container string }

func (k containerKey) label() string {
	if k.container == k.service {
		return k.service
	}
	return k.service + "/" + k.container
}

type containerSet struct {
	order []containerKey
	m     map[containerKey]manifest.Container
}

func containersOf(file string, data []byte) containerSet {
	set := containerSet{m: map[containerKey]manifest.Container{}}
	if data == nil {
		return set
	}
	// Only describes the pull request: unknown keys are not this text's
	// business (the bump itself was checked with the bot's manifest options).
	ed, err := manifest.Edit(file, data, manifest.AllowUnknownKeys())
	if err != nil {
		return set
	}
	for _, name := range ed.Services() {
		s, err := ed.Service(name)
		if err != nil {
			continue
		}
		for _, c := range s.Containers {
			if c.DockerName == "" {
				c.DockerName = s.Name
			}
			k := containerKey{s.Name, c.DockerName}
			if _, dup := set.m[k]; !dup {
				set.order = append(set.order, k)
			}
			set.m[k] = c
		}
	}
	return set
}

func truncateTitle(s string) string {
	r := []rune(s)
	if len(r) <= promote.MaxTitle {
		return s
	}
	return string(r[:promote.MaxTitle-1]) + "…"
}

// newerTag reports whether have is a newer SemVer-like version than want
// (both "1.2.3" or "v1.2.3", optionally with a pre-release). Tags that are not
// versions are never newer: the latest bump wins.
func newerTag(have, want string) bool {
	h, okh := parseVersion(have)
	w, okw := parseVersion(want)
	if !okh || !okw {
		return false
	}
	for i := 0; i < 3; i++ {
		if h.n[i] != w.n[i] {
			return h.n[i] > w.n[i]
		}
	}
	switch {
	case h.pre == w.pre:
		return false
	case h.pre == "":
		return true // a release is newer than its pre-releases
	case w.pre == "":
		return false
	}
	return h.pre > w.pre
}

type version struct {
	n   [3]int
	pre string
}

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(s, "v")
	core, pre, _ := strings.Cut(s, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return version{}, false
	}
	var v version
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return version{}, false
		}
		v.n[i] = n
	}
	v.pre = pre
	return v, true
}
