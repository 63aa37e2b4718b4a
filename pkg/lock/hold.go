package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A hold is what a rollback places on an environment: the bots (prbot's bump
// and promote) neither open nor merge a pull request that moves the
// environment while it exists, and the reconciler keeps applying what is
// merged. It is a lock of type Hold that allows every action but Automation,
// kept at HoldPath(lockPath): beneath the environment's lock path, so that it
// never takes the place of a person's lock at the lock path itself, and is
// listed, checked and removed like any other lock (`reconciler lock list`,
// `reconciler release`).

// HoldSegment is the last path segment of an environment's hold.
const HoldSegment = "hold"

// HoldLinkPullRequest names the link of a hold to the rollback pull request
// whose merge ends it.
const HoldLinkPullRequest = "pull-request"

// HoldPath is where the hold of the environment at lockPath is kept:
// "<lockPath>/hold".
func HoldPath(lockPath string) string { return lockPath + "/" + HoldSegment }

// NewHold returns the hold of the environment at lockPath by author until
// expires, with links (such as HoldLinkPullRequest).
func NewHold(lockPath, author string, expires time.Time, links map[string]string) Lock {
	l := Lock{
		Path: HoldPath(lockPath), Type: Hold, Author: author, Links: links, ExpiresAt: expires,
		Allow: []Type{Deploy, Incident, Freeze},
	}
	l.Default(nil)
	return l
}

// holdMessage is BlockingMessage for a hold.
func (l Lock) holdMessage(loc *time.Location) string {
	msg := fmt.Sprintf("%s is held by a rollback of %s until %s", l.Path, l.Author, l.ExpiresAt.In(loc).Format(TimeLayout))
	if pr := l.Links[HoldLinkPullRequest]; pr != "" {
		msg += "; merging " + pr + " or `reconciler release` ends it"
	} else {
		msg += "; `reconciler release` ends it"
	}
	return msg + "."
}

// PlaceHold stores the hold h (from NewHold) at its path, or refreshes the
// hold already there (its expiry, author and links replaced, its creation
// time kept). Unlike Lock it does not consult the locks on the prefixes of
// the path: a hold only restrains automation, so a freeze or an incident
// above it must not stop it being placed. Any other unexpired lock at the
// path refuses with a *LockedError.
func (s *Service) PlaceHold(ctx context.Context, h Lock) (Lock, error) {
	p, err := NormalizePath(h.Path)
	if err != nil {
		return Lock{}, invalid(err)
	}
	if h.Type != Hold {
		return Lock{}, invalid(fmt.Errorf("placing hold %s: type %q, want %q", p, h.Type, Hold))
	}
	if h.Allows(Automation) {
		return Lock{}, invalid(fmt.Errorf("placing hold %s: a hold that allows automation would hold nothing", p))
	}
	now := s.now()
	h.Path, h.CreatedAt, h.UpdatedAt, h.ID, h.Version = p, now, now, "", ""
	if err := h.Validate(); err != nil {
		return Lock{}, invalid(err)
	}
	h.ExpiresAt = ceilSecond(h.ExpiresAt)
	if !h.ExpiresAt.After(now) {
		return Lock{}, invalid(fmt.Errorf("hold %s: expiry %s is not in the future", p, h.ExpiresAt.Format(time.RFC3339)))
	}
	for range maxAttempts {
		created, err := s.storage.Create(ctx, h)
		if err == nil {
			return created, nil
		}
		if !errors.Is(err, ErrExists) {
			return Lock{}, fmt.Errorf("placing hold %s: %w", p, err)
		}
		cur, err := s.storage.Get(ctx, p)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Lock{}, fmt.Errorf("placing hold %s: %w", p, err)
		}
		if cur.Type != Hold && !cur.Expired(s.now()) {
			return Lock{}, &LockedError{Path: p, Type: Hold, Locks: []Lock{cur}}
		}
		next := h
		if cur.Type == Hold && !cur.Expired(s.now()) {
			next.CreatedAt = cur.CreatedAt
		}
		out, err := s.storage.Replace(ctx, cur, next)
		if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Lock{}, fmt.Errorf("placing hold %s: %w", p, err)
		}
		return out, nil
	}
	return Lock{}, fmt.Errorf("placing hold %s: %w after %d attempts", p, ErrConflict, maxAttempts)
}

// ReleaseHold removes the hold of the environment at lockPath and returns
// it; an error wrapping ErrNotFound when there is none.
func (s *Service) ReleaseHold(ctx context.Context, lockPath string) (Lock, error) {
	ls, err := s.Unlock(ctx, HoldPath(lockPath), Hold, false)
	if err != nil {
		return Lock{}, fmt.Errorf("releasing hold: %w", err)
	}
	return ls[0], nil
}
