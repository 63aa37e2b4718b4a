package approval

import (
	"errors"
	"fmt"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// Manifest is an environment's manifest as resolved at one revision: enough
// to deploy that revision again, and to say where each service was written.
type Manifest struct {
	// Root is the repo-relative path of the environment's root manifest.
	Root string `json:"root"`
	// Services are the effective services, containers expanded (dockerName
	// defaulted), each with the file that defined it (Source).
	Services []manifest.Service `json:"services"`
	// Files are the manifest files read, in include order, each with its git
	// blob hash at the revision.
	Files []File `json:"files"`
	// Layout is the include tree (pkg/manifest's Layout).
	Layout *manifest.Layout `json:"layout,omitempty"`
}

// File is one manifest file at a revision.
type File struct {
	Path string `json:"path"`
	// Blob is the git blob hash (40 hex digits) of the file's content.
	Blob string `json:"blob"`
}

// RolledBack is the last revision of an environment whose apply was rolled
// back automatically (environments.<env>.onFailedRollout: rollback): no plan
// of it is applied, or proposed, again; a new revision is planned as usual.
type RolledBack struct {
	Revision string `json:"revision"`
	PlanHash string `json:"planHash"`
	// Cause says why: the rollout, or the verification, that failed.
	Cause string `json:"cause"`
	// EntryID is the rolled-back history entry.
	EntryID int64     `json:"entryId"`
	At      time.Time `json:"at"`
}

// ErrUnknownEntry is returned (wrapped) for a history entry id that an
// environment's history does not hold (never recorded, or dropped as the
// history went past its limit).
var ErrUnknownEntry = errors.New("unknown history entry")

// FindEntry returns the entry numbered id in history, or an error wrapping
// ErrUnknownEntry.
func FindEntry(history []Entry, env string, id int64) (*Entry, error) {
	for i := range history {
		if history[i].ID == id && id > 0 {
			return &history[i], nil
		}
	}
	if len(history) == 0 {
		return nil, fmt.Errorf("%w %d in environment %s: its history is empty", ErrUnknownEntry, id, env)
	}
	return nil, fmt.Errorf("%w %d in environment %s: it holds entries %d to %d", ErrUnknownEntry, id, env,
		history[len(history)-1].ID, history[0].ID)
}

// Previous returns what ran before the newest apply in history (newest
// first): the newest entry that changed the cluster (succeeded, failed,
// interrupted or rolled back) is the apply of now; the newest succeeded entry
// before it, or before a succeeded one, is what ran before. With a failed,
// interrupted or rolled-back apply newest, "before" is the last apply that
// succeeded; with a succeeded one newest, the succeeded one before it. ok is
// false when the history holds no such entry.
func Previous(history []Entry) (e *Entry, ok bool) {
	now := -1
	for i, h := range history {
		if h.Result != ResultRejected {
			now = i
			break
		}
	}
	if now < 0 {
		return nil, false
	}
	from := now
	if history[now].Result == ResultSucceeded {
		from = now + 1
	}
	for i := from; i < len(history); i++ {
		if history[i].Result == ResultSucceeded {
			return &history[i], true
		}
	}
	return nil, false
}

// Summary is e without its resolved manifest: the row of a history list.
func (e Entry) Summary() Entry {
	e.Manifest = nil
	return e
}
