package dora

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// MarksConfigMap is the ConfigMap, in the state namespace, that keeps the
// newest history entry each environment's metrics counted: its data maps an
// environment's name to that entry's number.
const MarksConfigMap = "stagehand-dora"

// errConflict is a write that lost to another replica's.
var errConflict = errors.New("the marks were written meanwhile")

// Marks is where the newest history entry counted of each environment is
// kept, so that a deploy is counted once across restarts and replicas: a
// replica counts a deploy only after it moved the mark past it, with the
// resourceVersion it read as the write's precondition, so of two replicas
// (an old holder and a new one) exactly one counts it.
type Marks struct {
	client    kubernetes.Interface
	namespace string
}

// NewMarks returns the marks of ConfigMap MarksConfigMap in namespace.
func NewMarks(client kubernetes.Interface, namespace string) *Marks {
	return &Marks{client: client, namespace: namespace}
}

// mark is env's mark as read: the entry counted (found is false when env
// has none yet) and the ConfigMap it was read from (nil when missing).
type mark struct {
	counted int64
	found   bool
	cm      *corev1.ConfigMap
}

// load reads env's mark.
func (m *Marks) load(ctx context.Context, env string) (mark, error) {
	cm, err := m.client.CoreV1().ConfigMaps(m.namespace).Get(ctx, MarksConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return mark{}, nil
	}
	if err != nil {
		return mark{}, fmt.Errorf("reading configmap %s/%s: %w", m.namespace, MarksConfigMap, err)
	}
	out := mark{cm: cm}
	if v, ok := cm.Data[env]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return mark{}, fmt.Errorf("reading configmap %s/%s: key %q holds %q, want an entry number", m.namespace, MarksConfigMap, env, v)
		}
		out.counted, out.found = n, true
	}
	return out, nil
}

// store moves env's mark to counted in the ConfigMap as read, its
// resourceVersion the write's precondition (errConflict when it changed
// since).
func (m *Marks) store(ctx context.Context, env string, counted int64, read mark) error {
	cms := m.client.CoreV1().ConfigMaps(m.namespace)
	var err error
	if read.cm == nil {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: MarksConfigMap, Namespace: m.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "stagehand"}},
			Data: map[string]string{env: strconv.FormatInt(counted, 10)},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return errConflict
		}
	} else {
		cm := read.cm.DeepCopy()
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[env] = strconv.FormatInt(counted, 10)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return errConflict
		}
	}
	if err != nil {
		return fmt.Errorf("writing configmap %s/%s: %w", m.namespace, MarksConfigMap, err)
	}
	return nil
}
