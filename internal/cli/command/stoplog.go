package command

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
)

// QuietOnStop returns l, except that once ctx has ended (the process
// stops) an error caused by the stop itself (errors.Is context.Canceled) is
// logged at info level with stopping=true: nothing failed. Every part of
// the process logs through it, and client-go's leader election too
// (klog): the renewal it cancels on the way out, before the Lease is
// released, and a state read the stop cancels would otherwise read as
// errors on every normal shutdown. Errors the stop does not cause stay
// errors.
func QuietOnStop(ctx context.Context, l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	return logr.New(stopSink{LogSink: l.GetSink(), ctx: ctx})
}

// stopSink is QuietOnStop's sink.
type stopSink struct {
	logr.LogSink
	ctx context.Context
}

func (s stopSink) Error(err error, msg string, kv ...any) {
	if s.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		if s.LogSink.Enabled(0) {
			s.LogSink.Info(0, msg, append(kv, "error", err.Error(), "stopping", true)...)
		}
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s stopSink) WithValues(kv ...any) logr.LogSink {
	return stopSink{LogSink: s.LogSink.WithValues(kv...), ctx: s.ctx}
}

func (s stopSink) WithName(name string) logr.LogSink {
	return stopSink{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}
