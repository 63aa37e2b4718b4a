package testenv

import (
	"strings"
	"testing"
)

// TestSharedSkipsWithoutBinaries: with no control-plane binaries, outside CI
// and without STAGEHAND_TESTENV_BUILD, a test asking for the shared control
// plane is skipped with the reason and the way to run it; nothing is built.
func TestSharedSkipsWithoutBinaries(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", t.TempDir()) // holds no binaries
	t.Setenv("CI", "")
	t.Setenv(BuildEnv, "")
	t.Chdir(t.TempDir()) // no repository above: no bin/k8s to find, no build.sh to run

	s := &Shared{main: true}
	var skipped bool
	t.Run("NeedsCluster", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		s.Env(t)
		t.Error("Env returned without binaries")
	})
	if !skipped {
		t.Fatal("the test asking for a control plane was not skipped")
	}
	for _, want := range []string{"TestSharedSkipsWithoutBinaries and the package's other cluster tests need a kube-apiserver", "make testbin", BuildEnv + "=1"} {
		if !strings.Contains(s.skip, want) {
			t.Errorf("skip reason %q does not say %q", s.skip, want)
		}
	}
	if s.env != nil || s.err != nil {
		t.Errorf("env %v, err %v: want nothing started", s.env, s.err)
	}
}

// TestFreePortsBelowEphemeralRange: ports handed to etcd and kube-apiserver
// must not be ones the kernel can give another process as a source port
// before ours binds them (the race that failed CI with "address already in
// use").
func TestFreePortsBelowEphemeralRange(t *testing.T) {
	ports, err := freePorts(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < 20000 || p >= 32768 {
			t.Errorf("port %d is outside 20000-32767", p)
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
