package state

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/status"
)

// A state ConfigMap must stay under the API server's 1 MiB limit (keys and
// values of data and binaryData). Each value is kept, from the cheapest to the
// most involved, as:
//
//   - plain JSON in data[key] (the only format before sizes were checked;
//     still read, and still written while everything fits);
//   - gzip in binaryData[key+".gz"] when the whole does not fit plain;
//   - gzip split across part ConfigMaps named after the hash of the whole,
//     with an index in data[key+".parts"], when even compressed it does not
//     fit. Parts are written first and the index last, so a reader never
//     assembles a mix of two versions; the parts of the previous index are
//     deleted once the index has moved.
//
// Between compressing and splitting, what can be trimmed is trimmed, in this
// order: the history (oldest first), the status' layout, the status' per-service
// detail. The pending plan and in-flight record are never trimmed: an approval
// binds to them.
const (
	suffixGzip  = ".gz"
	suffixParts = ".parts"
	keyTrimmed  = "truncated.json"

	labelStateOf     = "stagehand.io/state-of"
	componentPart    = "state-part"
	compressAbove    = 1 << 10  // smaller values stay plain
	zipHistoryAbove  = 64 << 10 // a larger history is compressed even when it fits plain
	maxInflatedBytes = 64 << 20 // refuse to inflate a value beyond this
	// orphanPartAge is how old a part no index names must be before it is
	// deleted (a concurrent writer may be about to index it).
	orphanPartAge = 10 * time.Minute
	// readAttempts bounds how often Load starts again when a part vanished
	// under it (a writer moved the index and deleted the old parts).
	readAttempts = 5
)

// writeBackoff spaces the retries of a state write that lost a race: a
// large state takes a while to encode, so writers back off further and
// out of step (jitter) rather than colliding again.
var writeBackoff = wait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 2, Jitter: 1, Cap: 2 * time.Second}

// errPartGone is a part of an index that could not be read as indexed: the
// index moved on under the reader, which reads again.
var errPartGone = errors.New("state part gone")

// partIndex is data[key+".parts"]: the gzip of the value, split in Parts.
type partIndex struct {
	SHA256 string   `json:"sha256"` // of the gzip bytes, whole
	Size   int      `json:"size"`   // of the gzip bytes, whole
	Parts  []string `json:"parts"`  // ConfigMap names, in order
}

// trimmed is data["truncated.json"]: what size checks dropped from the history.
type trimmed struct {
	HistoryDropped int `json:"historyDropped"`
}

// encoded is a state ready to write: the ConfigMap's data and binaryData and
// the part ConfigMaps its indexes name.
type encoded struct {
	data   map[string]string
	binary map[string][]byte
	parts  []*corev1.ConfigMap
}

func (e *encoded) size() int {
	n := 0
	for k, v := range e.data {
		n += len(k) + len(v)
	}
	for k, v := range e.binary {
		n += len(k) + len(v)
	}
	return n
}

// encodeState lays st out for the ConfigMap named name within budget bytes
// (st.History, st.HistoryDropped and st.Status are updated to what is kept):
//
//  1. everything plain, if it fits;
//  2. the pending plan, in-flight record, status and history compressed;
//  3. a pending plan or in-flight record that takes more than half the
//     budget even compressed split into parts (trimming the rest would not
//     make room for it);
//  4. the oldest history entries dropped, as few as fit;
//  5. the status' layout omitted, then 6. its per-service detail;
//  7. whatever is still large (pending, in-flight, status) split into parts.
//
// After 5, 6 and 7 the history dropped in 4 is kept again as far as it fits.
func encodeState(name string, st *EnvState, budget int) (*encoded, error) {
	l := &stateLayout{name: name, budget: budget, raw: map[string][]byte{}, zipped: map[string][]byte{},
		index: map[string]string{}, history: st.History, dropped: st.HistoryDropped}
	put := func(key string, v any, present bool) error {
		if !present {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", key, err)
		}
		l.raw[key] = b
		return nil
	}
	if err := errors.Join(
		put(keyPending, st.Pending, st.Pending != nil),
		put(keyInFlight, st.InFlight, st.InFlight != nil),
		put(keyHandovers, st.Handovers, len(st.Handovers) > 0),
		put(keyHandover, legacyHandover(st.Handovers), len(st.Handovers) > 0),
		put(keyUnreported, st.Unreported, len(st.Unreported) > 0),
		put(keySequence, st.Sequence, st.Sequence != nil),
		put(keyPin, st.Pin, st.Pin != nil),
		put(keyBreakGlass, st.BreakGlass, len(st.BreakGlass) > 0),
		put(keyStatus, st.Status, len(st.Status) > 0),
		put(keyLastID, st.LastID, st.LastID > 0),
		put(keyRollback, st.Rollback, st.Rollback != nil),
		put(keyFailed, st.Failed, st.Failed != nil),
		put(keyPhase, phaseRecord{Phase: st.Phase, Of: recordsSum(st)}, st.Phase != ""),
	); err != nil {
		return nil, err
	}
	e, err := l.fit()
	if err != nil {
		return nil, err
	}
	st.History, st.HistoryDropped = l.history, l.dropped
	if len(st.Status) > 0 {
		st.Status = l.status
	}
	return e, nil
}

