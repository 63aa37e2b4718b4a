package reconcile

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
)

// eventTimeout bounds one Event write: record.EventRecorder's methods take
// no context.
const eventTimeout = 10 * time.Second

// EventWriter is a record.EventRecorder that writes each Event through a
// client before returning. client-go's broadcasters queue Events and drop
// them beyond 1,000 with no way to flush; Apply calls the recorder from a
// bounded pool and returns only after every call did, so with an EventWriter
// (alone, or under fluxcd's events.Recorder, as the daemon wires it) each
// deployed workload's Event is in the API server when Apply returns. Write
// failures are dropped: an Event never fails a deploy.
type EventWriter struct {
	client   kubernetes.Interface
	instance string // reportingInstance
}

var _ record.EventRecorder = (*EventWriter)(nil)

// NewEventWriter returns an EventWriter reporting as instance (such as
// "stagehand-reconciler@pod-name"; cut to 128 characters).
func NewEventWriter(client kubernetes.Interface, instance string) *EventWriter {
	return &EventWriter{client: client, instance: truncate(instance, 128)}
}

// Event writes an Event on object.
func (w *EventWriter) Event(object runtime.Object, eventtype, reason, message string) {
	w.AnnotatedEventf(object, nil, eventtype, reason, "%s", message)
}

// Eventf writes an Event on object with a formatted message.
func (w *EventWriter) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	w.AnnotatedEventf(object, nil, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf writes an Event on object carrying annotations.
func (w *EventWriter) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	ref, err := reference.GetReference(scheme.Scheme, object)
	if err != nil {
		return
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: ref.Name + ".", Namespace: ref.Namespace, Annotations: maps.Clone(annotations)},
		InvolvedObject: *ref,
		Reason:         reason, Message: fmt.Sprintf(messageFmt, args...), Type: eventtype,
		Source:              corev1.EventSource{Component: FieldManager},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: ReportingController,
		ReportingInstance:   w.instance,
	}
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	_, _ = w.client.CoreV1().Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{})
}
