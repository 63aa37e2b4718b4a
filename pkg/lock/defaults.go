package lock

import (
	"strings"
)

// LookupEnv reads an environment variable; os.LookupEnv in the binaries, a map in tests.
type LookupEnv func(key string) (string, bool)

func (f LookupEnv) get(key string) string {
	if f == nil {
		return ""
	}
	v, _ := f(key)
	return strings.TrimSpace(v)
}

func (f LookupEnv) set(key string) bool {
	if f == nil {
		return false
	}
	v, ok := f(key)
	return ok && v != ""
}

func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// Default fills the fields of l that are still empty, as the seed says:
// from GitLab CI variables (when $GITLAB_CI is set for the author), from GitHub
// Actions variables (when $GITHUB_ACTIONS is set), from $USER, $CLUSTER_NAME,
// $DEPLOY_ENV and $DEPLOY_TARGET, and finally from the segments of l.Path
// (cluster/account/target/project/ref). The CI fields are filled only when
// $CI, $GITLAB_CI or $GITHUB_ACTIONS is set or l.CI is already non-nil.
// lookup may be nil: then only the path is used.
func (l *Lock) Default(lookup LookupEnv) {
	seg := strings.Split(l.Path, "/")
	at := func(i int) string {
		if i < len(seg) {
			return seg[i]
		}
		return ""
	}
	gitlab := lookup.set("GITLAB_CI")
	github := lookup.set("GITHUB_ACTIONS")
	gh := func(key string) string {
		if github {
			return lookup.get(key)
		}
		return ""
	}
	if l.Author == "" {
		switch {
		case gitlab && lookup.get("GITLAB_USER_EMAIL") != "":
			l.Author = lookup.get("GITLAB_USER_EMAIL")
		case github && lookup.get("GITHUB_ACTOR") != "":
			l.Author = lookup.get("GITHUB_ACTOR")
		default:
			l.Author = lookup.get("USER")
		}
	}
	l.Env.Cluster = first(l.Env.Cluster, lookup.get("CLUSTER_NAME"), at(0))
	l.Env.Account = first(l.Env.Account, lookup.get("DEPLOY_ENV"), at(1))
	l.Env.Target = first(l.Env.Target, lookup.get("DEPLOY_TARGET"), at(2))
	if l.CI == nil && (lookup.set("CI") || gitlab || github) {
		l.CI = &CI{}
	}
	if l.CI != nil {
		c := l.CI
		c.Project = first(c.Project, lookup.get("CI_PROJECT_PATH"), gh("GITHUB_REPOSITORY"), at(3))
		c.Ref = first(c.Ref, lookup.get("CI_COMMIT_REF_SLUG"), gh("GITHUB_REF_NAME"), at(4))
		c.Commit = first(c.Commit, lookup.get("CI_COMMIT_SHA"), gh("GITHUB_SHA"))
		c.Pipeline = first(c.Pipeline, lookup.get("CI_PIPELINE_ID"), gh("GITHUB_RUN_ID"))
		c.Job = first(c.Job, lookup.get("CI_JOB_ID"), gh("GITHUB_JOB"))
	}
}
