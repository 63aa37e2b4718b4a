package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-github/v60/github"
)

// OnPush returns a handler for "push" events that calls trigger when the push
// moved branch of repository, and ignores every other push (other
// repositories, other branches, tags, branch deletions).
//
// repository is either "owner/name" (matched against the payload's
// full_name) or a clone URL in any form — https://host/owner/name(.git),
// ssh://git@host[:port]/owner/name.git or git@host:owner/name.git — matched by
// host and path against the payload's clone, SSH, git and HTML URLs.
//
//	recv.Handle("push", webhook.OnPush(cfg.Source.URL, cfg.Source.Branch, src.Trigger))
func OnPush(repository, branch string, trigger func()) (Handler, error) {
	if branch == "" {
		return nil, errors.New("push handler: branch is required")
	}
	want, byName, err := repoKey(repository)
	if err != nil {
		return nil, fmt.Errorf("push handler: %w", err)
	}
	ref := "refs/heads/" + branch
	return func(_ context.Context, e Event) error {
		var p github.PushEvent
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return fmt.Errorf("parsing push event %s: %w", e.Delivery, err)
		}
		if p.GetRef() != ref || p.GetDeleted() || !matches(p.GetRepo(), want, byName) {
			return nil
		}
		trigger()
		return nil
	}, nil
}

func matches(r *github.PushEventRepository, want string, byName bool) bool {
	if r == nil {
		return false
	}
	if byName {
		return strings.EqualFold(r.GetFullName(), want)
	}
	for _, u := range []string{r.GetCloneURL(), r.GetSSHURL(), r.GetGitURL(), r.GetHTMLURL(), r.GetURL()} {
		if u == "" {
			continue
		}
		if k, _, err := repoKey(u); err == nil && k == want {
			return true
		}
	}
	return false
}

var (
	ownerName = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
	scpURL    = regexp.MustCompile(`^(?:[^@/]+@)?([^:/]+):(.+)$`)
)

// repoKey normalises a repository reference to "host/path" in lower case
// (no scheme, user, port or .git), or returns owner/name with byName set.
func repoKey(s string) (key string, byName bool, err error) {
	s = strings.TrimSpace(s)
	if ownerName.MatchString(s) {
		return s, true, nil
	}
	var host, p string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return "", false, fmt.Errorf("repository %q: want owner/name or a clone URL", redact(s))
		}
		host, p = u.Hostname(), u.Path
	} else if m := scpURL.FindStringSubmatch(s); m != nil {
		host, p = m[1], m[2]
	} else {
		return "", false, fmt.Errorf("repository %q: want owner/name or a clone URL", s)
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	// GitHub's API URLs (https://api.github.com/repos/owner/name) name the same repository.
	if h, ok := strings.CutPrefix(host, "api."); ok {
		if rest, ok := strings.CutPrefix(p, "repos/"); ok {
			host, p = h, rest
		}
	}
	p = strings.TrimPrefix(p, "api/v3/repos/")
	return strings.ToLower(host + "/" + p), false, nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "<unparsable URL>"
}
