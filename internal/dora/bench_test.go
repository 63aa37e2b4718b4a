package dora_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/dora"
)

// BenchmarkReport: a report over a full history (the state keeps 100
// entries), every lead time remembered by the CommitCache after the first.
func BenchmarkReport(b *testing.B) {
	var history []approval.Entry
	commits := commitTimes{}
	for i := 100; i >= 1; i-- {
		result := approval.ResultSucceeded
		if i%7 == 0 {
			result = approval.ResultFailed
		}
		rev := fmt.Sprintf("r%d", i)
		e := entry(int64(i), rev, result, at(0, time.Duration(i)*6*time.Hour))
		commits[rev] = e.Finished.Add(-time.Hour)
		history = append(history, e)
	}
	r, err := dora.NewReporter(dora.WithCommits(commits), dora.WithClock(func() time.Time { return at(30, 0) }))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if rep := r.Report(context.Background(), "prod", history, 30*24*time.Hour); rep.Deploys != 100 {
			b.Fatalf("deploys = %d", rep.Deploys)
		}
	}
}
