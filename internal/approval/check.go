package approval

import (
	"strings"

	"github.com/stagehand-gitops/stagehand/pkg/promote"
)

// checkPrefix starts every check run name of the reconciler: pkg/promote
// spells it, because prbot reads the same runs as evidence of health.
var checkPrefix = promote.CheckName("")

// CheckName is the approval check run of env, "stagehand/<env>": the same
// name pkg/promote reads as the evidence that a stage runs a commit healthy.
func CheckName(env string) string { return promote.CheckName(env) }

// PreviewName is the PR preview check run of env: "stagehand/<env> preview".
func PreviewName(env string) string { return CheckName(env) + " preview" }

// EnvOfCheck returns the environment of an approval check run name (not of a
// preview).
func EnvOfCheck(name string) (string, bool) {
	env, ok := strings.CutPrefix(name, checkPrefix)
	if !ok || env == "" || strings.ContainsAny(env, " /") {
		return "", false
	}
	return env, true
}
