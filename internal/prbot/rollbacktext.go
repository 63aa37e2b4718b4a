package prbot

import (
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// rollbackMarker opens every rollback pull request body.
func rollbackMarker(env, rev string) string {
	return fmt.Sprintf("<!-- stagehand:rollback %s %s -->", env, rev)
}

// rollbackBody is the rollback pull request's text (res.Revision is the
// commit rolled back to): why, a table of what goes back (service, now →
// back to, when it last ran, who approved it then, the upstream compare
// link by the ownership convention), the files, and what ends the hold.
func rollbackBody(req RollbackRequest, res *RollbackResult, ran *Ran, links promote.Links) string {
	rev := res.Revision
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nRolls **%s** back to the versions of `%s`", rollbackMarker(req.Env, rev), req.Env, rev)
	if ran != nil && ran.HistoryID != "" {
		fmt.Fprintf(&b, " (history entry %s)", ran.HistoryID)
	}
	b.WriteString(".\n\n")
	fmt.Fprintf(&b, "Reason: %s\n", Quote(req.Reason))
	if req.RequestedBy != "" {
		fmt.Fprintf(&b, "Requested by: %s\n", Quote(req.RequestedBy))
	}
	when, who := "—", "—"
	if ran != nil {
		if !ran.When.IsZero() {
			when = ran.When.UTC().Format(time.RFC3339)
		}
		if ran.Approver != "" {
			who = escape(ran.Approver)
		}
	}
	b.WriteString("\n| service | container | now | back to | last ran | approved by | upstream |\n|---|---|---|---|---|---|---|\n")
	for _, c := range res.Changes {
		if len(c.Containers) == 0 {
			fmt.Fprintf(&b, "| %s | — | version `%s` | version `%s` | %s | %s | — |\n", escape(c.Service), c.FromVersion, c.ToVersion, when, who)
		}
		for _, ct := range c.Containers {
			upstream := "—"
			// What is undone: from the version going back to the one running now.
			if link := links.Compare(c.Owner, promote.ContainerChange{FromTag: ct.ToTag, ToTag: ct.FromTag}); link != "" {
				upstream = fmt.Sprintf("[%s...%s](%s)", escape(ct.ToTag), escape(ct.FromTag), link)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", escape(c.Service), escape(ct.DockerName),
				image(ct.FromTag, ct.FromDigest), image(ct.ToTag, ct.ToDigest), when, who, upstream)
		}
	}
	b.WriteString("\nFiles:\n")
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "- `%s`: %s", c.File, escape(c.Service))
		if c.Override {
			b.WriteString(" (an overriding entry: today's is in a shared include)")
		}
		b.WriteString("\n")
	}
	if len(res.Skipped) > 0 {
		b.WriteString("\nNot rolled back:\n")
		for _, s := range res.Skipped {
			fmt.Fprintf(&b, "- %s\n", escape(s))
		}
	}
	fmt.Fprintf(&b, "\nWhile this pull request is open, a hold on %s stops `prbot bump` and `prbot promote` from moving it; "+
		"the reconciler keeps applying what is merged. Merging this pull request ends the hold; so does `reconciler release --env %s`.\n", req.Env, req.Env)
	return truncate(b.String(), promote.MaxBody)
}

func image(tag, digest string) string {
	if digest == "" {
		return "`" + tag + "`"
	}
	return "`" + tag + "@" + digest + "`"
}

func truncate(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit-1]) + "…"
}

// Quote makes text that someone typed (a rollback's or a release's reason,
// a failure message) safe to show on one line of a pull request or comment:
// whitespace (newlines included) collapsed to single spaces, no table cell
// break, no HTML, and no @mention that GitHub would notify (a zero-width
// space follows the @).
func Quote(s string) string {
	return strings.ReplaceAll(escape(oneLine(s)), "@", "@\u200b")
}

// escape keeps a value from breaking a Markdown table.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}
