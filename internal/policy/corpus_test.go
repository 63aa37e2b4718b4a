package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
)

// corpus is testdata/corpus.json: plans by name, and cases of rules over one of them with the decision
// they must come to (want) or the error that refuses it.
type corpus struct {
	Plans map[string]*reconcile.Plan `json:"plans"`
	Cases []struct {
		Name     string              `json:"name"`
		Plan     string              `json:"plan"`
		Now      time.Time           `json:"now"`
		Authors  []string            `json:"authors"`
		Files    []string            `json:"files"`
		Trailers map[string][]string `json:"trailers"`
		History  []Deploy            `json:"history"`
		Locks    []Lock              `json:"locks"`
		Rules    []Rule              `json:"rules"`
		Want     *Requirement        `json:"want"`
		Error    string              `json:"error"`
	} `json:"cases"`
}

func TestCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("reading the corpus: %v", err)
	}
	compiler, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range c.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			plan, ok := c.Plans[tc.Plan]
			if !ok {
				t.Fatalf("no plan %q in the corpus", tc.Plan)
			}
			if (tc.Want == nil) == (tc.Error == "") {
				t.Fatal("a case says either want or error")
			}
			set, err := NewSet(compiler, tc.Rules)
			if err != nil {
				t.Fatalf("compiling: %v", err)
			}
			in := Input{Plan: FromPlan(plan), Revision: Revision{SHA: "3f2a9c1d", Authors: append([]string{"alice@acme.com", "dev@contractor.example"}, tc.Authors...),
				Files: tc.Files, Trailers: tc.Trailers},
				Now: tc.Now, History: tc.History, Locks: tc.Locks}
			start := time.Now()
			got, outcomes, err := set.Evaluate(context.Background(), in)
			// Every rule tracked comes to the same decision, outcome by outcome, as the untracked
			// programs of the rules whose estimate is within the cost limit.
			tracked := *set
			tracked.tracked = true
			tgot, toutcomes, terr := tracked.Evaluate(context.Background(), in)
			if diff := cmp.Diff(fmt.Sprint(got, outcomes, err), fmt.Sprint(tgot, toutcomes, terr)); diff != "" {
				t.Errorf("untracked and tracked decisions differ (-untracked +tracked):\n%s", diff)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("evaluating took %v: the cost limit must stop a rule long before", took)
			}
			if len(outcomes) != len(tc.Rules) {
				t.Errorf("%d outcomes for %d rules: every rule is explained", len(outcomes), len(tc.Rules))
			}
			if tc.Error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.Error) {
					t.Fatalf("Evaluate error = %v, want one containing %q (a rule that cannot be judged refuses)", err, tc.Error)
				}
				if got.Required != 0 || len(got.Applied) != 0 {
					t.Errorf("a refused decision carries a requirement: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			if diff := cmp.Diff(*tc.Want, got); diff != "" {
				t.Errorf("requirement (-want +got):\n%s", diff)
			}
		})
	}
}
