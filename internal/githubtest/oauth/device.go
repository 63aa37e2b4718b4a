package oauth

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// deviceFlow is the OAuth device flow of one OAuth app (github.com's
// /login/device/code and /login/oauth/access_token), emulated strictly: the
// requests are form-encoded POSTs asking for JSON, the client id is the
// app's, and a poll sooner than the interval is answered slow_down with a
// longer interval, as GitHub does.
type deviceFlow struct {
	clientID string
	interval time.Duration // advertised to new codes
	step     time.Duration // added to a code's interval on slow_down (GitHub: 5s)
	forced   int           // polls still to be answered slow_down whatever their timing
	codes    map[string]*deviceCode
	polls    int
	early    int
}

type deviceCode struct {
	user     string // the code the person types at verification_uri
	login    string // who authorized it; "" while pending
	denied   bool
	issued   bool
	expires  time.Time
	interval time.Duration
	lastPoll time.Time
}

// EnableDeviceFlow registers an OAuth app with clientID whose device flow
// advertises interval between polls and lengthens it by step on each
// slow_down (GitHub: 5 s and 5 s).
func (p *Provider) EnableDeviceFlow(clientID string, interval, step time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.device.clientID, p.device.interval, p.device.step = clientID, interval, step
}

// ForceSlowDown answers the next n polls slow_down, however late they come.
func (p *Provider) ForceSlowDown(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.device.forced = n
}

// PendingUserCodes returns the user codes issued and not yet authorized or denied.
func (p *Provider) PendingUserCodes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, c := range p.device.codes {
		if c.login == "" && !c.denied {
			out = append(out, c.user)
		}
	}
	slices.Sort(out)
	return out
}

// AuthorizeDevice is login entering userCode at the verification page and
// approving the app: the next poll gets a user token of login.
func (p *Provider) AuthorizeDevice(userCode, login string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.device.codes {
		if c.user == userCode && c.login == "" && !c.denied {
			c.login = login
			return nil
		}
	}
	return fmt.Errorf("githubtest: no pending device code %q", userCode)
}

// DevicePolls returns how many access-token polls came, and how many of them
// came sooner than the interval the client had been given.
func (p *Provider) DevicePolls() (total, early int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.device.polls, p.device.early
}

// ServeLogin answers /login/device/code, /login/oauth/authorize and /login/oauth/access_token (body is the
// request's, already read) and returns the status.
func (p *Provider) ServeLogin(w http.ResponseWriter, r *http.Request, body []byte) int {
	fail := func(code int, format string, a ...any) int {
		p.mu.Lock()
		p.violation("%s %s: %s", r.Method, r.URL.Path, fmt.Sprintf(format, a...))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "githubtest: " + fmt.Sprintf(format, a...)})
		return code
	}
	if r.URL.Path == "/login/oauth/authorize" {
		return p.authorize(w, r) // the web flow (webflow.go)
	}
	if r.Method != http.MethodPost {
		return fail(http.StatusMethodNotAllowed, "want POST")
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return fail(http.StatusUnsupportedMediaType, "Content-Type %q: want application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
	}
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		return fail(http.StatusNotAcceptable, "Accept %q: without application/json GitHub answers form-encoded", r.Header.Get("Accept"))
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return fail(http.StatusBadRequest, "form body: %v", err)
	}
	if r.URL.Path == "/login/oauth/access_token" && form.Has("code") {
		return p.exchangeCode(w, r, form) // the web flow (webflow.go)
	}
	return p.serveDevice(w, r, form)
}

// serveDevice answers the device flow's /login/device/code and /login/oauth/access_token.
func (p *Provider) serveDevice(w http.ResponseWriter, r *http.Request, form url.Values) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	fail := func(code int, format string, a ...any) int {
		p.violation("%s %s: %s", r.Method, r.URL.Path, fmt.Sprintf(format, a...))
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": "githubtest: " + fmt.Sprintf(format, a...)})
		return code
	}
	answer := func(v map[string]any) int { return answer(w, v) }
	d := &p.device
	if d.clientID == "" {
		return fail(http.StatusNotFound, "no OAuth app: call EnableDeviceFlow")
	}
	if form.Get("client_id") != d.clientID {
		return answer(map[string]any{"error": "incorrect_client_credentials", "error_description": "The client_id is not valid."})
	}
	switch r.URL.Path {
	case "/login/device/code":
		for k := range form {
			if k != "client_id" && k != "scope" {
				return fail(http.StatusBadRequest, "unknown parameter %q", k)
			}
		}
		dev, user := randomHex(20), strings.ToUpper(randomHex(2)+"-"+randomHex(2))
		d.codes[dev] = &deviceCode{user: user, expires: time.Now().Add(15 * time.Minute), interval: d.interval}
		return answer(map[string]any{"device_code": dev, "user_code": user, "verification_uri": p.root + "/login/device",
			"expires_in": 900, "interval": int(d.interval / time.Second)})
	case "/login/oauth/access_token":
		for k := range form {
			if k != "client_id" && k != "device_code" && k != "grant_type" {
				return fail(http.StatusBadRequest, "unknown parameter %q", k)
			}
		}
		if g := form.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:device_code" {
			return answer(map[string]any{"error": "unsupported_grant_type", "error_description": "grant_type " + g})
		}
		c := d.codes[form.Get("device_code")]
		if c == nil || c.issued {
			return answer(map[string]any{"error": "incorrect_device_code", "error_description": "The device_code provided is not valid."})
		}
		d.polls++
		now := time.Now()
		early := !c.lastPoll.IsZero() && now.Sub(c.lastPoll) < c.interval
		c.lastPoll = now
		if early {
			d.early++
		}
		if early || d.forced > 0 {
			if !early {
				d.forced--
			}
			c.interval += d.step
			return answer(map[string]any{"error": "slow_down", "error_description": "Too many requests have been made in the same timeframe.",
				"interval": int(c.interval / time.Second)})
		}
		switch {
		case now.After(c.expires):
			return answer(map[string]any{"error": "expired_token", "error_description": "The device_code has expired."})
		case c.denied:
			return answer(map[string]any{"error": "access_denied", "error_description": "The authorization request was denied."})
		case c.login == "":
			return answer(map[string]any{"error": "authorization_pending", "error_description": "The authorization request is still pending."})
		}
		c.issued = true
		tok := "gho_" + randomHex(18)
		p.tokens[tok] = c.login
		return answer(map[string]any{"access_token": tok, "token_type": "bearer", "scope": ""})
	}
	return fail(http.StatusNotFound, "no such login endpoint")
}
