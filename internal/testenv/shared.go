package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Shared is the control plane of one test package, started by the first test
// that asks for it and stopped by TestMain after every test has run. Tests of
// pure logic never ask, so a run of only those starts (and builds) nothing.
//
//	var cluster testenv.Shared
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Main(m, testenv.WithCRDs("crd"))) }
//
//	func TestSomething(t *testing.T) {
//		env := cluster.Env(t)
//		ns := env.Namespace(t)
//		...
//	}
//
// The zero value is ready for Main.
type Shared struct {
	mu   sync.Mutex
	opts []Option
	main bool // Main is running

	once sync.Once
	env  *Env
	err  error
	skip string // why the package's cluster tests are skipped, if they are
}

// BuildEnv is the environment variable that lets a plain `go test` build the
// control-plane binaries when they are missing. Without it (and outside CI),
// a test that needs a cluster is skipped, saying why and how to run it, so
// that `go test` of a package's pure tests on a fresh clone builds nothing.
// `make test` builds the binaries first; with CI set they are always built.
const BuildEnv = "STAGEHAND_TESTENV_BUILD"

// Main records the options of the package's control plane, runs the tests and
// stops the control plane if a test started it. Use it from TestMain:
// os.Exit(cluster.Main(m, opts...)).
func (s *Shared) Main(m *testing.M, opts ...Option) int {
	s.mu.Lock()
	s.opts, s.main = opts, true
	s.mu.Unlock()
	defer s.stop()
	return m.Run()
}

// Env returns the package's control plane, starting it on the first call. The
// name of the test that starts it is the reason given when the control-plane
// binaries must be built first. A failed start fails every test that asks.
func (s *Shared) Env(tb testing.TB) *Env {
	tb.Helper()
	s.mu.Lock()
	opts, main := s.opts, s.main
	s.mu.Unlock()
	if !main {
		tb.Fatal("testenv: Shared.Env called without Shared.Main; call it from TestMain")
	}
	s.once.Do(func() {
		name, _, _ := strings.Cut(tb.Name(), "/")
		if _, ok := installed(); !ok && os.Getenv(BuildEnv) == "" && os.Getenv("CI") == "" {
			s.skip = fmt.Sprintf("testenv: %s and the package's other cluster tests need a kube-apiserver, and the test control plane is not built: run `make testbin` (or `make test`), or set %s=1 to build it now", name, BuildEnv)
			fmt.Fprintln(os.Stderr, s.skip)
			return
		}
		if wantsFlagger(opts) && !flaggerInstalled() && os.Getenv(BuildEnv) == "" && os.Getenv("CI") == "" {
			s.skip = fmt.Sprintf("testenv: %s and the package's other cluster tests need Flagger, and it is not built: run `make flagger` (or `make test`), or set %s=1 to build it now", name, BuildEnv)
			fmt.Fprintln(os.Stderr, s.skip)
			return
		}
		if wantsArgo(opts) && !argoInstalled() && os.Getenv(BuildEnv) == "" && os.Getenv("CI") == "" {
			s.skip = fmt.Sprintf("testenv: %s and the package's other cluster tests need the Argo Rollouts controller, and it is not built: run `make rollouts` (or `make test`), or set %s=1 to build it now", name, BuildEnv)
			fmt.Fprintln(os.Stderr, s.skip)
			return
		}
		reason := withReason(name + " needs a kube-apiserver")
		s.env, s.err = Start(context.Background(), append(opts, reason)...)
		if s.err != nil {
			s.err = fmt.Errorf("starting the test control plane for %s: %w", name, s.err)
		}
	})
	if s.skip != "" {
		tb.Skip(s.skip)
	}
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.env
}

func (s *Shared) stop() {
	// A test that is still starting the control plane when m.Run returns
	// cannot exist: m.Run waits for every test.
	s.once.Do(func() { s.err = errors.New("testenv: the tests have ended") })
	s.env.Stop() // nil-safe: nothing to stop when no test asked
}

// wantsFlagger reports whether opts ask for Flagger.
func wantsFlagger(opts []Option) bool {
	o, err := makeOptions(opts...)
	return err == nil && o.flagger
}

// wantsArgo reports whether opts ask for the Argo Rollouts controller.
func wantsArgo(opts []Option) bool {
	o, err := makeOptions(opts...)
	return err == nil && o.argo
}
