package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/stagehand-gitops/stagehand/internal/approval"
)

// The record of webhook deliveries that reached an approval path (a click
// on a check run's button), so that one delivery decides at most once: on
// either replica, and after a restart. The webhook receiver's own dedupe
// is one process's memory; this one is a ConfigMap every replica reads and
// writes with the resourceVersion it read as precondition, so of two
// replicas handed the same delivery at once exactly one finds it new. It
// is not an environment's state: it is written by whichever replica takes
// the delivery, leading or not, and is not fenced.
const (
	// DeliveriesConfigMap is the name of the record, in the state namespace.
	DeliveriesConfigMap = "stagehand-deliveries"
	keyDeliveries       = "deliveries.json"
	// DefaultMaxDeliveries is how many deliveries the record keeps (the
	// newest; ~120 bytes each).
	DefaultMaxDeliveries = 1000
	// maxDeliveryID is the longest delivery ID kept as it is; a longer one
	// (the header is not signed: anyone may send any) is kept as its hash.
	maxDeliveryID = 64
)

// Deliveries is the bounded record of deliveries in ConfigMap
// DeliveriesConfigMap of a namespace.
type Deliveries struct {
	client    kubernetes.Interface
	namespace string
	max       int
}

// NewDeliveries returns the record of deliveries in namespace, keeping the
// newest max (DefaultMaxDeliveries when max <= 0).
func NewDeliveries(client kubernetes.Interface, namespace string, max int) *Deliveries {
	if max <= 0 {
		max = DefaultMaxDeliveries
	}
	return &Deliveries{client: client, namespace: namespace, max: max}
}

// seenDelivery is one delivery recorded, newest first in the record.
type seenDelivery struct {
	ID  string `json:"id,omitempty"`
	Sum string `json:"sum"`
}

// deliveryKey is how d is recorded: its ID (hashed when over
// maxDeliveryID) and its body's sum.
func deliveryKey(d approval.Delivery) seenDelivery {
	id := d.ID
	if len(id) > maxDeliveryID {
		s := sha256.Sum256([]byte(id))
		id = "sha256:" + hex.EncodeToString(s[:])
	}
	return seenDelivery{ID: id, Sum: d.Sum}
}

// First records d and reports whether it is new: false when its ID (unless
// empty) or its sum is in the record. The record keeps the newest max.
func (l *Deliveries) First(ctx context.Context, d approval.Delivery) (bool, error) {
	if len(d.Sum) != sha256.Size*2 {
		return false, fmt.Errorf("recording delivery %q: sum %q is not a hex SHA-256", d.ID, d.Sum)
	}
	k := deliveryKey(d)
	var fresh bool
	var last error
	err := retry.RetryOnConflict(writeBackoff, func() error {
		fresh, last = l.try(ctx, k)
		return last
	})
	if err == nil {
		err = last // a wait cut short returns no error of its own
	}
	if err != nil {
		return false, fmt.Errorf("recording delivery %q in configmap %s/%s: %w", k.ID, l.namespace, DeliveriesConfigMap, err)
	}
	return fresh, nil
}

// Forget removes d (its ID and sum, both as recorded together) from the
// record.
func (l *Deliveries) Forget(ctx context.Context, d approval.Delivery) error {
	k := deliveryKey(d)
	cms := l.client.CoreV1().ConfigMaps(l.namespace)
	err := retry.RetryOnConflict(writeBackoff, func() error {
		cm, err := cms.Get(ctx, DeliveriesConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		var seen []seenDelivery
		if err := json.Unmarshal([]byte(cm.Data[keyDeliveries]), &seen); err != nil {
			return nil // nothing readable to remove
		}
		kept := slices.DeleteFunc(seen, func(s seenDelivery) bool { return s == k })
		if len(kept) == len(seen) {
			return nil
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return fmt.Errorf("encoding the delivery record: %w", err)
		}
		cm.Data = map[string]string{keyDeliveries: string(b)}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "stagehand"})
		return err
	})
	if err != nil {
		return fmt.Errorf("forgetting delivery %q in configmap %s/%s: %w", k.ID, l.namespace, DeliveriesConfigMap, err)
	}
	return nil
}

// try is one read and write of the record: it reports whether k was not in
// it and is now; a conflict is another replica's write, read again.
func (l *Deliveries) try(ctx context.Context, k seenDelivery) (bool, error) {
	cms := l.client.CoreV1().ConfigMaps(l.namespace)
	cm, err := cms.Get(ctx, DeliveriesConfigMap, metav1.GetOptions{})
	create := apierrors.IsNotFound(err)
	if err != nil && !create {
		return false, err
	}
	var seen []seenDelivery
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: DeliveriesConfigMap, Namespace: l.namespace,
			Labels: map[string]string{LabelManagedBy: "stagehand", LabelComponent: "deliveries"}}}
	} else if raw := cm.Data[keyDeliveries]; raw != "" {
		// An unreadable record is started afresh: the handler's other
		// checks (the run awaits the click's decision) still hold.
		_ = json.Unmarshal([]byte(raw), &seen)
	}
	if slices.ContainsFunc(seen, func(s seenDelivery) bool { return s.Sum == k.Sum || (k.ID != "" && s.ID == k.ID) }) {
		return false, nil
	}
	seen = append([]seenDelivery{k}, seen...)
	if len(seen) > l.max {
		seen = seen[:l.max]
	}
	b, err := json.Marshal(seen)
	if err != nil {
		return false, fmt.Errorf("encoding the delivery record: %w", err)
	}
	cm.Data = map[string]string{keyDeliveries: string(b)}
	if create {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: "stagehand"})
		if apierrors.IsAlreadyExists(err) {
			return false, apierrors.NewConflict(corev1.Resource("configmaps"), DeliveriesConfigMap, err)
		}
	} else {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "stagehand"})
	}
	return err == nil, err
}
