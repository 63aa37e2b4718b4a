package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// hexOf is 64 hex digits that do not compress, like a real hash.
func hexOf(kind string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprint(kind, i)))
	return hex.EncodeToString(sum[:])
}

// benchManifest is a resolved manifest of n services spread over one file
// each (included by the root), each with a tag and a digest.
func benchManifest(n int) *approval.Manifest {
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

// benchHistory is limit entries as an apply records them: one service bumped
// per entry, with its change and workload result, and (withManifest) the
// resolved manifest of an environment of that many services.
func benchHistory(limit, services int, withManifest bool) []approval.Entry {
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
			m := benchManifest(services)
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

// BenchmarkHistoryStateSize encodes a state holding a full history (100
// entries) as the Store writes it, and reports the ConfigMap bytes per entry
// and the entries that fit: without the resolved manifests (before) and with
// them (after).
func BenchmarkHistoryStateSize(b *testing.B) {
	for _, services := range []int{40, 200} {
		for _, withManifest := range []bool{false, true} {
			b.Run(fmt.Sprintf("services=%d/manifest=%v", services, withManifest), func(b *testing.B) {
				// As the Store holds it: read back from the state.
				raw, err := packHistory(benchHistory(DefaultHistoryLimit, services, withManifest))
				if err != nil {
					b.Fatal(err)
				}
				hist, err := unpackHistory(raw)
				if err != nil {
					b.Fatal(err)
				}
				var size, kept int
				for b.Loop() {
					st := &EnvState{History: hist, LastID: DefaultHistoryLimit}
					e, err := encodeState("stagehand-state-prod", st, maxStateBytes)
					if err != nil {
						b.Fatal(err)
					}
					size, kept = e.size(), len(st.History)
				}
				b.ReportMetric(float64(size)/float64(kept), "bytes/entry")
				b.ReportMetric(float64(kept), "entries")
			})
		}
	}
}