// stateLayout is a state on its way into a ConfigMap.
type stateLayout struct {
	name    string
	budget  int
	raw     map[string][]byte // JSON values but the history
	zipped  map[string][]byte // gzip of some of raw
	index   map[string]string // part index of values split (no longer in raw)
	parts   []*corev1.ConfigMap
	history []approval.Entry
	zipHist bool
	dropped int
	// packed is history.json of the first packedN entries of history (a
	// layout is tried several times; only trimming changes the history).
	packed  []byte
	packedN int
	status  json.RawMessage // as kept
}

func (l *stateLayout) fit() (*encoded, error) {
	l.status = l.raw[keyStatus]
	// A history holding resolved manifests is large and compresses well
	// (tenfold): it is compressed even when it would fit plain, so that
	// every write of the state stays small.
	if h, err := l.packedHistory(); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", keyHistory, err)
	} else if len(h) > zipHistoryAbove {
		l.zipHist = true
	}
	try := l.try
	if e, ok, err := try(); err != nil || ok {
		return e, err
	}
	// Compress (nothing lost).
	for _, key := range []string{keyPending, keyInFlight, keyStatus, keyRollback, keyUnreported} {
		if err := l.zip(key); err != nil {
			return nil, err
		}
	}
	l.zipHist = true
	if e, ok, err := try(); err != nil || ok {
		return e, err
	}
	// Split a pending plan or in-flight record that would crowd out the rest.
	for _, key := range []string{keyPending, keyInFlight} {
		if z, ok := l.zipped[key]; ok && len(z) > l.budget/2 {
			l.split(key)
		}
	}
	if e, ok, err := try(); err != nil || ok {
		return e, err
	}
	// Drop the oldest history entries: keep the most that fit.
	full, before := l.history, l.dropped
	if e, ok, err := l.keepHistory(full, before); err != nil || ok {
		return e, err
	}
	// Omit the status' layout, then its per-service detail; then keep
	// as much of the history as fits again.
	for _, trim := range []func([]byte) ([]byte, error){trimLayout, trimDetail} {
		s, ok := l.raw[keyStatus]
		if !ok {
			break
		}
		t, err := trim(s)
		if err != nil {
			return nil, err
		}
		l.raw[keyStatus], l.status = t, t
		delete(l.zipped, keyStatus)
		if err := l.zip(keyStatus); err != nil {
			return nil, err
		}
		if e, ok, err := l.keepHistory(full, before); err != nil || ok {
			return e, err
		}
	}
	// Split what is still large (outcomes kept for GitHub hold whole plans).
	for _, key := range []string{keyPending, keyInFlight, keyStatus, keyUnreported} {
		if _, ok := l.zipped[key]; !ok {
			continue
		}
		l.split(key)
		if e, ok, err := l.keepHistory(full, before); err != nil || ok {
			return e, err
		}
	}
	e, err := l.encode()
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("state is %d bytes after compressing, trimming and splitting, more than the %d a ConfigMap holds", e.size(), l.budget)
}

// try encodes l and says whether it fits.
func (l *stateLayout) try() (*encoded, bool, error) {
	e, err := l.encode()
	if err != nil {
		return nil, false, err
	}
	return e, e.size() <= l.budget, nil
}

