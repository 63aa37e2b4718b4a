package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxBreakGlassReason bounds a break-glass reason, in code points.
const MaxBreakGlassReason = 500

// BreakGlass is one break-glass: a person let one plan through the environment's closed deploy windows
// (a freeze), with a reason. It is kept in the environment's state beside the plan it is for; only that
// plan (PlanHash at Revision) is let through, once: the next plan waits for the windows again.
type BreakGlass struct {
	PlanHash string `json:"planHash"`
	Revision string `json:"revision"`
	// By is who broke the glass, as kind:name (github:alice).
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Applied is when the plan went out through the closed windows (zero: not yet).
	Applied time.Time `json:"applied,omitzero"`
}

// For reports whether b lets the plan planHash of revision through.
func (b BreakGlass) For(planHash, revision string) bool {
	return b.PlanHash == planHash && b.Revision == revision
}

// Message says what happened: "break-glass by github:alice: the payments outage needs the fix".
func (b BreakGlass) Message() string {
	return fmt.Sprintf("break-glass by %s: %s", b.By, b.Reason)
}

// ErrBadReason is matched by every error of CheckReason.
var ErrBadReason = errors.New("break-glass reason refused")

// CheckReason refuses a break-glass reason that says nothing or cannot be shown safely: empty or only
// spaces, longer than MaxBreakGlassReason code points, not UTF-8, or holding control characters (a line
// break, an escape sequence) that would forge lines in a log, an Event or a chat message. It returns the
// reason trimmed.
func CheckReason(reason string) (string, error) {
	r := strings.TrimSpace(reason)
	switch {
	case r == "":
		return "", fmt.Errorf("%w: empty: say why the plan must go out through the freeze", ErrBadReason)
	case !utf8.ValidString(r):
		return "", fmt.Errorf("%w: not UTF-8", ErrBadReason)
	case utf8.RuneCountInString(r) > MaxBreakGlassReason:
		return "", fmt.Errorf("%w: %d characters long: at most %d", ErrBadReason, utf8.RuneCountInString(r), MaxBreakGlassReason)
	}
	for i, c := range r {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			return "", fmt.Errorf("%w: a control character %U at byte %d: one line of plain text", ErrBadReason, c, i)
		}
	}
	return r, nil
}

// GlassBreaker is what a Gate may also implement to hear that a plan goes out through closed deploy
// windows by a break-glass (the notifications send deploy.break-glass; the Environment's Events record
// it). The worker calls it once per plan, as the apply starts; errors are logged and counted like
// Completed's, and the apply goes on.
type GlassBreaker interface {
	BrokeGlass(ctx context.Context, p Proposal, b BreakGlass) error
}

// BrokeGlass tells every gate that implements GlassBreaker.
func (m multiGate) BrokeGlass(ctx context.Context, p Proposal, b BreakGlass) error {
	var errs []error
	for _, g := range m {
		if d, ok := g.(GlassBreaker); ok {
			errs = append(errs, d.BrokeGlass(ctx, p, b))
		}
	}
	return errors.Join(errs...)
}

var _ GlassBreaker = multiGate{}

// BreakGlasser lets one plan through an environment's closed deploy windows; the daemon implements it.
// BreakGlass accepts only the planHash of the plan waiting now (else a *NotPendingError): the plan
// pending approval, or a skipConfirmation environment's plan the windows deferred (its planHash is the
// status's); a reason CheckReason accepts (else an error matching ErrBadReason); and refuses
// (*RefusedError) when the windows are open, the environment has none, or that plan went out through
// them by a break-glass already. It does not approve: a pending plan still needs its approvals, and goes
// out through the closed windows once it has them (at once when it has them already). It returns the
// plan, with its approvals so far (a skipConfirmation plan's: AutoApprover's). A second break-glass of
// the same plan before it goes out changes nothing. Who may break the glass is the door's to check (the
// scope break-glass:<env>).
type BreakGlasser interface {
	BreakGlass(ctx context.Context, env, planHash string, why Why) (*Pending, error)
}
