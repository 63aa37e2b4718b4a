package webhook

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"golang.org/x/sync/semaphore"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/httpserve"
)

// DefaultMaxBodyBytes caps a webhook body (5 MiB): GitHub's payloads for the
// events Stagehand handles are a few KB to a few hundred KB, and the cap is
// what an unauthenticated caller can make a replica buffer per request.
const DefaultMaxBodyBytes = 5 << 20

// DefaultMaxConcurrent is how many deliveries are read and handled at once;
// with DefaultMaxBodyBytes it bounds the memory unauthenticated callers can
// hold to 40 MiB.
const DefaultMaxConcurrent = 8

// DefaultQueueWait is how long a delivery waits for a free slot before it
// is refused with 503 and Retry-After.
const DefaultQueueWait = 2 * time.Second

// DefaultReadTimeout bounds the reading of one body (GitHub itself gives up
// on a delivery after 10 seconds), so that a slow sender cannot hold a slot.
const DefaultReadTimeout = 10 * time.Second

// DefaultDedupeSize is how many delivery IDs are remembered by default.
const DefaultDedupeSize = 10000

// Event is one verified webhook delivery.
type Event struct {
	Type     string // X-GitHub-Event, e.g. "push", "check_run", "pull_request"
	Delivery string // X-GitHub-Delivery
	Payload  []byte // the raw JSON body, signature verified and of the shape Type requires
}

// Handler processes one event. It runs while GitHub waits for the response
// (GitHub gives up after 10 seconds): queue long work. Returning an error
// answers 500, and the delivery ID is forgotten so a redelivery is processed.
type Handler func(ctx context.Context, e Event) error

// Option configures a Receiver.
type Option func(*options) error

type options struct {
	maxBody       int64
	maxConcurrent int
	queueWait     time.Duration
	readTimeout   time.Duration
	dedupeSize    int
	onError       func(Event, error)
}

// WithMaxBodyBytes caps the request body (default DefaultMaxBodyBytes);
// larger bodies get 413 and are not processed: a Content-Length over the
// cap is refused before anything is read, and no more than the cap is ever
// read.
func WithMaxBodyBytes(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("max body bytes %d: must be positive", n)
		}
		o.maxBody = n
		return nil
	}
}

// WithMaxConcurrent sets how many deliveries are handled at once, and how
// many bodies at the cap may be read at once (default DefaultMaxConcurrent);
// one that waits longer than the queue wait for a slot, or for its body's
// memory, gets 503 with Retry-After.
func WithMaxConcurrent(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("max concurrent deliveries %d: must be positive", n)
		}
		o.maxConcurrent = n
		return nil
	}
}

// WithQueueWait sets how long a delivery may wait for a free slot (default
// DefaultQueueWait; 0 refuses at once when all slots are busy).
func WithQueueWait(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("queue wait %v: must not be negative", d)
		}
		o.queueWait = d
		return nil
	}
}

// WithReadTimeout bounds the reading of one body (default
// DefaultReadTimeout), where the server allows setting a read deadline.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("read timeout %v: must be positive", d)
		}
		o.readTimeout = d
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
	slots  chan struct{} // one token per delivery being handled
	// mem bounds the bytes of bodies being read or held: maxConcurrent
	// bodies at the cap, and one more for joining a body's pieces. A body
	// takes its share chunk by chunk as the bytes arrive, so a sender that
	// trickles holds only what it sent, and never a slot that a real
	// delivery needs.
	mem *semaphore.Weighted

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
	o := options{maxBody: DefaultMaxBodyBytes, maxConcurrent: DefaultMaxConcurrent, queueWait: DefaultQueueWait,
		readTimeout: DefaultReadTimeout, dedupeSize: DefaultDedupeSize}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("configuring webhook receiver: %w", err)
		}
	}
	return &Receiver{
		secret:   []byte(secret),
		opts:     o,
		slots:    make(chan struct{}, o.maxConcurrent),
		mem:      semaphore.NewWeighted(int64(o.maxConcurrent+1) * o.maxBody),
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

// ServeHTTP checks, verifies, deduplicates and dispatches one delivery. What
// can be judged from the headers is judged before the body is read, and at
// most the cap is read before the signature is checked:
//
//	405 not a POST · 415 not application/json (form-encoded hooks included) ·
//	400 no X-GitHub-Event or X-GitHub-Delivery · 413 body over the cap ·
//	503 (Retry-After) all slots busy · 401 missing or wrong signature ·
//	400 a payload that is not the shape its event requires ·
//	200 processed, ignored (no handler) or a duplicate · 500 a handler failed
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if ct, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		fail(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json (set the hook's content type to application/json)")
		return
	}
	e := Event{Type: req.Header.Get("X-GitHub-Event"), Delivery: req.Header.Get("X-GitHub-Delivery")}
	if e.Type == "" || e.Delivery == "" {
		fail(w, http.StatusBadRequest, "X-GitHub-Event and X-GitHub-Delivery are required")
		return
	}
	if req.ContentLength > r.opts.maxBody {
		fail(w, http.StatusRequestEntityTooLarge, "payload too large")
		return
	}
	body, held, code := r.read(w, req)
	defer r.mem.Release(held)
	switch code {
	case 0:
	case http.StatusUnauthorized:
		fail(w, code, "missing or invalid X-Hub-Signature-256")
		return
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
		fail(w, code, "too many webhook deliveries at once; retry later")
		return
	default:
		fail(w, code, http.StatusText(code))
		return
	}
	if !r.acquire(req.Context()) {
		w.Header().Set("Retry-After", "1")
		fail(w, http.StatusServiceUnavailable, "too many webhook deliveries at once; retry later")
		return
	}
	defer func() { <-r.slots }()
	if err := checkShape(e.Type, body); err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	e.Payload = body
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
			fail(w, http.StatusInternalServerError, "processing the event failed")
			return
		}
	}
	reply(w, http.StatusOK, "ok")
}