// keepHistory keeps the most of full, newest first, that fits (before is
// what was dropped earlier) and says whether that fits.
func (l *stateLayout) keepHistory(full []approval.Entry, before int) (*encoded, bool, error) {
	kept := 0
	for lo, hi := 1, len(full); lo <= hi; {
		mid := (lo + hi) / 2
		l.history, l.dropped = full[:mid], before+len(full)-mid
		_, ok, err := l.try()
		if err != nil {
			return nil, false, err
		}
		if ok {
			kept, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	l.history, l.dropped = full[:kept], before+len(full)-kept
	return l.try()
}

// packedHistory is history.json of l.history, packed once per length.
func (l *stateLayout) packedHistory() ([]byte, error) {
	if l.packed != nil && l.packedN == len(l.history) {
		return l.packed, nil
	}
	b, err := packHistory(l.history)
	if err != nil {
		return nil, err
	}
	l.packed, l.packedN = b, len(l.history)
	return b, nil
}

func (l *stateLayout) zip(key string) error {
	if len(l.raw[key]) < compressAbove {
		return nil
	}
	z, err := gzipBytes(l.raw[key])
	if err != nil {
		return fmt.Errorf("compressing %s: %w", key, err)
	}
	l.zipped[key] = z
	return nil
}

func (l *stateLayout) split(key string) {
	idx, ps := splitParts(l.name, key, l.zipped[key], l.budget)
	b, _ := json.Marshal(idx) // strings and ints
	l.index[key] = string(b)
	l.parts = append(l.parts, ps...)
	delete(l.zipped, key)
	delete(l.raw, key)
}

func (l *stateLayout) encode() (*encoded, error) {
	e := &encoded{data: map[string]string{}, binary: map[string][]byte{}, parts: l.parts}
	for k, v := range l.raw {
		if z, ok := l.zipped[k]; ok {
			e.binary[k+suffixGzip] = z
		} else {
			e.data[k] = string(v)
		}
	}
	for k, v := range l.index {
		e.data[k+suffixParts] = v
	}
	if len(l.history) > 0 {
		b, err := l.packedHistory()
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", keyHistory, err)
		}
		if l.zipHist && len(b) >= compressAbove {
			z, err := gzipBytes(b)
			if err != nil {
				return nil, fmt.Errorf("compressing %s: %w", keyHistory, err)
			}
			e.binary[keyHistory+suffixGzip] = z
		} else {
			e.data[keyHistory] = string(b)
		}
	}
	if l.dropped > 0 {
		b, _ := json.Marshal(trimmed{HistoryDropped: l.dropped}) // an int
		e.data[keyTrimmed] = string(b)
	}
	return e, nil
}

// splitParts cuts z into part ConfigMaps of at most budget bytes each, named
// after z's hash so that a version never overwrites another's parts.
func splitParts(name, key string, z []byte, budget int) (partIndex, []*corev1.ConfigMap) {
	sum := sha256.Sum256(z)
	idx := partIndex{SHA256: hex.EncodeToString(sum[:]), Size: len(z)}
	field := key[:len(key)-len(".json")]
	chunk := budget - 64
	var parts []*corev1.ConfigMap
	for i := 0; i*chunk < len(z); i++ {
		part := z[i*chunk : min((i+1)*chunk, len(z))]
		pn := fmt.Sprintf("%s-%s-%s-%d", name, field, idx.SHA256[:12], i)
		idx.Parts = append(idx.Parts, pn)
		parts = append(parts, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: pn, Labels: map[string]string{
				LabelManagedBy: "stagehand",
				LabelComponent: componentPart,
				labelStateOf:   name,
			}},
			BinaryData: map[string][]byte{"part": part},
		})
	}
	return idx, parts
}

// trimLayout drops the layout of a status, marking it omitted.
func trimLayout(s []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s, &m); err != nil {
		return nil, fmt.Errorf("trimming the status' layout: %w", err)
	}
	delete(m, "layout")
	m["layoutOmitted"] = json.RawMessage("true")
	return markTruncated(m, func(t *status.Truncation) { t.LayoutOmitted = true })
}

// trimDetail drops what a status says per service beyond each target's state,
// locks and problems: the desired containers, the images and changes per
// target, the unmanaged workloads.
func trimDetail(s []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(s, &m); err != nil {
		return nil, fmt.Errorf("trimming the status' detail: %w", err)
	}
	delete(m, "unmanaged")
	if svcs, ok := m["services"]; ok {
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(svcs, &list); err != nil {
			return nil, fmt.Errorf("trimming the status' services: %w", err)
		}
		for _, svc := range list {
			delete(svc, "desired")
			var targets []map[string]json.RawMessage
			if err := json.Unmarshal(svc["targets"], &targets); err != nil || targets == nil {
				continue
			}
			for _, t := range targets {
				delete(t, "images")
				delete(t, "changes")
			}
			b, err := json.Marshal(targets)
			if err != nil {
				return nil, fmt.Errorf("trimming the status' services: %w", err)
			}
			svc["targets"] = b
		}
		b, err := json.Marshal(list)
		if err != nil {
			return nil, fmt.Errorf("trimming the status' services: %w", err)
		}
		m["services"] = b
	}
	return markTruncated(m, func(t *status.Truncation) { t.ServiceDetailOmitted = true })
}

