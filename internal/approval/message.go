package approval

import (
	"fmt"
	"strings"

	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// ShortRevision is rev as an outcome's message and the logs abbreviate it:
// gitsource.ShortRevision, the one abbreviation of a revision.
func ShortRevision(rev string) string { return gitsource.ShortRevision(rev) }

// JoinMax joins the first n of msgs with "; " for an outcome's message,
// saying how many more there were: a thousand failed workloads make one
// readable line, not a thousand.
func JoinMax(msgs []string, n int) string {
	if len(msgs) <= n {
		return strings.Join(msgs, "; ")
	}
	return strings.Join(msgs[:n], "; ") + fmt.Sprintf("; and %d more", len(msgs)-n)
}