// acquire takes a slot, waiting at most the queue wait.
func (r *Receiver) acquire(ctx context.Context) bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
	}
	if r.opts.queueWait == 0 {
		return false
	}
	t := time.NewTimer(r.opts.queueWait)
	defer t.Stop()
	select {
	case r.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// readChunk is the size of the pieces a body of unknown length is read in:
// reading pieces rather than growing one buffer keeps the memory of a body
// at its size (no doubling and copying), and a body whose signature fails is
// never joined.
const readChunk = 64 << 10

// read reads the body, never more than the cap, within the read timeout,
// and checks its signature. It returns the verified body, the bytes of the
// memory budget it holds (the caller releases them), or the status to
// answer with. Each chunk takes its bytes from the budget before it is
// allocated, waiting at most the queue wait.
func (r *Receiver) read(w http.ResponseWriter, req *http.Request) ([]byte, int64, int) {
	// Not every ResponseWriter supports deadlines (httptest's recorder does not); the server's own timeouts still hold.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(r.opts.readTimeout))
	src := http.MaxBytesReader(w, req.Body, r.opts.maxBody)
	var chunks [][]byte
	var total int
	var held int64
	var err error
	for err == nil {
		// Never ask for more than is left of the body: its known length
		// (within the cap; the server stops the body there), or the cap
		// and one byte to find a body that goes past it.
		left := r.opts.maxBody - int64(total) + 1
		if n := req.ContentLength; n >= 0 {
			left = n - int64(total)
		}
		size := min(int64(readChunk), left)
		if size == 0 {
			break
		}
		if !r.take(req.Context(), size) {
			return nil, held, http.StatusServiceUnavailable
		}
		held += size
		c := make([]byte, size)
		var m int
		m, err = io.ReadFull(src, c)
		if m > 0 {
			chunks, total = append(chunks, c[:m]), total+m
		}
	}
	if req.ContentLength < 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		err = nil
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, held, http.StatusRequestEntityTooLarge
	case err != nil:
		return nil, held, http.StatusBadRequest
	}
	if !r.validSignature(req.Header.Get("X-Hub-Signature-256"), chunks) {
		return nil, held, http.StatusUnauthorized
	}
	if len(chunks) == 1 {
		return chunks[0], held, 0
	}
	// The joined copy takes its own share while the pieces still exist; the
	// pieces' share is given back once they are garbage.
	if !r.take(req.Context(), int64(total)) {
		return nil, held, http.StatusServiceUnavailable
	}
	body := make([]byte, 0, total)
	for _, c := range chunks {
		body = append(body, c...)
	}
	r.mem.Release(held)
	return body, int64(total), 0
}

// take takes n bytes of the memory budget, waiting at most the queue wait.
func (r *Receiver) take(ctx context.Context, n int64) bool {
	if r.mem.TryAcquire(n) {
		return true
	}
	if r.opts.queueWait == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.queueWait)
	defer cancel()
	return r.mem.Acquire(ctx, n) == nil
}

func reply(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// validSignature checks "sha256=<hex HMAC-SHA256 of the body>" in constant
// time; the body comes in pieces.
func (r *Receiver) validSignature(header string, body [][]byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, r.secret)
	for _, c := range body {
		m.Write(c)
	}
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

// fail answers with the error body every Stagehand door answers with
// (httpserve.Error).
func fail(w http.ResponseWriter, status int, msg string) {
	httpserve.WriteError(w, status, httpserve.CodeOf(status), msg)
}
