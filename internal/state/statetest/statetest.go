// Package statetest makes the large states, manifests and histories the
// state store's tests and benchmarks write: pure values, no cluster.
package statetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/status"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// BigState is env's pending plan and status for services × targets, every
// service changing in every target to an image pinned by digest (what
// compresses least), with a layout naming every service.
func BigState(t testing.TB, env string, services, targets int) (*approval.Pending, json.RawMessage) {
	t.Helper()
	rev := fmt.Sprintf("%040x", services*targets)
	envM := &manifest.Environment{Name: env, Root: "environments/" + env + "/manifest.json",
		Layout: &manifest.Layout{File: "environments/" + env + "/manifest.json", Owner: "acme"}}
	var cfgTargets []config.Target
	for j := range targets {
		cfgTargets = append(cfgTargets, config.Target{Name: fmt.Sprintf("t%d", j), Namespace: fmt.Sprintf("apps-%d", j)})
	}
	var changes []reconcile.Change
	for i := range services {
		name := fmt.Sprintf("service-%05d", i)
		sum := sha256.Sum256([]byte(name))
		digest := "sha256:" + hex.EncodeToString(sum[:])
		envM.Services = append(envM.Services, manifest.Service{Name: name, Version: "1.2.3", Source: envM.Root,
			Containers: []manifest.Container{{DockerName: name, DockerTag: "1.2.3", DockerDigest: digest}}})
		envM.Layout.Services = append(envM.Layout.Services, manifest.LayoutService{Name: name, Line: 3 + i*4, Column: 5, Pointer: fmt.Sprintf("/services/%d", i)})
		for _, tg := range cfgTargets {
			old := sha256.Sum256([]byte(name + tg.Name))
			changes = append(changes, reconcile.Change{Service: name, Target: tg.Name, Namespace: tg.Namespace,
				Kind: "Deployment", Name: name, Container: "app",
				From: "registry.example.com/acme/" + name + ":1.2.2@sha256:" + hex.EncodeToString(old[:]),
				To:   "registry.example.com/acme/" + name + ":1.2.3@" + digest})
		}
	}
	plan := &reconcile.Plan{Environment: env, Revision: rev, Changes: changes, PlanHash: reconcile.Hash(env, rev, changes),
		Blocked: []reconcile.Blocked{}, Problems: []reconcile.Problem{}, Unmanaged: []reconcile.Unmanaged{}}
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	obs := status.Observe(gitsource.Snapshot{Revision: rev, Time: time.Unix(1_800_000_000, 0)}, status.Planned{Env: envM, Plan: plan}, cfgTargets)
	obs.ObservedAt = time.Unix(1_800_000_005, 0).UTC()
	st, err := json.Marshal(obs)
	if err != nil {
		t.Fatal(err)
	}
	return &approval.Pending{Revision: rev, PlanHash: plan.PlanHash, Plan: planJSON, ProposedAt: time.Unix(1_800_000_010, 0).UTC()}, st
}

// hexOf is 64 hex digits that do not compress, like a real hash.
func hexOf(kind string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(kind, i)))
	return hex.EncodeToString(sum[:])
}

// Manifest is a resolved manifest of n services spread over one file
// each (included by the root), each with a tag and a digest.
func Manifest(n int) *approval.Manifest {
	root := "environments/prod/manifest.json"
	m := &approval.Manifest{Root: root, Layout: &manifest.Layout{File: root, Owner: "manifest"},
		Files: []approval.File{{Path: root, Blob: hexOf("file", 0)[:40]}}}
	for i := range n {
		name := fmt.Sprintf("service-%02d", i)
		file := "environments/prod/" + name + ".json"
		m.Services = append(m.Services, manifest.Service{Name: name, Version: fmt.Sprintf("1.%d.0", i), Source: file,
			Containers: []manifest.Container{{DockerName: "acme/" + name, DockerTag: fmt.Sprintf("1.%d.0", i),
				DockerDigest: "sha256:" + hexOf("digest", i)}}})
		m.Files = append(m.Files, approval.File{Path: file, Blob: hexOf("blob", i)[:40]})
		m.Layout.Includes = append(m.Layout.Includes, &manifest.Layout{File: file, Owner: name,
			Services: []manifest.LayoutService{{Name: name, Line: 2, Column: 15, Pointer: "/services/0"}}})
	}
	return m
}

// History is limit entries as an apply records them: one service bumped
// per entry, with its change and workload result, and (withManifest) the
// resolved manifest of an environment of that many services.
func History(limit, services int, withManifest bool) []approval.Entry {
	start := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	var h []approval.Entry
	for i := limit; i >= 1; i-- {
		svc := fmt.Sprintf("service-%02d", i%services)
		ch := reconcile.Change{Service: svc, Target: "eu", Namespace: "prod", Kind: "Deployment", Name: svc, Container: svc,
			From: fmt.Sprintf("registry.example.com/acme/%s:1.%d.0", svc, i-1), To: fmt.Sprintf("registry.example.com/acme/%s:1.%d.0@sha256:%s", svc, i, hexOf("to", i))}
		changes, _ := json.Marshal([]reconcile.Change{ch})
		wl, _ := json.Marshal([]reconcile.WorkloadResult{{WorkloadKey: ch.Key(), Service: svc, Changes: []reconcile.Change{ch},
			Outcome: reconcile.OutcomeSucceeded, Duration: 12 * time.Second}})
		e := approval.Entry{ID: int64(i), Revision: hexOf("rev", i)[:40], PlanHash: "sha256:" + hexOf("plan", i),
			Changes: changes, Workloads: wl, Approver: "skipConfirmation", Result: approval.ResultSucceeded,
			Started: start.Add(time.Duration(i) * time.Hour), Finished: start.Add(time.Duration(i)*time.Hour + 12*time.Second)}
		if withManifest {
			m := Manifest(services)
			for j := range m.Services {
				if j <= i%services {
					m.Services[j].Containers[0].DockerTag = fmt.Sprintf("1.%d.0", i)
				}
			}
			e.Manifest = m
		}
		h = append(h, e)
	}
	return h
}
