package promote

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// GitHub's limits on a pull request.
const (
	MaxTitle = 256
	MaxBody  = 65536
)

// Links builds upstream links. Zero value: https://github.com, no owner (no links).
type Links struct {
	// WebURL is the GitHub web root, e.g. https://github.com or a GitHub
	// Enterprise host (default https://github.com).
	WebURL string
	// Owner is the organisation that holds the upstream repositories.
	Owner string
}

// Compare returns the upstream compare link for a container change by the
// ownership convention, or "" when there is nothing to compare.
func (l Links) Compare(owner string, c ContainerChange) string {
	if l.Owner == "" || owner == "" || c.FromTag == "" || c.FromTag == c.ToTag {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s/compare/%s...%s", l.web(), url.PathEscape(l.Owner), url.PathEscape(owner), url.PathEscape(c.FromTag), url.PathEscape(c.ToTag))
}

func (l Links) web() string {
	if l.WebURL == "" {
		return "https://github.com"
	}
	return strings.TrimSuffix(l.WebURL, "/")
}

// Marker opens every promotion PR body; prbot finds its own PRs by branch,
// the marker tells readers (and tools) what wrote the body.
func Marker(p Pair) string { return fmt.Sprintf("<!-- stagehand:promote %s %s -->", p.From, p.To) }

// Title renders the promotion PR title, at most MaxTitle characters.
func Title(d Decision) string {
	prefix := fmt.Sprintf("Promote %s → %s: ", d.Pair.From, d.Pair.To)
	var parts []string
	for _, c := range d.Changes {
		parts = append(parts, c.Service+" "+changeSummary(c))
	}
	return fitList(prefix, parts, MaxTitle)
}

func changeSummary(c Change) string {
	if c.ToVersion != "" {
		return c.ToVersion
	}
	if len(c.Containers) == 1 {
		return c.Containers[0].ToTag
	}
	tags := map[string]bool{}
	for _, ct := range c.Containers {
		tags[ct.ToTag] = true
	}
	if len(tags) == 1 {
		return c.Containers[0].ToTag
	}
	return fmt.Sprintf("(%d images)", len(c.Containers))
}

// fitList joins parts after prefix, ending with "and N more" when they do not
// fit in limit characters.
func fitList(prefix string, parts []string, limit int) string {
	full := prefix + strings.Join(parts, ", ")
	if utf8.RuneCountInString(full) <= limit {
		return full
	}
	for n := len(parts) - 1; n >= 0; n-- {
		s := prefix + strings.Join(parts[:n], ", ")
		if n > 0 {
			s += ", "
		}
		s += fmt.Sprintf("and %d more", len(parts)-n)
		if utf8.RuneCountInString(s) <= limit {
			return s
		}
	}
	return truncate(full, limit)
}

func truncate(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit-1]) + "…"
}

// Body renders the promotion PR body: a header, a table per service (from →
// to, digest, upstream compare link, evidence of health) and the services
// held back, within MaxBody characters; sections that do not fit are counted
// in a closing line instead.
func Body(d Decision, links Links) string {
	var head strings.Builder
	fmt.Fprintf(&head, "%s\n## Promote %s → %s\n\n", Marker(d.Pair), d.Pair.From, d.Pair.To)
	if d.Source != "" {
		fmt.Fprintf(&head, "Versions of **%s** as of commit `%s`.", d.Pair.From, d.Source)
	}
	fmt.Fprintf(&head, " %d service(s) to promote.\n", len(d.Changes))

	sections := make([]string, 0, len(d.Changes)+1)
	for _, c := range d.Changes {
		sections = append(sections, serviceSection(c, d.Pair, links))
	}
	if len(d.Held) > 0 {
		var b strings.Builder
		b.WriteString("\n### Held back\n\n")
		for _, h := range d.Held {
			fmt.Fprintf(&b, "- **%s**: %s", h.Service, escape(h.Reason))
			if !h.Until.IsZero() {
				fmt.Fprintf(&b, " (eligible at %s)", h.Until.UTC().Format(time.RFC3339))
			}
			b.WriteString("\n")
		}
		sections = append(sections, b.String())
	}
	footer := "\n---\n_Opened by Stagehand prbot; updated in place while the stages differ, closed when nothing is left to promote._\n"

	var body strings.Builder
	body.WriteString(head.String())
	n := utf8.RuneCountInString(body.String()) + utf8.RuneCountInString(footer)
	for i, s := range sections {
		omitted := fmt.Sprintf("\n_… %d more section(s) not shown: the body would exceed GitHub's %d-character limit. The diff holds every change._\n", len(sections)-i, MaxBody)
		sn := utf8.RuneCountInString(s)
		if n+sn+utf8.RuneCountInString(omitted) > MaxBody && (i < len(sections)-1 || n+sn > MaxBody) {
			body.WriteString(omitted)
			break
		}
		body.WriteString(s)
		n += sn
	}
	body.WriteString(footer)
	return truncate(body.String(), MaxBody)
}

func serviceSection(c Change, p Pair, links Links) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %s", escape(c.Service))
	if c.New {
		fmt.Fprintf(&b, " (new in %s)", p.To)
	}
	b.WriteString("\n\n")
	if c.ToVersion != "" {
		from := c.FromVersion
		if from == "" {
			from = "—"
		}
		fmt.Fprintf(&b, "Version: `%s` → `%s`\n\n", from, c.ToVersion)
	}
	b.WriteString("| container | from | to | digest | upstream |\n|---|---|---|---|---|\n")
	for _, ct := range c.Containers {
		from := "—"
		if ct.FromTag != "" {
			from = "`" + ct.FromTag + "`"
		}
		digest := "—"
		if ct.ToDigest != "" {
			digest = "`" + ct.ToDigest + "`"
		}
		upstream := "—"
		if link := links.Compare(c.Owner, ct); link != "" {
			upstream = fmt.Sprintf("[%s...%s](%s)", escape(ct.FromTag), escape(ct.ToTag), link)
		}
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s | %s |\n", escape(ct.DockerName), from, ct.ToTag, digest, upstream)
	}
	fmt.Fprintf(&b, "\nFile: `%s`", c.File)
	if c.Owner != "" {
		fmt.Fprintf(&b, " (owner: `%s`)", c.Owner)
	}
	b.WriteString("\n")
	if h := c.Health; h != nil {
		fmt.Fprintf(&b, "Healthy in %s: [%s](%s) succeeded on `%s` at %s; healthy since %s.\n",
			p.From, CheckName(p.From), h.Check.URL, short(h.Commit), h.Check.CompletedAt.UTC().Format(time.RFC3339), h.Since.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// escape keeps a value from breaking a Markdown table.
func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(s)
}
