package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/sequence"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// Keys of the state ConfigMap's data.
const (
	keyPending    = "pending.json"
	keyInFlight   = "inflight.json"
	keyHistory    = "history.json"
	keyStatus     = "status.json"
	keyHandover   = "handover.json" // one decision: the slot of replicas before the queue (handover.go)
	keyHandovers  = "handovers.json"
	keyUnreported = "unreported.json"
	keyLastID     = "lastid.json"
	keySequence   = "sequence.json"
	keyRollback   = "rollback.json"
	keyFailed     = "failed.json"
	keyPin        = "pin.json"
	keyPhase      = "phase.json"
	keyBreakGlass = "breakglass.json"

	// LabelManagedBy and LabelComponent mark what Stagehand keeps in the
	// cluster (state ConfigMaps and their parts, Leases, wake-ups).
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelComponent   = "app.kubernetes.io/component"
	labelEnvironment = "stagehand.io/environment"
	annoEnvironment  = "stagehand.io/environment"

	// maxStateBytes keeps a state ConfigMap well under the API server's
	// 1 MiB limit (see statesize.go for what happens beyond).
	maxStateBytes = 768 << 10
)

// Handover is an approval or rejection taken by a replica that does not
// lead; the leader picks it up from the Store and acts on it (handover.go).
type Handover struct {
	// ID tells apart two decisions alike in every other field; empty in
	// one written by a replica older than the queue.
	ID       string `json:"id,omitempty"`
	Approve  bool   `json:"approve"`
	PlanHash string `json:"planHash"`
	// Approver is who decided, as kind:name (github:alice); a bare name when written by a replica older
	// than typed identities (read as a legacy identity, see Handover.principal).
	Approver string `json:"approver"`
	// ActsFor is the person Approver acts for (kind:name), when it declared one.
	ActsFor string    `json:"actsFor,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// EnvState is everything the Store keeps for one environment.
type EnvState struct {
	// Phase is where the environment is in its lifecycle, moved by the
	// daemon in the same write as the records it changes. A state written
	// before phases were kept (or by an older replica) reads with the phase
	// its records say (DerivePhase).
	Phase    status.Phase       `json:"phase,omitempty"`
	Pending  *approval.Pending  `json:"pending"`
	InFlight *approval.InFlight `json:"inFlight"`
	// Handovers are the decisions waiting for the leader, oldest first (at
	// most maxHandovers; see handover.go).
	Handovers []Handover `json:"handovers,omitempty"`
	// Unreported are outcomes the gate refused, to report again (unreported.go).
	Unreported []Unreported `json:"unreported,omitempty"`
	// Sequence is the environment's newest run of its delivery sequence.
	Sequence *sequence.State `json:"sequence,omitempty"`
	// Pin is an incident rollback's versions, kept until git says them
	// (see pin.go).
	Pin *approval.Pin `json:"pin,omitempty"`
	// History is newest first.
	History []approval.Entry `json:"history"`
	// Status is the last observed state of the environment (revision,
	// desired and live images, layout, last error) that every replica serves.
	Status json.RawMessage `json:"status,omitempty"`
	// HistoryDropped counts the history entries dropped so that the state
	// fits its ConfigMap (see statesize.go).
	HistoryDropped int `json:"historyDropped,omitempty"`
	// LastID is the ID of the newest history entry ever recorded: IDs go on
	// from it even when the history was trimmed.
	LastID int64 `json:"lastId,omitempty"`
	// Rollback is an apply being rolled back (see Rollback).
	Rollback *Rollback `json:"rollback,omitempty"`
	// Failed is the last revision rolled back: not applied again.
	Failed *approval.RolledBack `json:"failed,omitempty"`
	// BreakGlass are the break-glasses of the environment's plans, newest first (at most
	// MaxBreakGlass): each lets its one plan through closed deploy windows, and says so in the history
	// of its apply. A key of its own (breakglass.json), so that a build that does not know it carries it
	// over untouched.
	BreakGlass []approval.BreakGlass `json:"breakGlass,omitempty"`
}

// MaxBreakGlass bounds the break-glasses an environment's state keeps.
const MaxBreakGlass = 20

// AddBreakGlass keeps b, newest first, within MaxBreakGlass; a break-glass for the same plan already
// kept is left as it is (a request repeated, or replayed, adds nothing), and reported false.
func (st *EnvState) AddBreakGlass(b approval.BreakGlass) bool {
	if st.BreakGlassFor(b.PlanHash, b.Revision) != nil {
		return false
	}
	st.BreakGlass = append([]approval.BreakGlass{b}, st.BreakGlass...)
	if len(st.BreakGlass) > MaxBreakGlass {
		st.BreakGlass = st.BreakGlass[:MaxBreakGlass]
	}
	return true
}

// BreakGlassFor is the break-glass kept for the plan planHash of revision (nil: none).
func (st *EnvState) BreakGlassFor(planHash, revision string) *approval.BreakGlass {
	for i := range st.BreakGlass {
		if st.BreakGlass[i].For(planHash, revision) {
			return &st.BreakGlass[i]
		}
	}
	return nil
}

// Record adds e to the front of the history, numbered after the last entry
// ever recorded, keeping at most limit entries; it returns e's ID. An apply
// recorded while an incident rollback's pin stands is marked with the pin's
// revision (PinnedTo): it ran the versions of that revision, not its own,
// and four-eyes measures from there.
func (st *EnvState) Record(e approval.Entry, limit int) int64 {
	applied := e.Result == approval.ResultSucceeded || e.Result == approval.ResultInterrupted
	if st.Pin != nil && e.PinnedTo == "" && applied {
		e.PinnedTo = st.Pin.Revision
	}
	if len(st.History) > 0 && st.History[0].ID > st.LastID {
		st.LastID = st.History[0].ID
	}
	st.LastID++
	e.ID = st.LastID
	st.History = append([]approval.Entry{e}, st.History...)
	if len(st.History) > limit {
		st.History = st.History[:limit]
	}
	return e.ID
}

// Store keeps each environment's pending approval, in-flight apply, history
// and status in a ConfigMap named stagehand-state-<env> in one namespace,
// so that they survive restarts and every replica can read them.
type Store struct {
	client     kubernetes.Interface
	namespace  string
	maxHistory int
	maxBytes   int // of a ConfigMap's data and binaryData
	parts      *partSource
	// partStore writes and deletes the parts (statesize.go).
	partStore *partStore
	// fence, when set, is the term every write is made under (fence.go).
	fence *fence
	// orphanAge is how old, by the API server's clock, a part no index
	// names must be before a write deletes it.
	orphanAge time.Duration
	// schema is the schema the Store writes and the newest it reads
	// (schema.go): always current but in tests of two builds side by side.
	schema schema
	// seen holds the state ConfigMaps as this Store last read or wrote
	// them (shared with its Fenced copies): an Update starts from them
	// instead of reading again (see Update).
	seen *seen
	// writes counts the writes by environment and result (writes.go),
	// shared with its Fenced copies.
	writes writeCounter
}

// DefaultHistoryLimit is how many history entries each environment keeps.
const DefaultHistoryLimit = 100

// Option changes a Store from its defaults.
type Option func(*Store)

// WithHistoryLimit keeps at most n history entries per environment
// (DefaultHistoryLimit by default).
func WithHistoryLimit(n int) Option { return func(s *Store) { s.maxHistory = n } }

// WithMaxBytes keeps each state ConfigMap (and each of its parts) within n
// bytes of data and binaryData, well under the API server's 1 MiB by default.
func WithMaxBytes(n int) Option { return func(s *Store) { s.maxBytes = n } }

// WithOrphanAge is how old, by the API server's clock, a part no index names
// must be before a write deletes it (ten minutes by default).
func WithOrphanAge(d time.Duration) Option { return func(s *Store) { s.orphanAge = d } }

// NewStore returns a Store writing ConfigMaps into namespace.
func NewStore(client kubernetes.Interface, namespace string, opts ...Option) *Store {
	s := &Store{client: client, namespace: namespace, maxHistory: DefaultHistoryLimit, maxBytes: maxStateBytes, orphanAge: orphanPartAge,
		schema: current}
	for _, o := range opts {
		o(s)
	}
	s.partStore = &partStore{client: client, namespace: namespace, orphanAge: s.orphanAge}
	s.parts = &partSource{get: s.partStore.get}
	s.seen = &seen{cms: map[string]*corev1.ConfigMap{}}
	s.writes = newWrites()
	return s
}

// seen is the state ConfigMaps as a Store last read or wrote them, by name.
type seen struct {
	mu  sync.Mutex
	cms map[string]*corev1.ConfigMap
}

// get returns a copy of name as last seen, or nil.
func (c *seen) get(name string) *corev1.ConfigMap {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm := c.cms[name]; cm != nil {
		return cm.DeepCopy()
	}
	return nil
}

// put records cm as seen (nil forgets name), unless an older version of it:
// reads and writes of several goroutines may return out of order.
func (c *seen) put(name string, cm *corev1.ConfigMap) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cm == nil {
		delete(c.cms, name)
		return
	}
	if old := c.cms[name]; old != nil && older(cm.ResourceVersion, old.ResourceVersion) {
		return
	}
	c.cms[name] = cm.DeepCopy()
}

// older reports whether resourceVersion a is older than b, both as the API
// server writes them (decimal numbers, which clients may compare since
// Kubernetes 1.30's ResourceVersion semantics); unparseable: false.
func older(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// Namespace is where the Store keeps its ConfigMaps.
func (s *Store) Namespace() string { return s.namespace }

// Client is the client the Store reads and writes with; what else the
// daemon keeps beside the state (Leases, the wake-up ConfigMap) shares it.
func (s *Store) Client() kubernetes.Interface { return s.client }

// HistoryLimit is how many history entries each environment keeps.
func (s *Store) HistoryLimit() int { return s.maxHistory }

// Check asks the API server for one ConfigMap of the Store's namespace: an
// error says the state cannot be read.
func (s *Store) Check(ctx context.Context) error {
	if _, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing configmaps in namespace %s: %w", s.namespace, err)
	}
	return nil
}

var invalidNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// ConfigMapName returns the name of env's state ConfigMap.
func ConfigMapName(env string) string {
	clean := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(env), "-"), "-")
	if clean == env && len(env) <= 40 {
		return "stagehand-state-" + env
	}
	sum := sha256.Sum256([]byte(env))
	if len(clean) > 30 {
		clean = clean[:30]
	}
	return "stagehand-state-" + clean + "-" + hex.EncodeToString(sum[:4])
}

// Load returns env's state; an environment never written has an empty state.
func (s *Store) Load(ctx context.Context, env string) (*EnvState, error) {
	for attempt := 1; ; attempt++ {
		cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName(env), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.seen.put(ConfigMapName(env), nil)
			return &EnvState{Phase: status.PhaseIdle}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading state of environment %q: %w", env, err)
		}
		s.seen.put(cm.Name, cm)
		if _, err := readSchema(cm, s.schema); err != nil {
			return nil, fmt.Errorf("reading state of environment %q: %w", env, err)
		}
		st, err := decodeState(ctx, cm, s.parts)
		if errors.Is(err, errPartGone) && attempt < readAttempts {
			continue // a writer moved the index on: read it again
		}
		return st, err
	}
}

// HasHandover reports whether a decision handed over by another replica
// waits in env's state: one read of the ConfigMap, without decoding (or
// inflating, or assembling) anything, for the leader's per-second look.
func (s *Store) HasHandover(ctx context.Context, env string) (bool, error) {
	g, err := s.Glance(ctx, env)
	return g.Handover, err
}

// Glance is what the leader looks at every second without decoding the state: whether a decision
// waits (Handover), and the break-glasses' record as it is encoded (BreakGlass: "" when none), which
// changes when a replica keeps a new one.
type Glance struct {
	Handover   bool
	BreakGlass string
}

// Glance reads env's state ConfigMap for its Glance (nothing when it does not exist).
func (s *Store) Glance(ctx context.Context, env string) (Glance, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, ConfigMapName(env), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Glance{}, nil
	}
	if err != nil {
		return Glance{}, fmt.Errorf("reading state of environment %q: %w", env, err)
	}
	var g Glance
	for _, key := range []string{keyHandovers, keyHandover} {
		_, plain := cm.Data[key]
		_, zipped := cm.BinaryData[key+suffixGzip]
		_, split := cm.Data[key+suffixParts]
		if plain || zipped || split {
			g.Handover = true
		}
	}
	g.BreakGlass = cm.Data[keyBreakGlass] + string(cm.BinaryData[keyBreakGlass+suffixGzip]) + cm.Data[keyBreakGlass+suffixParts]
	return g, nil
}

// SetPending records p as env's pending approval; nil clears it.
func (s *Store) SetPending(ctx context.Context, env string, p *approval.Pending) error {
	return s.Update(ctx, env, func(st *EnvState) { st.Pending = p })
}

// SetInFlight records f as env's in-flight apply; nil clears it.
func (s *Store) SetInFlight(ctx context.Context, env string, f *approval.InFlight) error {
	return s.Update(ctx, env, func(st *EnvState) { st.InFlight = f })
}

// SetStatus records env's last observed status (any JSON value).
func (s *Store) SetStatus(ctx context.Context, env string, status json.RawMessage) error {
	return s.Update(ctx, env, func(st *EnvState) { st.Status = status })
}

// Record adds e to the front of env's history, numbered (its ID) after the
// last entry recorded, and clears the in-flight apply and the pending plan it
// settles (same plan hash) in one write. It returns e's ID.
func (s *Store) Record(ctx context.Context, env string, e approval.Entry) (int64, error) {
	var id int64
	err := s.Update(ctx, env, func(st *EnvState) {
		id = st.Record(e, s.maxHistory)
		if st.InFlight != nil && st.InFlight.PlanHash == e.PlanHash {
			st.InFlight = nil
		}
		if st.Pending != nil && st.Pending.PlanHash == e.PlanHash {
			st.Pending = nil
		}
	})
	return id, err
}

// History returns env's history, newest first, each entry with the break-glass that let it through
// closed deploy windows (Shown).
func (s *Store) History(ctx context.Context, env string) ([]approval.Entry, error) {
	st, err := s.Load(ctx, env)
	if err != nil {
		return nil, err
	}
	return st.Shown(), nil
}

// Shown is the history as it is shown, newest first: a copy whose entries of plans a break-glass let
// through closed deploy windows carry it (Entry.BreakGlass), joined from st.BreakGlass by planHash and
// revision.
func (st *EnvState) Shown() []approval.Entry {
	if len(st.BreakGlass) == 0 || st.History == nil {
		return st.History
	}
	out := slices.Clone(st.History)
	for i := range out {
		if b := st.BreakGlassFor(out[i].PlanHash, out[i].Revision); b != nil && !b.Applied.IsZero() && out[i].Result != approval.ResultRejected {
			cp := *b
			out[i].BreakGlass = &cp
		}
	}
	return out
}

// Update reads env's state, lets mutate change it and writes it back,
// retrying on write conflicts. The ConfigMap is created when missing.
//
// It first tries from the ConfigMap as this Store last read or wrote it,
// without reading it again: the write carries that version's
// resourceVersion, so the API server refuses it when anyone wrote since, and
// Update then reads it and goes on as without. A pass's writes in front of
// its first patch cost one round trip each, not two.
func (s *Store) Update(ctx context.Context, env string, mutate func(*EnvState)) (err error) {
	defer func() { s.writes.count(env, err) }()
	name := ConfigMapName(env)
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	if cm := s.seen.get(name); cm != nil && (s.fence == nil || cm.Annotations[annoFence] == s.fence.token) {
		// Whatever refuses this write (a conflict, the ConfigMap deleted
		// since, a schema or a part as they were), only the state as it is
		// now decides: it is read below. (And only that state may refuse a
		// term, which tells the replica it lost the state: the state may
		// have been claimed for this term since it was seen.)
		if err := s.write(ctx, cm, false, mutate); err == nil {
			return nil
		}
	}
	err = retryOnConflict(func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			cm = newStateConfigMap(name, s.namespace, env)
		}
		return s.write(ctx, cm, create, mutate)
	})
	if err != nil {
		return fmt.Errorf("writing state of environment %q to configmap %s/%s: %w", env, s.namespace, name, err)
	}
	return nil
}

// write is one attempt of Update over cm, the state ConfigMap as read (or
// about to be created); it records what it wrote as seen, and forgets the
// ConfigMap when it fails.
func (s *Store) write(ctx context.Context, cm *corev1.ConfigMap, create bool, mutate func(*EnvState)) (err error) {
	name := cm.Name
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	defer func() {
		if err != nil {
			s.seen.put(name, nil)
		}
	}()
	// A state of a schema this build must not read is neither read nor
	// written (schema.go).
	found, err := readSchema(cm, s.schema)
	if err != nil {
		return err
	}
	if err := s.fence.check(cm, create); err != nil {
		return err
	}
	st, err := decodeState(ctx, cm, s.parts)
	if errors.Is(err, errPartGone) {
		return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
	}
	if err != nil {
		return err
	}
	phase, sum := st.Phase, recordsSum(st)
	mutate(st)
	st.Phase = movedPhase(st, phase, sum)
	// Keys a newer build wrote that this one does not know are kept as
	// they are, within the same budget.
	foreign, carried := unknownKeys(cm)
	e, err := encodeState(name, st, s.maxBytes-carried-schemaBytes)
	if err != nil {
		return err
	}
	if err := stamp(e, found, s.schema, foreign); err != nil {
		return err
	}
	// Parts first, the index last: a reader never sees an index
	// naming parts not yet written.
	oldParts := partNames(cm)
	if err := s.partStore.write(ctx, e, oldParts); err != nil {
		return err
	}
	cm.Data, cm.BinaryData = e.data, e.binary
	if len(cm.BinaryData) == 0 {
		cm.BinaryData = nil
	}
	var written *corev1.ConfigMap
	if create {
		written, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "stagehand"})
		if apierrors.IsAlreadyExists(err) {
			return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
		}
	} else {
		written, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "stagehand"})
	}
	if err != nil {
		return err
	}
	s.seen.put(name, written)
	if newParts := partNames(cm); len(oldParts) > 0 || len(newParts) > 0 {
		// Written: parts left behind by a failed cleanup are deleted
		// by a later write (they are orphans then), so it is not an error.
		_ = s.partStore.drop(ctx, name, partMove{old: oldParts, now: newParts}, serverTime(written))
	}
	return nil
}

// newStateConfigMap is env's state ConfigMap before anything is written in it.
func newStateConfigMap(name, namespace, env string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:      name,
		Namespace: namespace,
		Labels: map[string]string{
			LabelManagedBy:   "stagehand",
			LabelComponent:   "state",
			labelEnvironment: labelValue(env),
		},
		Annotations: map[string]string{annoEnvironment: env},
	}}
}

// retryOnConflict runs write until it succeeds, fails other than by a
// conflict, or writeBackoff runs out. Unlike client-go's RetryOnConflict,
// whose wait treats any context error as "interrupted" and then returns the
// last conflict (nil when there was none), a write that failed because its
// context ended is an error here, never a success.
func retryOnConflict(write func() error) error {
	var last error
	err := retry.RetryOnConflict(writeBackoff, func() error {
		last = write()
		return last
	})
	if err == nil {
		err = last
	}
	return err
}

func labelValue(env string) string {
	v := strings.Trim(invalidNameChars.ReplaceAllString(strings.ToLower(env), "-"), "-")
	if len(v) > 63 {
		v = v[:63]
	}
	return v
}
