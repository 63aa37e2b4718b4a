package gitsource

import (
	"context"
	"crypto/x509"
	"errors"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// access is what one poll presents to the remote: credentials, and the
// extra certificate authorities of an https source with a private CA.
type access struct {
	auth     transport.AuthMethod
	caBundle []byte
}

// access builds this poll's access. The CA bundle is read on every poll,
// like tokens, so a rotated Secret takes effect without a restart.
func (s *Source) access(ctx context.Context) (access, error) {
	a, err := s.auth.method(ctx, s.url.hostPort)
	if err != nil {
		return access{}, err
	}
	if s.caBundle == nil {
		return access{auth: a}, nil
	}
	pem, err := s.readCABundle()
	if err != nil {
		return access{}, err
	}
	return access{auth: a, caBundle: pem}, nil
}

// readCABundle reads the CA bundle and checks that it holds a certificate.
func (s *Source) readCABundle() ([]byte, error) {
	pem, err := s.caBundle()
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, errors.New("CA bundle: holds no PEM certificate")
	}
	return pem, nil
}
