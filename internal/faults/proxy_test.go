package faults

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/stagehand-gitops/stagehand/internal/testenv"
)

// proxy is a TCP proxy to the API server that a test can cut (every
// connection closed, new ones refused) and restore on the same address.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]struct{}
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	p := &proxy{addr: testenv.FreeAddr(t), target: target, conns: map[net.Conn]struct{}{}}
	p.restore(t)
	t.Cleanup(p.cut)
	return p
}

// restore listens again.
func (p *proxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy: listening on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
}

func (p *proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut closes the listener and every connection.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// kubeconfigVia writes a copy of the environment's kubeconfig whose server
// is the proxy (the certificate is for 127.0.0.1, whatever the port).
func (f *fixture) kubeconfigVia(t *testing.T, p *proxy) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(f.env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		u.Host = p.addr
		c.Server = u.String()
	}
	path := filepath.Join(f.dir, "kubeconfig-via-proxy")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiServerAddr is the host:port of the environment's API server.
func (f *fixture) apiServerAddr(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(f.env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