func markTruncated(m map[string]json.RawMessage, set func(*status.Truncation)) ([]byte, error) {
	var t status.Truncation
	if old, ok := m["truncated"]; ok {
		_ = json.Unmarshal(old, &t) // a malformed record is replaced
	}
	set(&t)
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encoding the status' truncation: %w", err)
	}
	m["truncated"] = b
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the trimmed status: %w", err)
	}
	return out, nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipBytes(z []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxInflatedBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInflatedBytes {
		return nil, fmt.Errorf("inflates beyond %d bytes", maxInflatedBytes)
	}
	return b, nil
}

// partSource reads the parts of split values. Parts are named after their
// content and checked against the index's hash, so a value once assembled
// is kept (the worker reads the state every second; a large plan need not be
// fetched and inflated each time).
type partSource struct {
	get func(ctx context.Context, name string) (*corev1.ConfigMap, error)

	mu       sync.Mutex
	inflated map[string][]byte // by the index's hash
	size     int
}

// maxCachedBytes bounds what a partSource keeps; beyond, it starts afresh.
const maxCachedBytes = 64 << 20

func (p *partSource) cached(sum string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.inflated[sum]
	return b, ok
}

func (p *partSource) remember(sum string, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflated == nil || p.size+len(b) > maxCachedBytes {
		p.inflated, p.size = map[string][]byte{}, 0
	}
	if _, ok := p.inflated[sum]; !ok {
		p.inflated[sum], p.size = b, p.size+len(b)
	}
}

// decodeState reads cm in any of the formats above, fetching parts from src
// (nil when cm has no part indexes). A part missing or not matching its
// index's hash is errPartGone.
func decodeState(ctx context.Context, cm *corev1.ConfigMap, src *partSource) (*EnvState, error) {
	st := &EnvState{}
	where := func(key string) string { return fmt.Sprintf("%s of configmap %s/%s", key, cm.Namespace, cm.Name) }
	value := func(key string) ([]byte, error) {
		if raw, ok := cm.Data[key]; ok && raw != "" {
			return []byte(raw), nil
		}
		if z, ok := cm.BinaryData[key+suffixGzip]; ok {
			b, err := gunzipBytes(z)
			if err != nil {
				return nil, fmt.Errorf("inflating %s: %w", where(key+suffixGzip), err)
			}
			return b, nil
		}
		ix, ok := cm.Data[key+suffixParts]
		if !ok {
			return nil, nil
		}
		var idx partIndex
		if err := json.Unmarshal([]byte(ix), &idx); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", where(key+suffixParts), err)
		}
		if src == nil {
			return nil, fmt.Errorf("reading %s: parts cannot be read here", where(key+suffixParts))
		}
		if b, ok := src.cached(idx.SHA256); ok {
			return b, nil
		}
		if idx.Size < 0 || idx.Size > maxInflatedBytes {
			return nil, fmt.Errorf("reading %s: size %d is not between 0 and %d", where(key+suffixParts), idx.Size, maxInflatedBytes)
		}
		z := make([]byte, 0, idx.Size)
		for _, pn := range idx.Parts {
			if len(z) > idx.Size {
				break // the hash check below refuses it
			}
			p, err := src.get(ctx, pn)
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("reading part %s of %s: %w", pn, where(key), errPartGone)
			}
			if err != nil {
				return nil, fmt.Errorf("reading part %s of %s: %w", pn, where(key), err)
			}
			z = append(z, p.BinaryData["part"]...)
		}
		if sum := sha256.Sum256(z); hex.EncodeToString(sum[:]) != idx.SHA256 {
			return nil, fmt.Errorf("assembling %s: parts do not match the index's hash: %w", where(key), errPartGone)
		}
		b, err := gunzipBytes(z)
		if err != nil {
			return nil, fmt.Errorf("inflating %s: %w", where(key), err)
		}
		src.remember(idx.SHA256, b)
		return b, nil
	}
	field := func(key string, v any) error {
		b, err := value(key)
		if err != nil || b == nil {
			return err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("decoding %s: %w", where(key), err)
		}
		return nil
	}
	history := func(h *[]approval.Entry) error {
		b, err := value(keyHistory)
		if err != nil || b == nil {
			return err
		}
		if *h, err = unpackHistory(b); err != nil {
			return fmt.Errorf("decoding %s: %w", where(keyHistory), err)
		}
		return nil
	}
	var status json.RawMessage
	var tr trimmed
	var legacy *Handover
	err := errors.Join(
		field(keyPending, &st.Pending),
		field(keyInFlight, &st.InFlight),
		field(keyHandovers, &st.Handovers),
		field(keyHandover, &legacy),
		field(keyUnreported, &st.Unreported),
		field(keySequence, &st.Sequence),
		field(keyPin, &st.Pin),
		field(keyBreakGlass, &st.BreakGlass),
		history(&st.History),
		field(keyStatus, &status),
		field(keyTrimmed, &tr),
		field(keyLastID, &st.LastID),
		field(keyRollback, &st.Rollback),
		field(keyFailed, &st.Failed),
	)
	phase, _ := value(keyPhase) // read leniently: see readPhase
	st.Phase = readPhase(st, phase)
	if len(status) > 0 {
		st.Status = status
	}
	st.HistoryDropped = tr.HistoryDropped
	st.Handovers = withLegacy(st.Handovers, legacy)
	return st, err
}

