package github

import (
	"fmt"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/identity"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// SummaryLimit is the longest check-run output summary (and text) GitHub accepts, in characters.
const SummaryLimit = 65535

// Output is a check run's title and Markdown summary.
type Output struct {
	Title   string
	Summary string
}

// RenderPlan shows a plan as Markdown: per target a table of service, workload, container, from → to and
// digest; then the blocked changes with their locks, the problems and the unmanaged workloads. note (may
// be empty) is put first, e.g. who may approve. Output longer than SummaryLimit is cut at a line, with a
// pointer to the full plan at detailsURL.
func RenderPlan(p *reconcile.Plan, note, detailsURL string) Output {
	var b strings.Builder
	if note != "" {
		fmt.Fprintf(&b, "%s\n\n", note)
	}
	fmt.Fprintf(&b, "**%s** at `%s` · planHash `%s`\n\n", p.Environment, short(p.Revision), p.PlanHash)
	if p.HistoryRewritten != "" {
		fmt.Fprintf(&b, "> [!WARNING]\n> **History rewritten**: `%s` does not descend from `%s`, the last revision applied.\n\n",
			short(p.Revision), short(p.HistoryRewritten))
	}
	if len(p.Changes) == 0 {
		b.WriteString("No changes: every workload already runs the desired images.\n")
	}
	var target string
	for _, c := range p.Changes {
		if c.Target != target {
			target = c.Target
			fmt.Fprintf(&b, "\n#### Target `%s` (namespace `%s`)\n\n", c.Target, c.Namespace)
			b.WriteString("| Service | Workload | Container | From → To | Digest |\n|---|---|---|---|---|\n")
		}
		fmt.Fprintf(&b, "| %s | %s/%s | %s | %s | %s |\n", cell(c.Service), c.Kind, cell(c.Name), cell(c.Container),
			fromTo(c.From, c.To), digestCell(c.To))
	}
	if len(p.Blocked) > 0 {
		fmt.Fprintf(&b, "\n#### Blocked by deploy locks (%d, not applied)\n\n", len(p.Blocked))
		b.WriteString("| Service | Target | Workload | From → To | Locks |\n|---|---|---|---|---|\n")
		for _, x := range p.Blocked {
			fmt.Fprintf(&b, "| %s | %s | %s/%s | %s | %s |\n", cell(x.Service), cell(x.Target), x.Kind, cell(x.Name),
				fromTo(x.From, x.To), cell(strings.Join(x.Locks, "; ")))
		}
	}
	if len(p.Problems) > 0 {
		fmt.Fprintf(&b, "\n#### Problems (%d, those services are not applied in that target)\n\n", len(p.Problems))
		for _, x := range p.Problems {
			fmt.Fprintf(&b, "- **%s** in `%s`: %s\n", x.Service, x.Target, oneLine(x.Message))
		}
	}
	if len(p.Unmanaged) > 0 {
		fmt.Fprintf(&b, "\n#### Unmanaged workloads (%d, labelled but not in the manifest)\n\n", len(p.Unmanaged))
		for _, x := range p.Unmanaged {
			fmt.Fprintf(&b, "- `%s` %s/%s (service `%s`)\n", x.Target, x.Kind, x.Name, x.Service)
		}
	}
	return Output{Title: planTitle(p), Summary: cut(b.String(), detailsURL)}
}

func planTitle(p *reconcile.Plan) string {
	t := fmt.Sprintf("%d %s in %d %s", len(p.Changes), plural(len(p.Changes), "change", "changes"),
		len(p.Workloads()), plural(len(p.Workloads()), "workload", "workloads"))
	if len(p.Blocked) > 0 {
		t += fmt.Sprintf(", %d blocked", len(p.Blocked))
	}
	if len(p.Problems) > 0 {
		t += fmt.Sprintf(", %d %s", len(p.Problems), plural(len(p.Problems), "problem", "problems"))
	}
	return t
}

// RenderResult shows the outcome of an apply: who approved, then one row per workload.
func RenderResult(res *reconcile.Result, approver string, applyErr error, detailsURL string) Output {
	var b strings.Builder
	p := res.Plan
	switch {
	case approver != "":
		fmt.Fprintf(&b, "Approved by %s.\n\n", mention(approver))
	case p != nil && p.SkipConfirmation:
		b.WriteString("Applied automatically: this environment skips confirmation.\n\n")
	}
	if p != nil {
		fmt.Fprintf(&b, "**%s** at `%s` · planHash `%s`\n\n", p.Environment, short(p.Revision), p.PlanHash)
		if p.HistoryRewritten != "" {
			fmt.Fprintf(&b, "> [!WARNING]\n> **History rewritten**: `%s` does not descend from `%s`, the last revision applied.\n\n",
				short(p.Revision), short(p.HistoryRewritten))
		}
	}
	if applyErr != nil {
		fmt.Fprintf(&b, "**Apply failed:** %s\n\n", oneLine(applyErr.Error()))
	}
	failed := 0
	if len(res.Workloads) > 0 {
		b.WriteString("| Target | Workload | Service | Result | Changes | Time | Message |\n|---|---|---|---|---|---|---|\n")
	}
	for _, w := range res.Workloads {
		if w.Outcome == reconcile.OutcomeFailed || w.Outcome == reconcile.OutcomeBlocked {
			failed++
		}
		var changes []string
		for _, c := range w.Changes {
			changes = append(changes, cell(c.Container)+": "+fromTo(c.From, c.To))
		}
		fmt.Fprintf(&b, "| %s | %s/%s | %s | %s %s | %s | %s | %s |\n", cell(w.Target), w.Kind, cell(w.Name), cell(w.Service),
			outcomeIcon(w.Outcome), w.Outcome, strings.Join(changes, "<br>"), w.Duration.Round(100*time.Millisecond), cell(oneLine(w.Message)))
	}
	if p != nil && len(p.Blocked)+len(p.Problems) > 0 {
		fmt.Fprintf(&b, "\nNot applied: %d blocked %s, %d %s (see the plan).\n", len(p.Blocked), plural(len(p.Blocked), "change", "changes"),
			len(p.Problems), plural(len(p.Problems), "problem", "problems"))
	}
	title := fmt.Sprintf("Applied %d %s", len(res.Workloads), plural(len(res.Workloads), "workload", "workloads"))
	if failed > 0 || applyErr != nil {
		title = fmt.Sprintf("Failed: %d of %d %s", failed, len(res.Workloads), plural(len(res.Workloads), "workload", "workloads"))
	}
	return Output{Title: title, Summary: cut(b.String(), detailsURL)}
}

func outcomeIcon(o reconcile.Outcome) string {
	switch o {
	case reconcile.OutcomeSucceeded, reconcile.OutcomePatched, reconcile.OutcomeOnDelete:
		return "✅"
	case reconcile.OutcomeBlocked:
		return "🔒"
	}
	return "❌"
}

// cut keeps s within SummaryLimit characters, ending at a whole line, and says where the rest is.
func cut(s, detailsURL string) string {
	if len(s) <= SummaryLimit { // bytes ≥ characters, so this is conservative
		return s
	}
	total := strings.Count(s, "\n")
	where := "in the reconciler's API (`/api/v1/environments`)"
	if detailsURL != "" {
		where = "at " + detailsURL
	}
	footer := func(shown int) string {
		return fmt.Sprintf("\n**Cut to fit GitHub's limit of %d characters: %d of %d lines shown. The full plan is %s.**\n",
			SummaryLimit, shown, total, where)
	}
	limit := SummaryLimit - len(footer(total)) - 1
	head := s[:limit]
	head = head[:strings.LastIndexByte(head, '\n')+1]
	return head + footer(strings.Count(head, "\n"))
}

// image splits "repo:tag@sha256:…" into repository, tag and digest.
func image(ref string) (repo, tag, digest string) {
	repo, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

// fromTo shows two images as their tags when only the tag (or digest) changes, else in full.
func fromTo(from, to string) string {
	fr, ft, fd := image(from)
	tr, tt, td := image(to)
	if fr == tr && ft != "" && tt != "" {
		if ft == tt && fd != td {
			return fmt.Sprintf("`%s@%s` → `%s@%s`", ft, shortDigest(fd), tt, shortDigest(td))
		}
		return fmt.Sprintf("`%s` → `%s`", ft, tt)
	}
	return fmt.Sprintf("`%s` → `%s`", from, to)
}

func digestCell(ref string) string {
	if _, _, d := image(ref); d != "" {
		return "`" + shortDigest(d) + "`"
	}
	return "–"
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	if d == "" {
		return "no digest"
	}
	return d
}

func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func short(rev string) string {
	if len(rev) > 7 {
		return rev[:7]
	}
	return rev
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// mention writes a GitHub user (github:login, or a bare login from a click) as @login. Other identities
// are not GitHub logins and stay as written (token:ci-deployer, kubernetes:…, stagehand:skipConfirmation);
// of records written before identities were typed, "api" (the API's old default) reads as the API, and
// names with spaces or colons stay as they are. Several approvers joined by ", " are mentioned each.
func mention(login string) string {
	if names := strings.Split(login, ", "); len(names) > 1 { // several approvers, approval.JoinApprovers
		for i, n := range names {
			names[i] = mention(n)
		}
		return strings.Join(names, ", ")
	}
	if id := identity.Parse(login); id.Kind == identity.GitHub {
		return "@" + id.Name
	} else if !id.Legacy() {
		return id.String()
	}
	switch {
	case login == "api":
		return "the reconciler API"
	case login == "" || strings.ContainsAny(login, " :()"):
		return login
	}
	return "@" + login
}
