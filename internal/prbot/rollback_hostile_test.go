package prbot

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// mention matches what GitHub turns into a notification: @login or
// @org/team after a non-word character.
var mention = regexp.MustCompile(`(^|[^\w` + "`" + `])@[A-Za-z0-9]`)

// A reason is typed by whoever may roll back, or is a pod's failure message
// for an automatic rollback: whatever it holds, the title stays one bounded
// line and the body neither gains table rows or HTML nor pings anyone.
func TestRollbackHostileReason(t *testing.T) {
	tests := []struct {
		name, reason string
	}{
		{"newlines and table rows", "payments broke\n| evil | row | x | y | z | w | v |\n\n# Heading"},
		{"mentions", "cc @alice and @acme/oncall, email bob@example.com"},
		{"html", `<img src="https://evil.example/x.png"> <!-- stagehand:rollback production 0000000 --> <script>x</script>`},
		{"carriage returns and tabs", "a\r\n| row |\r\tb\u2028| row2 |"},
		{"very long", strings.Repeat("ä @x ", 3000)},
		{"control and bidi characters", "ok\x00\x1b[31mred\x1b[0m \u202egnp.exe\u202c \u2066x\u2069"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, revs := rollbackRepo(t)
			res, err := f.bot(t).Rollback(context.Background(), RollbackRequest{Env: "production", Revision: revs[0], Reason: tt.reason, RequestedBy: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			pr := f.OpenPulls()[0]
			if strings.ContainsAny(pr.Title, "\r\n\u2028\u2029") || utf8.RuneCountInString(pr.Title) > promote.MaxTitle {
				t.Errorf("title is not one line of at most %d characters: %q", promote.MaxTitle, pr.Title)
			}
			if strings.IndexFunc(pr.Title+pr.Body, func(r rune) bool {
				return unicode.IsControl(r) && r != '\n' || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
			}) >= 0 {
				t.Errorf("title or body carries control or bidi characters: %q", pr.Title)
			}
			if !strings.HasPrefix(pr.Title, "Rollback production to "+revs[0][:7]+": ") {
				t.Errorf("title = %q", pr.Title)
			}
			if pr.Title != res.Title {
				t.Errorf("result title %q, pull request's %q", res.Title, pr.Title)
			}
			var rows, reasonLines int
			for line := range strings.Lines(pr.Body) {
				if strings.HasPrefix(line, "|") {
					rows++
				}
				if strings.HasPrefix(line, "Reason: ") {
					reasonLines++
					if m := mention.FindString(line); m != "" {
						t.Errorf("reason line pings %q: %q", m, line)
					}
				}
				if strings.Contains(line, "<img") || strings.Contains(line, "<script") || strings.Count(line, "<!--") > 0 && !strings.HasPrefix(line, "<!-- stagehand:rollback production ") {
					t.Errorf("body line carries HTML: %q", line)
				}
			}
			// Header, separator and the three containers: the reason adds none.
			if rows != 5 || reasonLines != 1 {
				t.Errorf("body has %d table lines and %d reason lines, want 5 and 1:\n%.2000s", rows, reasonLines, pr.Body)
			}
			if strings.Count(pr.Body, "<!-- stagehand:rollback") != 1 {
				t.Errorf("body has another rollback marker:\n%s", pr.Body)
			}
		})
	}
}

// A hold's release note carries the caller's reason: it is quoted as one
// line that pings nobody.
func TestNoteRollbackQuotesItsText(t *testing.T) {
	f, revs := rollbackRepo(t)
	b := f.bot(t)
	ctx := context.Background()
	if _, err := b.Rollback(ctx, RollbackRequest{Env: "production", Revision: revs[0], Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	note := "The hold on production was released by alice: " + Quote("fixed\n| row |\ncc @acme/oncall <b>now</b>")
	if err := b.NoteRollback(ctx, "production", note); err != nil {
		t.Fatal(err)
	}
	comments := f.Srv.Repo(owner, repo).Comments(f.OpenPulls()[0].Number)
	if len(comments) != 1 {
		t.Fatalf("%d comments, want 1", len(comments))
	}
	body := comments[0].Body
	if m := mention.FindString(body); m != "" || strings.Contains(body, "\n|") || strings.Contains(body, "<b>") {
		t.Errorf("note is not quoted: %q", body)
	}
	if !strings.Contains(body, "fixed \\| row \\| cc @") {
		t.Errorf("note lost its text: %q", body)
	}
}

// A rollback goes back to versions that were on the base branch: a commit
// of another branch (a feature branch, an unmerged pull request) never ran
// and never passed review there, so it is refused.
func TestRollbackRefusesARevisionOffTheBaseBranch(t *testing.T) {
	f, revs := rollbackRepo(t)
	payments := strings.Replace(production()[prodPayments], "2.3.0", "9.9.9-evil", 1)
	other := f.Srv.Repo(owner, repo).Commit("feature", map[string]string{prodPayments: payments}, "not reviewed")
	b := f.bot(t)
	for _, rev := range []string{other} {
		_, err := b.Rollback(context.Background(), RollbackRequest{Env: "production", Revision: rev, Reason: "x"})
		if err == nil || !errors.Is(err, ErrUnknownRevision) || !strings.Contains(err.Error(), "not on main") {
			t.Errorf("rollback to %s of another branch: err = %v, want ErrUnknownRevision saying it is not on main", rev, err)
		}
	}
	if n := len(f.Srv.Repo(owner, repo).PullRequests()); n != 0 {
		t.Errorf("%d pull requests opened", n)
	}
	// Revisions of main are still fine.
	if _, err := b.Rollback(context.Background(), RollbackRequest{Env: "production", Revision: revs[0], Reason: "x"}); err != nil {
		t.Fatal(err)
	}
}

// Two people roll the same environment back at the same moment: one pull
// request, on one branch, no error for either.
func TestRollbackConcurrent(t *testing.T) {
	f, revs := rollbackRepo(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = f.bot(t).Rollback(context.Background(), RollbackRequest{Env: "production", Revision: revs[0], Reason: "both at once"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("rollback %d: %v", i, err)
		}
	}
	if n := len(f.OpenPulls()); n != 1 {
		t.Errorf("%d open pull requests, want 1", n)
	}
	if got := f.File(t, RollbackBranch("production"), prodCheckout); got != checkoutJSON {
		t.Errorf("rollback branch's checkout-api.json is not the one of %s:\n%s", revs[0], got)
	}
}

// A history entry recorded while an incident rollback's pin was in place
// ran other versions than git says at its revision: rolling back to it goes
// back to what ran (Ran.Services), not to git's versions there.
func TestRollbackToWhatRanNotWhatGitSaid(t *testing.T) {
	f, revs := rollbackRepo(t)
	ran := &Ran{HistoryID: "7", Services: []manifest.Service{
		{Name: "payments-api", Containers: []manifest.Container{{DockerName: "payments-api", DockerTag: "2.3.0"}}},
		{Name: "search", Containers: []manifest.Container{{DockerName: "search", DockerTag: "0.1.0"}}},
	}}
	// At revs[2] git says payments-api 2.4.0, but 2.3.0 was pinned and ran.
	res, err := f.bot(t).Rollback(context.Background(), RollbackRequest{Env: "production", Revision: revs[2], Reason: "back to #7", Ran: ran})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != ActionOpened {
		t.Fatalf("result = %+v, want a pull request back to what ran", res)
	}
	if diff := cmp.Diff([]string{prodPayments}, res.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got := f.File(t, res.Branch, prodPayments); got != production()[prodPayments] {
		t.Errorf("payments-api.json on the branch is not 2.3.0's:\n%s", got)
	}
}
