package identity

import (
	"fmt"
	"strings"
	"unicode"
)

// Kind is the kind of credential that proved an identity.
type Kind string

// The kinds of identity.
const (
	// GitHub is a GitHub user; the name is the login (compared without case, as GitHub does).
	GitHub Kind = "github"
	// Token is a named token of server.tokensFile (or the legacy token, named "api-token").
	Token Kind = "token"
	// Kubernetes is a Kubernetes user as TokenReview names it
	// (system:serviceaccount:<namespace>:<name> for a ServiceAccount).
	Kubernetes Kind = "kubernetes"
	// Stagehand is Stagehand itself: its apply lock, automatic rollbacks, skipConfirmation.
	Stagehand Kind = "stagehand"
)

// Kinds lists every kind, in the order the documentation names them.
var Kinds = []Kind{GitHub, Token, Kubernetes, Stagehand}

func (k Kind) known() bool {
	switch k {
	case GitHub, Token, Kubernetes, Stagehand:
		return true
	}
	return false
}

// The identities Stagehand acts as itself. No credential can be any of them.
var (
	// Reconciler holds the reconciler's own apply lock.
	Reconciler = ID{Kind: Stagehand, Name: "reconciler"}
	// SkipConfirmation approves the plans of an environment that deploys without a person.
	SkipConfirmation = ID{Kind: Stagehand, Name: "skipConfirmation"}
	// Rollback places the holds of automatic rollbacks.
	Rollback = ID{Kind: Stagehand, Name: "rollback"}
)

// reserved are names Stagehand has used for itself, as bare names in records written before IDs were
// typed; no credential of any kind may be named so.
var reserved = []string{"stagehand", "stagehand-reconciler", "api-token", "skipconfirmation", "rollback"}

// ReservedRule says why a name Stagehand uses for itself is refused, for every kind of credential.
const ReservedRule = "Stagehand uses the names stagehand, stagehand-reconciler, api-token, skipConfirmation, rollback " +
	"(and stagehand:…) for itself, in locks and history; no token, GitHub login or Kubernetes user may carry one"

// Reserved reports whether name is one Stagehand uses for itself (compared without case), so that no
// token, login or user of that name is accepted: a record naming it could be read as Stagehand's own.
// The legacy API token's principal (token:api-token) is made by Stagehand, not named by a user.
func Reserved(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, r := range reserved {
		if n == r {
			return true
		}
	}
	return strings.HasPrefix(n, string(Stagehand)+":")
}

// ID is one identity: a kind and a name. The zero ID is nobody.
type ID struct {
	Kind Kind
	Name string
}

// New returns the ID of kind and name, refusing an unknown kind, an empty name, or one with white
// space or control characters.
func New(kind Kind, name string) (ID, error) {
	if !kind.known() {
		return ID{}, fmt.Errorf("identity kind %q: want one of github, token, kubernetes, stagehand", kind)
	}
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return ID{}, fmt.Errorf("identity name %q: want a name without white space", name)
	}
	return ID{Kind: kind, Name: name}, nil
}

// Parse reads an ID written by String. A string without a known kind before its first colon is a
// record written before IDs were typed: a legacy ID that shows as it was written and equals no typed
// ID. Parse never fails; use ParseTyped where a kind is required.
func Parse(s string) ID {
	if k, name, ok := strings.Cut(s, ":"); ok && Kind(k).known() && name != "" {
		return ID{Kind: Kind(k), Name: name}
	}
	return ID{Name: s}
}

// ParseTyped reads "kind:name", refusing a string without a known kind.
func ParseTyped(s string) (ID, error) {
	id := Parse(s)
	if id.Legacy() {
		return ID{}, fmt.Errorf("identity %q: want kind:name with kind one of github, token, kubernetes, stagehand (github:alice, token:ci-deployer)", s)
	}
	return New(id.Kind, id.Name)
}

// String writes id as "kind:name" (a legacy ID as its bare name).
func (id ID) String() string {
	if id.Kind == "" {
		return id.Name
	}
	return string(id.Kind) + ":" + id.Name
}

// IsZero reports whether id is nobody.
func (id ID) IsZero() bool { return id == ID{} }

// Legacy reports whether id was read from a record written before IDs were typed (a bare name).
func (id ID) Legacy() bool { return id.Kind == "" && id.Name != "" }

// Equal reports whether id and o are the same identity: the same kind and name, names of GitHub users
// compared without case (GitHub logins are case-insensitive), every other kind exactly. A legacy ID
// equals only the same legacy ID: its kind is unknown, so it is never taken for a typed one.
func (id ID) Equal(o ID) bool {
	if id.Kind != o.Kind {
		return false
	}
	if id.Kind == GitHub {
		return strings.EqualFold(id.Name, o.Name)
	}
	return id.Name == o.Name
}

// Key is a string that is equal for equal IDs, for maps and sets.
func (id ID) Key() string {
	if id.Kind == GitHub {
		return string(id.Kind) + ":" + strings.ToLower(id.Name)
	}
	return id.String()
}

// MarshalText writes id as String does.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads id as Parse does.
func (id *ID) UnmarshalText(b []byte) error { *id = Parse(string(b)); return nil }

// Principal is a verified caller: who proved themselves (ID), and the person they act for (ActsFor,
// zero when none was declared).
type Principal struct {
	ID ID
	// ActsFor is the person a named token or a ServiceAccount acts for (actsFor in the tokens file,
	// server.kubernetesActsFor for Kubernetes users): it is then that person for every rule.
	ActsFor ID
}

// Person returns the person p is for every rule: a GitHub user is themself; a token or a Kubernetes
// user that acts for someone is that someone. ok is false for automation: a token or Kubernetes user
// acting for nobody, and Stagehand itself.
func (p Principal) Person() (person ID, ok bool) {
	if !p.ActsFor.IsZero() {
		return p.ActsFor, true
	}
	if p.ID.Kind == GitHub {
		return p.ID, true
	}
	return ID{}, false
}

// Automation reports whether p acts for no person.
func (p Principal) Automation() bool {
	_, ok := p.Person()
	return !ok
}

// String names p: "token:alice-cli (for github:alice)".
func (p Principal) String() string {
	if p.ActsFor.IsZero() || p.ActsFor.Equal(p.ID) {
		return p.ID.String()
	}
	return p.ID.String() + " (for " + p.ActsFor.String() + ")"
}
