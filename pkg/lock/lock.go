package lock

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Type is the kind of a lock, and the kind of an action checked against locks.
type Type string

// The lock types of the seed, plus a release freeze and a rollback hold
// (see NewHold: a hold lets deploys pass and stops automation).
const (
	Automation Type = "automation"
	Deploy     Type = "deploy"
	Incident   Type = "incident"
	Freeze     Type = "freeze"
	Hold       Type = "hold"
)

// Types lists every valid lock type.
var Types = []Type{Automation, Deploy, Incident, Freeze, Hold}

// ParseType returns the Type named by s (case-insensitive).
func ParseType(s string) (Type, error) {
	t := Type(strings.ToLower(strings.TrimSpace(s)))
	if err := t.Validate(); err != nil {
		return "", err
	}
	return t, nil
}

// Validate reports whether t is one of Types.
func (t Type) Validate() error {
	for _, v := range Types {
		if t == v {
			return nil
		}
	}
	return fmt.Errorf("invalid lock type %q: want one of automation, deploy, incident, freeze, hold", string(t))
}

// Friendly returns the type as used in a sentence: "an automation run",
// "a deploy", "an incident" or "a release freeze".
func (t Type) Friendly() string {
	switch t {
	case Automation:
		return "an automation run"
	case Deploy:
		return "a deploy"
	case Incident:
		return "an incident"
	case Freeze:
		return "a release freeze"
	case Hold:
		return "a rollback hold"
	}
	return string(t)
}

// Env says which cluster and environment a lock is about; often a duplicate
// of the path, useful for cross-project locks.
type Env struct {
	Cluster string `json:"cluster"`
	Account string `json:"account"`
	Target  string `json:"target,omitempty"`
}

// CI describes the CI job that took a lock.
type CI struct {
	Project  string `json:"project"`
	Ref      string `json:"ref"`
	Commit   string `json:"commit"`
	Pipeline string `json:"pipeline"`
	Job      string `json:"job"`
}

// Lock is one deploy lock. In JSON the timestamps are Unix seconds
// (created_at, updated_at, expires_at), as in the seed's Lock interface.
type Lock struct {
	Path      string
	Type      Type
	Author    string
	Links     map[string]string
	Allow     []Type // action types this lock lets pass
	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt time.Time
	Env       Env
	CI        *CI // nil when the lock was not taken from CI

	// ID and Version identify a stored lock and its revision; storage
	// implementations set them and use them as preconditions. Never in JSON.
	ID      string
	Version string
}

