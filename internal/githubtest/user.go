package githubtest

import "net/http"

// getAuthenticatedUser is GET /user: the user a user token belongs to. An
// installation token (or the static token, which stands for an App's
// machinery) gets 403, as GitHub answers integrations.
func (s accessAPI) getAuthenticatedUser(c *call) response {
	login, known := s.logins.Login(c.token)
	if !known {
		return errorf(http.StatusForbidden, "Resource not accessible by integration")
	}
	u := s.user(login)
	u["name"] = login
	u["public_repos"], u["public_gists"], u["followers"], u["following"] = 0, 0, 0, 0
	u["created_at"], u["updated_at"] = "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z"
	u["email"], u["bio"], u["blog"], u["company"], u["location"], u["hireable"] = nil, nil, "", nil, nil, nil
	u["events_url"] = s.apiURL("/users/%s/events{/privacy}", login)
	u["followers_url"] = s.apiURL("/users/%s/followers", login)
	u["following_url"] = s.apiURL("/users/%s/following{/other_user}", login)
	u["gists_url"] = s.apiURL("/users/%s/gists{/gist_id}", login)
	u["organizations_url"] = s.apiURL("/users/%s/orgs", login)
	u["received_events_url"] = s.apiURL("/users/%s/received_events", login)
	u["repos_url"] = s.apiURL("/users/%s/repos", login)
	u["starred_url"] = s.apiURL("/users/%s/starred{/owner}{/repo}", login)
	u["subscriptions_url"] = s.apiURL("/users/%s/subscriptions", login)
	u["gravatar_id"] = ""
	return ok(http.StatusOK, u)
}
