package ui

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/identity"
)

// Cookie names: the login, and the state of a sign-in under way. The
// __Host- prefix makes a browser keep a cookie only when it is Secure, for
// Path=/ and without a Domain, so that neither a page of a sibling host nor
// anyone answering for this host over plain HTTP can set or replace one
// (a planted session or sign-in state). Cookies of other names are not read.
const (
	sessionCookie = "__Host-stagehand_session"
	stateCookie   = "__Host-stagehand_oauth"
)

// sessionTTL is how long a sign-in lasts.
const sessionTTL = 12 * time.Hour

// session is what the login cookie holds, sealed.
type session struct {
	Login string `json:"l"`
	// CSRF is the token every form of this session carries.
	CSRF    string `json:"c"`
	Expires int64  `json:"e"`
}

// sealer seals and opens cookie values with AES-256-GCM: a cookie can be
// neither read nor forged without the key. The cookie's name is the
// additional data, so one cookie cannot stand in for another.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("session key of %d bytes: want at least 32 (server.ui.sessionKeyFile)", len(key))
	}
	k := sha256.Sum256(append([]byte("stagehand ui session v1\x00"), key...))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("making session cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("making session cipher: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(name string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encoding cookie %s: %w", name, err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand never fails
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, []byte(name))), nil
}

var errBadCookie = errors.New("cookie does not open with this key")

func (s *sealer) open(name, value string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(b) < s.aead.NonceSize() {
		return errBadCookie
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(name))
	if err != nil {
		return errBadCookie
	}
	if err := json.Unmarshal(plain, v); err != nil {
		return errBadCookie
	}
	return nil
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// secure reports whether r came over TLS, or through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// keepsCookies reports whether a browser that sent r keeps the page's
// cookies, which are all Secure: it does over HTTPS, and over plain HTTP
// only for a loopback host (localhost, 127.0.0.1, [::1]: the demo login),
// which browsers count as secure.
func keepsCookies(r *http.Request) bool {
	if secure(r) {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// errPlainHTTP is why a sign-in over plain HTTP to another host is refused:
// the browser would drop the cookie and sign nobody in.
var errPlainHTTP = errors.New("signing in needs HTTPS: the page's cookies are Secure (__Host-), so a browser drops them over plain HTTP " +
	"except on localhost; reach this page over https://, or through a proxy that ends TLS and sets X-Forwarded-Proto: https")

// cookies are the page's cookies, each sealed with the session key: the
// session, a sign-in under way and the flash message.
type cookies struct {
	seal *sealer
	now  func() time.Time
}

// set writes a sealed cookie: a __Host- cookie (Secure, Path=/, no
// Domain), HttpOnly and SameSite=Lax.
func (c *cookies) set(w http.ResponseWriter, name string, v any, ttl time.Duration) error {
	val, err := c.seal.seal(name, v)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: val, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	return nil
}

// clearCookie removes a cookie: with the attributes it was set with, or a
// browser ignores the removal of a __Host- cookie.
func clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
}

// errReserved refuses a sign-in as a login Stagehand uses for itself (see identity.Reserved).
var errReserved = errors.New("this GitHub login is refused: " + identity.ReservedRule)

// signIn starts a session for login.
func (c *cookies) signIn(w http.ResponseWriter, r *http.Request, login string) error {
	if identity.Reserved(login) {
		return errReserved
	}
	if !keepsCookies(r) {
		return errPlainHTTP
	}
	return c.set(w, sessionCookie, session{Login: login, CSRF: randomToken(), Expires: c.now().Add(sessionTTL).Unix()}, sessionTTL)
}

// session returns r's session, or nil when nobody is signed in.
func (c *cookies) session(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	var se session
	if c.seal.open(sessionCookie, ck.Value, &se) != nil || se.Login == "" || c.now().Unix() >= se.Expires {
		return nil
	}
	return &se
}

// csrfOK reports whether the form of r carries its session's CSRF token.
func csrfOK(r *http.Request, se *session) bool {
	got := r.PostFormValue("csrf")
	return se != nil && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(se.CSRF)) == 1
}
