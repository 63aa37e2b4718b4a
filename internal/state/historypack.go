package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// An entry's resolved manifest differs from the one before it in a service
// or two: kept as is, 100 manifests of a large environment would fill the
// state ConfigMap (gzip only finds repeats within 32 KiB). history.json
// therefore keeps every distinct service, file and layout once, in tables,
// and each entry's manifest as indexes into them (packedHistory). The
// format before, a plain array of entries, is still read.

// packedHistory is history.json: the entries, newest first, without their
// manifests, and the tables their manifests point into.
type packedHistory struct {
	Entries  []packedEntry      `json:"entries"`
	Services []manifest.Service `json:"services,omitempty"`
	Files    []approval.File    `json:"files,omitempty"`
	Layouts  []*manifest.Layout `json:"layouts,omitempty"`
}

// packedEntry is an entry whose Manifest is M.
type packedEntry struct {
	approval.Entry
	M *packedManifest `json:"m,omitempty"`
}

// packedManifest is a Manifest as indexes into a packedHistory's tables;
// Layout is -1 when the manifest had none.
type packedManifest struct {
	Root     string `json:"root"`
	Services []int  `json:"services"`
	Files    []int  `json:"files"`
	Layout   int    `json:"layout"`
}

// packHistory encodes history as history.json.
func packHistory(history []approval.Entry) ([]byte, error) {
	p := packedHistory{Entries: make([]packedEntry, len(history))}
	services, files, layouts := map[string]int{}, map[approval.File]int{}, map[string]int{}
	seen := map[*manifest.Layout]int{}
	for i, e := range history {
		m := e.Manifest
		e.Manifest = nil
		p.Entries[i] = packedEntry{Entry: e}
		if m == nil {
			continue
		}
		pm := &packedManifest{Root: m.Root, Services: make([]int, len(m.Services)), Files: make([]int, len(m.Files)), Layout: -1}
		for j, s := range m.Services {
			k := serviceKey(s)
			n, ok := services[k]
			if !ok {
				n = len(p.Services)
				services[k] = n
				p.Services = append(p.Services, s)
			}
			pm.Services[j] = n
		}
		for j, f := range m.Files {
			n, ok := files[f]
			if !ok {
				n = len(p.Files)
				files[f] = n
				p.Files = append(p.Files, f)
			}
			pm.Files[j] = n
		}
		if m.Layout != nil {
			// Entries read back share their layouts: compare those by
			// pointer, and only new ones by content.
			n, ok := seen[m.Layout]
			if !ok {
				b, err := json.Marshal(m.Layout)
				if err != nil {
					return nil, fmt.Errorf("encoding the layout of history entry %d: %w", e.ID, err)
				}
				if n, ok = layouts[string(b)]; !ok {
					n = len(p.Layouts)
					layouts[string(b)] = n
					p.Layouts = append(p.Layouts, m.Layout)
				}
				seen[m.Layout] = n
			}
			pm.Layout = n
		}
		p.Entries[i].M = pm
	}
	return json.Marshal(p)
}

// serviceKey tells services apart: every field, each ended by a byte no
// field holds.
func serviceKey(s manifest.Service) string {
	var b strings.Builder
	n := len(s.Name) + len(s.Version) + len(s.Source) + 3
	for _, c := range s.Containers {
		n += len(c.DockerName) + len(c.DockerTag) + len(c.DockerDigest) + 4
	}
	b.Grow(n)
	for _, f := range []string{s.Name, s.Version, s.Source} {
		b.WriteString(f)
		b.WriteByte(0)
	}
	for _, c := range s.Containers {
		for _, f := range []string{c.DockerName, c.DockerTag, c.DockerDigest} {
			b.WriteString(f)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// unpackHistory decodes history.json, packed or (as written before) a
// plain array of entries.
func unpackHistory(b []byte) ([]approval.Entry, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var h []approval.Entry
		err := json.Unmarshal(b, &h)
		return h, err
	}
	var p packedHistory
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	h := make([]approval.Entry, len(p.Entries))
	for i, pe := range p.Entries {
		h[i] = pe.Entry
		pm := pe.M
		if pm == nil {
			continue
		}
		m := &approval.Manifest{Root: pm.Root, Services: make([]manifest.Service, len(pm.Services)), Files: make([]approval.File, len(pm.Files))}
		for j, n := range pm.Services {
			if n < 0 || n >= len(p.Services) {
				return nil, fmt.Errorf("history entry %d: service %d of %d in its manifest", pe.ID, n, len(p.Services))
			}
			m.Services[j] = p.Services[n]
		}
		for j, n := range pm.Files {
			if n < 0 || n >= len(p.Files) {
				return nil, fmt.Errorf("history entry %d: file %d of %d in its manifest", pe.ID, n, len(p.Files))
			}
			m.Files[j] = p.Files[n]
		}
		if pm.Layout >= len(p.Layouts) {
			return nil, fmt.Errorf("history entry %d: layout %d of %d in its manifest", pe.ID, pm.Layout, len(p.Layouts))
		}
		if pm.Layout >= 0 {
			m.Layout = p.Layouts[pm.Layout]
		}
		h[i].Manifest = m
	}
	return h, nil
}