// partNames are the parts cm's indexes name: every key split, whichever it
// is (a part an index names but this leaves out would be deleted as an
// orphan while still indexed).
func partNames(cm *corev1.ConfigMap) map[string]bool {
	names := map[string]bool{}
	for key, ix := range cm.Data {
		var idx partIndex
		if strings.HasSuffix(key, suffixParts) && json.Unmarshal([]byte(ix), &idx) == nil {
			for _, pn := range idx.Parts {
				names[pn] = true
			}
		}
	}
	return names
}

// partStore writes, reads and deletes the part ConfigMaps of split values
// in namespace; a part no index names is deleted once it is orphanAge old.
type partStore struct {
	client    kubernetes.Interface
	namespace string
	orphanAge time.Duration
}

// write creates the parts of e that old (the index being replaced, nil
// when new) does not name already. Parts are named after their content, so
// one that exists holds what it should.
func (s *partStore) write(ctx context.Context, e *encoded, old map[string]bool) error {
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	for _, p := range e.parts {
		if old[p.Name] {
			continue
		}
		p.Namespace = s.namespace
		_, err := cms.Create(ctx, p, metav1.CreateOptions{FieldManager: "stagehand"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("writing state part %s: %w", p.Name, err)
		}
	}
	return nil
}

// partMove is a move of a state's index from the parts old named to those
// now names.
type partMove struct {
	old, now map[string]bool
}

// drop deletes, after the index of name moved, the parts it no longer
// names: those m.old named, and any other no index has named for a while
// (left by a writer whose index update lost a race). A while is judged by
// the API server's clock alone: serverNow is when the server wrote the index
// (serverTime), compared with the parts' creationTimestamp, so a replica
// whose clock runs ahead never deletes a part another writer is about to
// index. A zero serverNow (unknown) deletes no orphan.
func (s *partStore) drop(ctx context.Context, name string, m partMove, serverNow time.Time) error {
	old, now := m.old, m.now
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: labelStateOf + "=" + name})
	if err != nil {
		return fmt.Errorf("listing state parts of %s: %w", name, err)
	}
	var errs []error
	for _, p := range list.Items {
		orphanAged := !serverNow.IsZero() && serverNow.Sub(p.CreationTimestamp.Time) >= s.orphanAge
		if now[p.Name] || (!old[p.Name] && !orphanAged) {
			continue
		}
		if err := cms.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting state part %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// serverTime is when the API server last wrote cm's fields for the
// "stagehand" field manager (its managedFields entry, stamped with the
// server's clock); zero when cm has no such entry.
func serverTime(cm *corev1.ConfigMap) time.Time {
	var t time.Time
	if cm == nil {
		return t
	}
	for _, mf := range cm.ManagedFields {
		if mf.Manager == "stagehand" && mf.Time != nil && mf.Time.After(t) {
			t = mf.Time.Time
		}
	}
	return t
}

// get reads a part ConfigMap.
func (s *partStore) get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, name, metav1.GetOptions{})
}
