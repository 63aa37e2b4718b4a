package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/gitsource"
)

// Source builds the git source of the source: section, translated into
// gitsource options: url and branch, interval or schedule, cacheDir, the
// credentials of auth (tokenFile read before every poll, sshKeyFile with
// knownHostsFile, or githubApp installation tokens), caFile and verify. It
// reads WithSourceOptions (added last, so they win), and WithGitHubAPIURL and
// WithHTTPTransport for githubApp. Errors name the configuration key.
func Source(src config.Source, opts ...Option) (*gitsource.Source, error) {
	o, err := makeOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("configuring git source: %w", err)
	}
	return source(src, o)
}

// source is Source with its options applied.
func source(src config.Source, o options) (*gitsource.Source, error) {
	if src.URL == "" {
		return nil, errors.New("source.url: required")
	}
	if err := src.Validate(); err != nil {
		return nil, err
	}
	var gopts []gitsource.Option
	if src.Schedule != "" {
		gopts = append(gopts, gitsource.WithSchedule(src.Schedule))
	} else if src.Interval.Duration > 0 {
		gopts = append(gopts, gitsource.WithInterval(src.Interval.Duration))
	}
	if src.CacheDir != "" {
		gopts = append(gopts, gitsource.WithCacheDir(src.CacheDir))
	}
	if src.CAFile != "" {
		file := src.CAFile
		gopts = append(gopts, gitsource.WithCABundle(func() ([]byte, error) {
			pem, _, err := readCAFile(file)
			return pem, err
		}))
	}
	if v := src.Verify; v != nil && v.AllowedSignersFile != "" {
		file := v.AllowedSignersFile
		gopts = append(gopts, gitsource.WithAllowedSigners(func() ([]byte, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("source.verify.allowedSignersFile: %w", err)
			}
			return b, nil
		}))
	}
	if v := src.Verify; v != nil && v.KeyringFile != "" {
		file := v.KeyringFile
		gopts = append(gopts, gitsource.WithVerifyKeyring(func() ([]byte, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("source.verify.keyringFile: %w", err)
			}
			return b, nil
		}))
	}
	a := src.Auth
	switch {
	case a.TokenFile != "":
		file := a.TokenFile
		gopts = append(gopts, gitsource.WithTokenSource(func(context.Context) (string, error) {
			tok, err := config.ReadSecret(file)
			if err != nil {
				return "", fmt.Errorf("source.auth.tokenFile: %w", err)
			}
			return tok, nil
		}))
	case a.GitHubApp != nil:
		rt := o.httpTransport
		if rt == nil {
			var err error
			if rt, err = HTTPTransport(src); err != nil {
				return nil, err
			}
		}
		ts, err := appTokenSource(*a.GitHubApp, o.githubAPIURL, rt, o.localNow())
		if err != nil {
			return nil, err
		}
		// Installation tokens go with user x-access-token, whatever auth.username says.
		gopts = append(gopts, gitsource.WithTokenSource(ts), gitsource.WithUsername(gitsource.DefaultTokenUser))
	case a.SSHKeyFile != "":
		gopts = append(gopts, gitsource.WithSSHKeyFile(a.SSHKeyFile), gitsource.WithKnownHostsFile(a.KnownHostsFile))
	}
	if a.Username != "" && a.GitHubApp == nil {
		gopts = append(gopts, gitsource.WithUsername(a.Username))
	}
	return gitsource.New(src.URL, src.Branch, append(gopts, o.sourceOpts...)...)
}

// HTTPTransport returns http.DefaultTransport or, with source.caFile, a
// clone that also trusts the file's authorities: for the other HTTPS clients
// of the same server, such as the GitHub Enterprise Server API behind the
// company CA that serves the manifests repository, and the GitHub App token
// exchange of the source.
func HTTPTransport(src config.Source) (http.RoundTripper, error) {
	if src.CAFile == "" {
		return http.DefaultTransport, nil
	}
	_, pool, err := readCAFile(src.CAFile)
	if err != nil {
		return nil, err
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// readCAFile reads source.caFile's PEM bundle and returns it with the
// system's roots plus its certificates.
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
