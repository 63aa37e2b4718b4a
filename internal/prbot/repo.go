package prbot

import (
	"context"
	"io/fs"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// What another door of the bot (the keyless bump API, internal/keyless)
// reads of the manifests repository before it asks for a Bump: the same
// reads, through the same client and caches, that the bot's own checks make.

// Repository is the manifests repository, owner/name.
func (b *Bot) Repository() string { return b.repo.Owner() + "/" + b.repo.Name() }

// Now is the time on the bot's clock (WithClock).
func (b *Bot) Now() time.Time { return b.now() }

// Base is the base branch of the manifests repository.
func (b *Bot) Base() string { return b.repo.Base() }

// Root is the directory of the repository that holds environments/.
func (b *Bot) Root() string { return b.repo.Root() }

// UpstreamOwner is the owner of the upstream repositories (WithUpstreamOwner).
func (b *Bot) UpstreamOwner() string { return b.upstreamOwner }

// ManifestOptions are the options the bot resolves manifests with.
func (b *Bot) ManifestOptions() []manifest.Option { return b.repo.ManifestOptions() }

// Path joins the repository root and a path below it.
func (b *Bot) Path(rel string) string { return b.repo.Path(rel) }

// HeadRef returns the commit branch points at ("" when it does not exist).
func (b *Bot) HeadRef(ctx context.Context, branch string) (string, error) {
	return b.repo.HeadRef(ctx, branch)
}

// Pipeline reads pipeline.yaml at ref (nil when the repository has none).
func (b *Bot) Pipeline(ctx context.Context, ref string) (*promote.Pipeline, error) {
	return b.repo.Pipeline(ctx, ref)
}

// File reads path (from the repository's top, see Path) at ref: nil when
// it does not exist.
func (b *Bot) File(ctx context.Context, path, ref string) ([]byte, error) {
	data, _, err := b.repo.File(ctx, path, ref)
	return data, err
}

// Snapshot is the repository at ref as a file system: <root>/environments
// read up front, any other file when first opened.
func (b *Bot) Snapshot(ctx context.Context, ref string) (fs.FS, error) {
	r, err := b.repo.Snapshot(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Validate checks the request's fields; withFile checks File too (a
// keyless bump may leave it to the caller's ownership).
func (r BumpRequest) Validate(withFile bool) error { return r.validateFields(withFile) }

// Label names the request's container: service, or service/container.
func (r BumpRequest) Label() string { return containerLabel(r) }

// ValidFileName reports whether name is a file a bump may Name: a base
// name ending in .json.
func ValidFileName(name string) bool { return fileNameRE.MatchString(name) }
