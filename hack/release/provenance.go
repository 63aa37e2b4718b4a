package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// In-toto and the predicates of a release's attestations.
const (
	statementType  = "https://in-toto.io/Statement/v1"
	payloadType    = "application/vnd.in-toto+json"
	slsaProvenance = "https://slsa.dev/provenance/v1"
	cyclonedxBOM   = "https://cyclonedx.org/bom"
	buildType      = source + "/hack/release@v1"
)

// statement is an in-toto Statement v1.
type statement struct {
	Type          string          `json:"_type"`
	Subject       []subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// subject is an artifact a statement is about.
type subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// slsa is SLSA Provenance v1's predicate.
type slsa struct {
	BuildDefinition struct {
		BuildType            string               `json:"buildType"`
		ExternalParameters   map[string]any       `json:"externalParameters"`
		InternalParameters   map[string]any       `json:"internalParameters,omitempty"`
		ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			InvocationID string `json:"invocationId,omitempty"`
			StartedOn    string `json:"startedOn"`
			FinishedOn   string `json:"finishedOn"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

type resourceDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest"`
}

// provenance is the SLSA provenance statement of r: every file checksummed
// and the image index, built from o.commit by this program.
func provenance(o options, r *built, started, finished time.Time) (*statement, error) {
	var subjects []subject
	for _, f := range r.files {
		sum, err := fileSHA256(filepath.Join(o.dist, f))
		if err != nil {
			return nil, err
		}
		subjects = append(subjects, subject{Name: f, Digest: map[string]string{"sha256": sum}})
	}
	if r.imageDigest != "" {
		subjects = append(subjects, subject{Name: "stagehand", Digest: map[string]string{"sha256": strings.TrimPrefix(r.imageDigest, "sha256:")}})
	}
	var p slsa
	p.BuildDefinition.BuildType = buildType
	var platforms []string
	for _, pl := range o.platforms {
		platforms = append(platforms, pl.String())
	}
	p.BuildDefinition.ExternalParameters = map[string]any{"version": o.version, "platforms": platforms}
	if o.stateSchema != 0 {
		p.BuildDefinition.ExternalParameters["stateSchema"] = o.stateSchema
	}
	p.BuildDefinition.InternalParameters = map[string]any{"goVersion": runtime.Version(), "sourceDateEpoch": o.created.Unix(),
		"flags": "-trimpath -buildvcs=false CGO_ENABLED=0"}
	p.BuildDefinition.ResolvedDependencies = []resourceDescriptor{{URI: "git+" + source, Digest: map[string]string{"gitCommit": o.commit}}}
	p.RunDetails.Builder.ID = builderID()
	p.RunDetails.Metadata.InvocationID = invocationID()
	p.RunDetails.Metadata.StartedOn = started.Format(time.RFC3339)
	p.RunDetails.Metadata.FinishedOn = finished.Format(time.RFC3339)
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding provenance: %w", err)
	}
	return &statement{Type: statementType, Subject: subjects, PredicateType: slsaProvenance, Predicate: b}, nil
}

// builderID names who ran the build: the GitHub Actions workflow when run
// there, else this program on a person's machine.
func builderID() string {
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		return os.Getenv("GITHUB_SERVER_URL") + "/" + os.Getenv("GITHUB_WORKFLOW_REF")
	}
	return buildType + "#local"
}

// invocationID is the GitHub Actions run, when there is one.
func invocationID() string {
	if os.Getenv("GITHUB_ACTIONS") != "true" {
		return ""
	}
	return os.Getenv("GITHUB_SERVER_URL") + "/" + os.Getenv("GITHUB_REPOSITORY") + "/actions/runs/" +
		os.Getenv("GITHUB_RUN_ID") + "/attempts/" + os.Getenv("GITHUB_RUN_ATTEMPT")
}

// imageStatement is a statement about the image index d.
func imageStatement(d, predicateType string, predicate []byte) *statement {
	return &statement{Type: statementType, PredicateType: predicateType, Predicate: predicate,
		Subject: []subject{{Name: "stagehand", Digest: map[string]string{"sha256": strings.TrimPrefix(d, "sha256:")}}}}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
