package tally

import (
	"fmt"
	"strings"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Who may approve, from values alone: where four-eyes starts counting
// commits, whose commit an approver's name matches, and why automation is
// refused. The Counter asks them with what it read.

// fourEyesBase is where four-eyes starts its range of commits: the revision
// whose versions the cluster runs as git says them. That is the last apply's
// revision, unless an incident rollback's pin stood when it was recorded
// (PinnedTo): it then ran the versions of the revision rolled back to, not
// its own, and the range starts there, so that the authors of the changes
// rolled back are kept out of approving the fix-forward that ships them
// again ("" when nothing was applied: the pending commit alone).
func fourEyesBase(history []approval.Entry) string {
	for _, e := range history {
		if !Applied(e) {
			continue
		}
		if e.PinnedTo != "" {
			return e.PinnedTo
		}
		return e.Revision
	}
	return ""
}

// authorName is the name of who that commit authors are matched against: the person's (a GitHub login),
// or, for automation, its own name.
func authorName(who identity.Principal) string {
	if person, ok := who.Person(); ok {
		return person.Name
	}
	return who.ID.Name
}

// authorMatch reports the author naming who: the same GitHub login or e-mail address, or an e-mail address
// whose local part is who (alice for alice@acme.com), compared without case.
func authorMatch(who string, authors []string) (string, bool) {
	who = strings.TrimPrefix(strings.TrimSpace(who), "@")
	if who == "" {
		return "", false
	}
	for _, a := range authors {
		local, _, isEmail := strings.Cut(a, "@")
		if strings.EqualFold(a, who) || (isEmail && strings.EqualFold(local, who)) {
			return a, true
		}
	}
	return "", false
}

// automationRefused says why who, acting for no person, may not approve under policy.
func automationRefused(policy config.Approvals, who identity.Principal) string {
	why := "approvals.automation is deny"
	if policy.Automation == "" {
		var rules []string
		if policy.Required > 1 {
			rules = append(rules, fmt.Sprintf("approvals.required is %d", policy.Required))
		}
		if policy.ForbidAuthors {
			rules = append(rules, "forbidAuthors is set")
		}
		why = strings.Join(rules, " and ") + ", so approvals.automation defaults to deny"
	}
	return fmt.Sprintf("%s acts for no person (automation), and %s: give the credential the person it acts for "+
		"(actsFor: github:<login>), or set approvals.automation: allow", who.ID, why)
}

// Applied reports whether e's versions went into the cluster (succeeded, or
// interrupted and continued by the next leader).
func Applied(e approval.Entry) bool {
	return e.Result == approval.ResultSucceeded || e.Result == approval.ResultInterrupted
}