type lockJSON struct {
	Path      string            `json:"path"`
	Type      Type              `json:"type"`
	Author    string            `json:"author"`
	Links     map[string]string `json:"links"`
	Allow     []Type            `json:"allow,omitempty"`
	CreatedAt int64             `json:"created_at"`
	UpdatedAt int64             `json:"updated_at"`
	ExpiresAt int64             `json:"expires_at"`
	Env       Env               `json:"env"`
	CI        *CI               `json:"ci,omitempty"`
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func fromUnix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

// MarshalJSON writes the lock in the seed's shape.
func (l Lock) MarshalJSON() ([]byte, error) {
	links := l.Links
	if links == nil {
		links = map[string]string{}
	}
	return json.Marshal(lockJSON{
		Path: l.Path, Type: l.Type, Author: l.Author, Links: links, Allow: l.Allow,
		CreatedAt: unix(l.CreatedAt), UpdatedAt: unix(l.UpdatedAt), ExpiresAt: unix(l.ExpiresAt),
		Env: l.Env, CI: l.CI,
	})
}

// UnmarshalJSON reads the lock in the seed's shape.
func (l *Lock) UnmarshalJSON(b []byte) error {
	var j lockJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = Lock{
		Path: j.Path, Type: j.Type, Author: j.Author, Links: j.Links, Allow: j.Allow,
		CreatedAt: fromUnix(j.CreatedAt), UpdatedAt: fromUnix(j.UpdatedAt), ExpiresAt: fromUnix(j.ExpiresAt),
		Env: j.Env, CI: j.CI,
	}
	return nil
}

var segmentRE = regexp.MustCompile(`^[-a-z0-9]+$`)

// MaxPathLength is the longest accepted lock path.
const MaxPathLength = 253

// NormalizePath lowercases p and validates it: segments of a-z, 0-9 and "-"
// separated by "/", no empty segment.
func NormalizePath(p string) (string, error) {
	n := strings.ToLower(p)
	const want = `want segments of a-z, 0-9 and "-" separated by "/", such as apps/staging/a/auth-app`
	if n == "" {
		return "", fmt.Errorf("invalid lock path: empty; %s", want)
	}
	if len(n) > MaxPathLength {
		return "", fmt.Errorf("invalid lock path %q: %d characters, at most %d allowed", p, len(n), MaxPathLength)
	}
	for i, s := range strings.Split(n, "/") {
		if s == "" {
			return "", fmt.Errorf("invalid lock path %q: segment %d is empty; %s", p, i+1, want)
		}
		if !segmentRE.MatchString(s) {
			return "", fmt.Errorf("invalid lock path %q: segment %d %q has characters outside a-z, 0-9 and \"-\"; %s", p, i+1, s, want)
		}
	}
	return n, nil
}

// Prefixes returns every prefix of a normalized path, shortest first,
// ending with the path itself: a, a/b, a/b/c.
func Prefixes(path string) []string {
	segs := strings.Split(path, "/")
	out := make([]string, len(segs))
	for i := range segs {
		out[i] = strings.Join(segs[:i+1], "/")
	}
	return out
}

// within reports whether path is prefix itself or lies beneath it; an empty
// prefix contains every path.
func within(path, prefix string) bool {
	return prefix == "" || path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Expired reports whether the lock has expired at now.
func (l Lock) Expired(now time.Time) bool { return !now.Before(l.ExpiresAt) }

// Allows reports whether an action of type t may pass the lock.
func (l Lock) Allows(t Type) bool {
	for _, a := range l.Allow {
		if a == t {
			return true
		}
	}
	return false
}

// Blocks reports whether the lock forbids an action of type t at now:
// it has not expired and does not allow t.
func (l Lock) Blocks(t Type, now time.Time) bool { return !l.Expired(now) && !l.Allows(t) }

// Validate checks a lock before it is stored.
func (l Lock) Validate() error {
	if _, err := NormalizePath(l.Path); err != nil {
		return err
	}
	if l.Path != strings.ToLower(l.Path) {
		return fmt.Errorf("invalid lock path %q: not lowercase", l.Path)
	}
	if err := l.Type.Validate(); err != nil {
		return err
	}
	for _, a := range l.Allow {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("allow: %w", err)
		}
	}
	if strings.TrimSpace(l.Author) == "" {
		return fmt.Errorf("lock %s: author is required (--author, or $USER)", l.Path)
	}
	if l.ExpiresAt.IsZero() {
		return fmt.Errorf("lock %s: expiry is required (--duration or --until)", l.Path)
	}
	for k := range l.Links {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("lock %s: link with an empty name", l.Path)
		}
	}
	return nil
}

// TimeLayout is how lock messages write times: "Sat 31 Dec, 12:00".
const TimeLayout = "Mon 2 Jan, 15:04"

// LockedMessage is the message for a new lock, with the expiry in loc:
// "Locked apps/acceptance/a for a deploy until Sat 31 Dec, 12:00".
func (l Lock) LockedMessage(loc *time.Location) string {
	return fmt.Sprintf("Locked %s for %s until %s", l.Path, l.Type.Friendly(), l.ExpiresAt.In(loc).Format(TimeLayout))
}

// BlockingMessage describes the lock to someone it blocks, with the expiry in
// loc: "apps/acceptance is locked until Sat 31 Dec, 12:00 by an automation run
// in testing/staging." (the CLI prefixes "Error: ").
func (l Lock) BlockingMessage(loc *time.Location) string {
	if l.Type == Hold {
		return l.holdMessage(loc)
	}
	where := ""
	switch {
	case l.Env.Cluster != "" && l.Env.Account != "":
		where = " in " + l.Env.Cluster + "/" + l.Env.Account
	case l.Env.Cluster != "":
		where = " in " + l.Env.Cluster
	}
	return fmt.Sprintf("%s is locked until %s by %s%s.", l.Path, l.ExpiresAt.In(loc).Format(TimeLayout), l.Type.Friendly(), where)
}

// Segment turns a target or service name into a lock path segment as the
// reconciler checks it ("<lockPath>/<target>/<service>"): lowercase, with
// every character outside a-z, 0-9 and "-" replaced by "-".
func Segment(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		default:
			return '-'
		}
	}, name)
}
