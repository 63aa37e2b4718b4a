package gitsource

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/stagehand-gitops/stagehand/internal/config"
)

// access is what one poll presents to the remote: credentials, and the
// extra certificate authorities of an https source with a private CA.
type access struct {
	auth     transport.AuthMethod
	caBundle []byte
}

// access builds this poll's access. The CA file is read on every poll, like
// token files, so a rotated Secret takes effect without a restart.
func (s *Source) access(ctx context.Context) (access, error) {
	a, err := s.auth.method(ctx, s.url.hostPort)
	if err != nil {
		return access{}, err
	}
	if s.caFile == "" {
		return access{auth: a}, nil
	}
	pem, _, err := readCAFile(s.caFile)
	if err != nil {
		return access{}, err
	}
	return access{auth: a, caBundle: pem}, nil
}

// readCAFile reads a PEM bundle and returns it with the system's roots plus
// its certificates.
func readCAFile(name string) ([]byte, *x509.CertPool, error) {
	pem, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, fmt.Errorf("source.caFile: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("source.caFile: %s holds no PEM certificate", name)
	}
	return pem, pool, nil
}

// caTransport is http.DefaultTransport trusting pool's authorities: the
// GitHub App token exchange of a GitHub Enterprise Server behind a private
// CA needs them as much as git does.
func caTransport(pool *x509.CertPool) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t
}

// HTTPTransport returns http.DefaultTransport or, with source.caFile, a
// clone that also trusts the file's authorities: for the other HTTPS clients
// of the same server, such as the GitHub Enterprise Server API behind the
// company CA that serves the manifests repository.
func HTTPTransport(cfg config.Source) (http.RoundTripper, error) {
	if cfg.CAFile == "" {
		return http.DefaultTransport, nil
	}
	_, pool, err := readCAFile(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	return caTransport(pool), nil
}
