package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 2 s); etcd
// and the rest keep running, and clients get "connection refused" until
// StartAPIServer.
func (e *Env) StopAPIServer() error {
	p, _ := e.named("kube-apiserver")
	if p == nil {
		return errors.New("stopping kube-apiserver: not running")
	}
	p.stop(2 * time.Second)
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags, port, certificates and etcd, and returns once it is ready.
func (e *Env) StartAPIServer(ctx context.Context) error {
	old, i := e.named("kube-apiserver")
	if old == nil {
		return errors.New("starting kube-apiserver: it never ran")
	}
	if old.running() {
		return errors.New("starting kube-apiserver: already running")
	}
	p, err := e.run("kube-apiserver", e.apiArgs...)
	if err != nil {
		return err
	}
	// run appended it; it takes the old one's place, so that Stop keeps
	// stopping it before etcd.
	e.procs = e.procs[:len(e.procs)-1]
	e.procs[i] = p
	if err := waitHTTP(ctx, p, e.apiHealth()); err != nil {
		return fmt.Errorf("waiting for kube-apiserver after a restart: %w\n%s", err, p.tail(4000))
	}
	return nil
}
