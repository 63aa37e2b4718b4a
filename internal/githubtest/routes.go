package githubtest

import "maps"

// routes lists every operation the server implements, keyed "METHOD /openapi/path".
func routes(w *world) map[string]handler {
	git, checks, pulls, issues, access := gitAPI{w}, checksAPI{w}, pullsAPI{w}, issuesAPI{w}, accessAPI{w}
	m := map[string]handler{
		"GET /repos/{owner}/{repo}":                                     git.getRepo,
		"GET /repos/{owner}/{repo}/branches/{branch}":                   git.getBranch,
		"GET /repos/{owner}/{repo}/commits/{ref}":                       git.getCommit,
		"GET /repos/{owner}/{repo}/git/ref/{ref}":                       git.getRef,
		"POST /repos/{owner}/{repo}/git/refs":                           git.createRef,
		"PATCH /repos/{owner}/{repo}/git/refs/{ref}":                    git.updateRef,
		"DELETE /repos/{owner}/{repo}/git/refs/{ref}":                   git.deleteRef,
		"GET /repos/{owner}/{repo}/contents/{path}":                     git.getContents,
		"PUT /repos/{owner}/{repo}/contents/{path}":                     git.putContents,
		"DELETE /repos/{owner}/{repo}/contents/{path}":                  git.deleteContents,
		"POST /repos/{owner}/{repo}/check-runs":                         checks.createCheckRun,
		"GET /repos/{owner}/{repo}/check-runs/{check_run_id}":           checks.getCheckRun,
		"PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}":         checks.updateCheckRun,
		"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":            checks.listCheckRuns,
		"POST /repos/{owner}/{repo}/statuses/{sha}":                     checks.createStatus,
		"GET /repos/{owner}/{repo}/commits/{ref}/status":                checks.combinedStatus,
		"GET /repos/{owner}/{repo}/commits/{ref}/statuses":              checks.listStatuses,
		"GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls":          pulls.listCommitPulls,
		"GET /repos/{owner}/{repo}/pulls":                               pulls.listPulls,
		"POST /repos/{owner}/{repo}/pulls":                              pulls.createPull,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}":                 pulls.getPull,
		"PATCH /repos/{owner}/{repo}/pulls/{pull_number}":               pulls.updatePull,
		"PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge":           pulls.mergePull,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}/merge":           pulls.isMerged,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}/files":           pulls.pullFiles,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/comments":      issues.listComments,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments":     issues.createComment,
		"GET /repos/{owner}/{repo}/issues/comments/{comment_id}":        issues.getComment,
		"PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}":      issues.updateComment,
		"DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}":     issues.deleteComment,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/labels":        issues.listLabels,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/labels":       issues.addLabels,
		"PUT /repos/{owner}/{repo}/issues/{issue_number}/labels":        issues.setLabels,
		"DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels":     issues.clearLabels,
		"GET /repos/{owner}/{repo}/collaborators/{username}/permission": access.getPermission,
		"GET /orgs/{org}/teams/{team_slug}/memberships/{username}":      access.getMembership,
		"PUT /orgs/{org}/teams/{team_slug}/memberships/{username}":      access.putMembership,
		"DELETE /orgs/{org}/teams/{team_slug}/memberships/{username}":   access.deleteMembership,
		"GET /repos/{owner}/{repo}/installation":                        access.getInstallation,
		"GET /repos/{owner}/{repo}/compare/{basehead}":                  git.compare,
		"GET /user": access.getAuthenticatedUser,
	}
	maps.Copy(m, deploymentsAPI{w}.routes())
	return m
}
