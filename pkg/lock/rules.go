package lock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The rules for locks taken, extended and removed on behalf of a caller the
// server verified (Service.For: Agent.Lock, Extend, Unlock): who owns a lock, how long a
// lock of each type may last, and who may place a hold.

// ReconcilerAuthor is the author of the deploy locks the reconciler daemon
// holds while it applies, written as a typed identity (kind:name). Builds
// before typed identities wrote ReservedAuthor instead; both are the
// reconciler's own (IsReconcilerAuthor).
const ReconcilerAuthor = "stagehand:reconciler"

// IsReconcilerAuthor reports whether author is the reconciler's own apply
// lock's: ReconcilerAuthor, or ReservedAuthor written by older builds.
func IsReconcilerAuthor(author string) bool {
	return author == ReconcilerAuthor || author == ReservedAuthor
}

// OwnerEqual reports whether a lock's author and a caller's name are the
// same identity (WithOwnerEqual).
type OwnerEqual func(author, caller string) bool

// exactOwner is the default OwnerEqual: the names spelled exactly alike.
func exactOwner(author, caller string) bool { return author == caller }

// WithOwnerEqual makes the Service compare a lock's author with a caller's
// name by eq in Agent.Unlock and Agent.Extend (default: exact equality). A server
// that writes authors as typed identities ("github:alice", "token:ci") gives
// its own comparison, so that a GitHub login spelled like a token's name is
// not that token, and an author written before authors were typed (a bare
// name) is nobody's but an admin's to remove.
func WithOwnerEqual(eq OwnerEqual) Option {
	return func(o *options) error {
		if eq == nil {
			return errors.New("WithOwnerEqual: nil function")
		}
		o.ownerEqual = eq
		o.given = append(o.given, optOwnerEqual)
		return nil
	}
}

// DefaultMaxDurations are the longest locks Agent.Lock and Agent.Extend accept by
// type, unless WithMaxDurations says otherwise: an automation run or a
// deploy lasts hours, an incident a week, a release freeze a month, and a
// hold as long as a rollback's (seven days).
var DefaultMaxDurations = map[Type]time.Duration{
	Automation: 6 * time.Hour,
	Deploy:     24 * time.Hour,
	Incident:   7 * 24 * time.Hour,
	Freeze:     30 * 24 * time.Hour,
	Hold:       7 * 24 * time.Hour,
}

// NoMaximum in WithMaxDurations lets the locks of a type last any time.
const NoMaximum time.Duration = -1

// WithMaxDurations sets the longest lock Agent.Lock and Agent.Extend accept for each
// type named in max (the types not named keep DefaultMaxDurations); NoMaximum
// accepts any length. The reconciler's own locks and rollback holds
// (Lock, PlaceHold) are not bound by them.
func WithMaxDurations(max map[Type]time.Duration) Option {
	return func(o *options) error {
		for t, d := range max {
			if err := t.Validate(); err != nil {
				return fmt.Errorf("WithMaxDurations: %w", err)
			}
			if d <= 0 && d != NoMaximum {
				return fmt.Errorf("WithMaxDurations: %s: %s: want a positive duration or NoMaximum", t, d)
			}
		}
		if o.maxDurations == nil {
			o.maxDurations = map[Type]time.Duration{}
		}
		for t, d := range max {
			o.maxDurations[t] = d
		}
		o.given = append(o.given, optMaxDurations)
		return nil
	}
}

// MaxDuration returns the longest lock of type t that Agent.Lock and Agent.Extend
// accept, and false when there is no maximum.
func (s *Service) MaxDuration(t Type) (time.Duration, bool) {
	d, ok := s.maxDurations[t]
	if !ok {
		d, ok = DefaultMaxDurations[t]
	}
	if !ok || d == NoMaximum {
		return 0, false
	}
	return d, true
}

// FormatDuration writes d as lock durations are written: whole days as
// "30d", anything else as Go does ("36h0m0s" as "36h").
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// TooLongError says that a lock would last longer than its type's maximum.
type TooLongError struct {
	Path string
	Type Type
	Want time.Duration // how long the lock would have lasted
	Max  time.Duration
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("lock %s: %s lasting %s is refused: a lock of type %s lasts at most %s", e.Path, e.Type.Friendly(),
		FormatDuration(e.Want.Round(time.Second)), e.Type, FormatDuration(e.Max))
}

// RefusedError says that a caller may not take or change a lock; nothing
// was changed. The REST API answers it with 403.
type RefusedError struct {
	Caller Caller
	Reason string
}

func (e *RefusedError) Error() string { return e.Reason }

// IsHoldPath reports whether path is where a hold is kept (its last segment
// is HoldSegment): any lock there, of whatever type, stops a rollback from
// placing its hold.
func IsHoldPath(path string) bool {
	return path == HoldSegment || strings.HasSuffix(path, "/"+HoldSegment)
}

// checkHold refuses a hold, or any lock at a hold's path, to a caller
// without lock:admin: holds are placed by rollbacks (PlaceHold).
func checkHold(by Caller, path string, t Type) error {
	if by.Admin || (t != Hold && !IsHoldPath(path)) {
		return nil
	}
	return &RefusedError{Caller: by, Reason: fmt.Sprintf("%s may not lock %s for %s: holds (locks of type hold, and any lock whose path ends in /%s) are placed by rollbacks, or by a caller with lock:admin",
		by.Name, path, t.Friendly(), HoldSegment)}
}
