package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// module is the module every binary is built from.
const module = "github.com/stagehand-gitops/stagehand"

// goPURL is the package URL of a Go module at version.
func goPURL(path, version string, q url.Values) string {
	s := "pkg:golang/" + path + "@" + url.PathEscape(version)
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

// binarySBOM is the CycloneDX SBOM of the binary at path (bin for p): its
// module, every module and the Go standard library it was built with, and
// its build settings, all read from the Go build information in the binary.
func binarySBOM(o options, path, bin string, p platform) ([]byte, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Go build information of %s: %w", path, err)
	}
	main := binaryComponent(o, bin, p)
	for _, s := range bi.Settings {
		*main.Properties = append(*main.Properties, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
	}
	deps := moduleComponents(bi)
	bom := newBOM(o, main, deps)
	return encodeBOM(bom)
}

// binaryComponent is the component of one release binary.
func binaryComponent(o options, bin string, p platform) *cdx.Component {
	purl := goPURL(module, o.version, url.Values{"type": {"module"}, "goos": {p.os}, "goarch": {p.arch}})
	return &cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeApplication, Name: bin, Version: o.version, PackageURL: purl,
		Properties: &[]cdx.Property{{Name: "org.opencontainers.image.revision", Value: o.commit}}}
}

// moduleComponents are the modules and the standard library bi names.
func moduleComponents(bi *buildinfo.BuildInfo) []cdx.Component {
	std := goPURL("std", bi.GoVersion, url.Values{"type": {"module"}})
	comps := []cdx.Component{{BOMRef: std, Type: cdx.ComponentTypeLibrary, Name: "std", Version: bi.GoVersion, PackageURL: std}}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		purl := goPURL(m.Path, m.Version, url.Values{"type": {"module"}})
		c := cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, PackageURL: purl}
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: m.Sum}}
		}
		comps = append(comps, c)
	}
	return comps
}

// imageSBOM is the CycloneDX SBOM of the image (index digest d): the
// binaries it holds (bins, linux builds) and what each was built with.
func imageSBOM(o options, d string, bins []string) ([]byte, error) {
	purl := "pkg:oci/stagehand@" + strings.ReplaceAll(d, ":", "%3A") + "?" + url.Values{"tag": {o.version}}.Encode()
	main := &cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeContainer, Name: "stagehand", Version: o.version, PackageURL: purl,
		Properties: &[]cdx.Property{{Name: "org.opencontainers.image.revision", Value: o.commit}}}
	seen := map[string]bool{}
	var comps []cdx.Component
	for _, path := range bins {
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading the Go build information of %s: %w", path, err)
		}
		var goos, goarch string
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOOS":
				goos = s.Value
			case "GOARCH":
				goarch = s.Value
			}
		}
		bin := strings.TrimPrefix(bi.Path, module+"/cmd/")
		b := binaryComponent(o, bin, platform{goos, goarch})
		b.BOMRef = b.PackageURL + "#" + bin
		*b.Properties = append(*b.Properties, cdx.Property{Name: "oci:path", Value: "/" + bin})
		comps = append(comps, *b)
		for _, c := range moduleComponents(bi) {
			if !seen[c.BOMRef] {
				seen[c.BOMRef] = true
				comps = append(comps, c)
			}
		}
	}
	return encodeBOM(newBOM(o, main, comps))
}

// newBOM is a BOM of main made of comps, which main depends on. Its
// timestamp is the build's time and its serial number a hash of its content,
// so the same build gives the same SBOM.
func newBOM(o options, main *cdx.Component, comps []cdx.Component) *cdx.BOM {
	slices.SortFunc(comps, func(a, b cdx.Component) int { return strings.Compare(a.BOMRef, b.BOMRef) })
	refs := make([]string, len(comps))
	for i, c := range comps {
		refs[i] = c.BOMRef
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: o.created.Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "hack/release",
			Group: module, Version: o.version}}},
		Component: main,
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	return bom
}

// encodeBOM writes bom as JSON, its serial number the UUID-shaped hash of
// the rest, so two builds of one commit write the same bytes.
func encodeBOM(bom *cdx.BOM) ([]byte, error) {
	var b bytes.Buffer
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return nil, fmt.Errorf("encoding SBOM: %w", err)
	}
	sum := sha256.Sum256(b.Bytes())
	sum[6] = sum[6]&0x0f | 0x50 // version 5 (name-based SHA hash)
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	bom.SerialNumber = fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	b.Reset()
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return nil, fmt.Errorf("encoding SBOM: %w", err)
	}
	return b.Bytes(), nil
}
