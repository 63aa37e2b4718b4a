// Package promotion says, between two adjacent stages of pipeline.yaml, what
// the next promotion waits for: the earlier stage healthy, a soak's time
// left, the later stage's promotion window, its locks and holds. It decides
// nothing of its own: it feeds pkg/promote's Evaluate — the judgement prbot
// promotes by — with what the reconciler records (each stage's deploys and
// their verification as the earlier stage's evidence, the stages resolved
// at the newest revision, the later stage's locks), and words the Decision
// for the page and `reconciler status`.
package promotion
