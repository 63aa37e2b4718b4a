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
	"net/http"
	"time"
)

// Cookie names: the login, and the state of a sign-in under way.
const (
	sessionCookie = "stagehand_session"
	stateCookie   = "stagehand_oauth"
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

// secure reports whether cookies for r must be Secure: the request came
// over TLS, or through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// setCookie writes a sealed cookie: HttpOnly, SameSite=Lax, Secure behind TLS.
func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name string, v any, ttl time.Duration) error {
	val, err := s.seal.seal(name, v)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: name, Value: val, Path: "/", MaxAge: int(ttl / time.Second),
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
	return nil
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteLaxMode})
}

// signIn starts a session for login.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request, login string) error {
	return s.setCookie(w, r, sessionCookie, session{Login: login, CSRF: randomToken(), Expires: s.o.now().Add(sessionTTL).Unix()}, sessionTTL)
}

// session returns r's session, or nil when nobody is signed in.
func (s *Server) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	var se session
	if s.seal.open(sessionCookie, c.Value, &se) != nil || se.Login == "" || s.o.now().Unix() >= se.Expires {
		return nil
	}
	return &se
}

// csrfOK reports whether the form of r carries its session's CSRF token.
func csrfOK(r *http.Request, se *session) bool {
	got := r.PostFormValue("csrf")
	return se != nil && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(se.CSRF)) == 1
}
