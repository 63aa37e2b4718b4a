package webhook

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// DefaultMaxBodyBytes is GitHub's own cap on webhook payloads (25 MiB).
const DefaultMaxBodyBytes = 25 << 20

// DefaultDedupeSize is how many delivery IDs are remembered by default.
const DefaultDedupeSize = 10000

// Event is one verified webhook delivery.
type Event struct {
	Type     string // X-GitHub-Event, e.g. "push", "check_run", "pull_request"
	Delivery string // X-GitHub-Delivery
	Payload  []byte // the JSON payload, signature verified (the raw body, or a form body's payload field)
}

// Handler processes one event. It runs while GitHub waits for the response
// (GitHub gives up after 10 seconds): queue long work. Returning an error
// answers 500, and the delivery ID is forgotten so a redelivery is processed.
type Handler func(ctx context.Context, e Event) error

// Option configures a Receiver.
type Option func(*options) error

type options struct {
	maxBody    int64
	dedupeSize int
	onError    func(Event, error)
}

// WithMaxBodyBytes caps the request body (default DefaultMaxBodyBytes);
// larger bodies get 413 and are not processed.
func WithMaxBodyBytes(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("max body bytes %d: must be positive", n)
		}
		o.maxBody = n
		return nil
	}
}

// WithDedupeSize sets how many recent delivery IDs are remembered (LRU;
// default DefaultDedupeSize).
func WithDedupeSize(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("dedupe size %d: must be positive", n)
		}
		o.dedupeSize = n
		return nil
	}
}

// WithErrorHandler is called with every handler error (for the binary to log;
// the library itself never logs).
func WithErrorHandler(f func(Event, error)) Option {
	return func(o *options) error { o.onError = f; return nil }
}

// Receiver is an http.Handler for GitHub webhooks.
type Receiver struct {
	secret []byte
	opts   options

	mu       sync.Mutex
	handlers map[string][]Handler
	seen     *lru
}

// New returns a Receiver that verifies X-Hub-Signature-256 with secret. An
// empty secret is refused: unsigned webhooks are never accepted.
func New(secret string, opts ...Option) (*Receiver, error) {
	if strings.TrimSpace(secret) == "" {
		return nil, errors.New("webhook secret is required (github.webhookSecretFile)")
	}
	o := options{maxBody: DefaultMaxBodyBytes, dedupeSize: DefaultDedupeSize}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring webhook receiver: %w", err)
		}
	}
	return &Receiver{
		secret:   []byte(secret),
		opts:     o,
		handlers: map[string][]Handler{},
		seen:     newLRU(o.dedupeSize),
	}, nil
}

// Handle registers h for events of eventType ("push", "check_run", …).
// Several handlers for one type run in registration order; the first error
// stops the chain.
func (r *Receiver) Handle(eventType string, h Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handlers[eventType] = append(r.handlers[eventType], h)
}

// ServeHTTP verifies, deduplicates and dispatches one delivery.
//
//	405 not a POST · 413 body over the cap · 401 missing or wrong signature ·
//	400 no X-GitHub-Event or X-GitHub-Delivery · 200 processed, ignored
//	(no handler) or a duplicate · 500 a handler failed
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if req.ContentLength > r.opts.maxBody {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.opts.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading body failed", http.StatusBadRequest)
		return
	}
	if !r.validSignature(req.Header.Get("X-Hub-Signature-256"), body) {
		http.Error(w, "missing or invalid X-Hub-Signature-256", http.StatusUnauthorized)
		return
	}
	e := Event{Type: req.Header.Get("X-GitHub-Event"), Delivery: req.Header.Get("X-GitHub-Delivery"), Payload: body}
	if e.Type == "" || e.Delivery == "" {
		http.Error(w, "X-GitHub-Event and X-GitHub-Delivery are required", http.StatusBadRequest)
		return
	}
	if ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		// A hook configured with content type "form" sends payload=<json>; the signature covers the form.
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("payload") == "" {
			http.Error(w, "form body without a payload field", http.StatusBadRequest)
			return
		}
		e.Payload = []byte(form.Get("payload"))
	}
	if !r.seen.add(e.Delivery) {
		reply(w, http.StatusOK, "duplicate delivery; ignored")
		return
	}
	r.mu.Lock()
	handlers := append([]Handler(nil), r.handlers[e.Type]...)
	r.mu.Unlock()
	if len(handlers) == 0 {
		reply(w, http.StatusOK, fmt.Sprintf("event %q ignored", e.Type))
		return
	}
	for _, h := range handlers {
		if err := h(req.Context(), e); err != nil {
			r.seen.remove(e.Delivery) // let a redelivery try again
			if r.opts.onError != nil {
				r.opts.onError(e, err)
			}
			http.Error(w, "processing the event failed", http.StatusInternalServerError)
			return
		}
	}
	reply(w, http.StatusOK, "ok")
}

func reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// validSignature checks "sha256=<hex HMAC-SHA256 of body>" in constant time.
func (r *Receiver) validSignature(header string, body []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, r.secret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}

// lru remembers the most recent delivery IDs.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = newest
	items map[string]*list.Element
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[string]*list.Element{}}
}

// add records id and reports whether it was new.
func (l *lru) add(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[id]; ok {
		l.order.MoveToFront(el)
		return false
	}
	l.items[id] = l.order.PushFront(id)
	if l.order.Len() > l.max {
		oldest := l.order.Back()
		l.order.Remove(oldest)
		delete(l.items, oldest.Value.(string))
	}
	return true
}

func (l *lru) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[id]; ok {
		l.order.Remove(el)
		delete(l.items, id)
	}
}
