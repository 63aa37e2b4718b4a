package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestRemoveAbandoned(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{
		"dead-owner":  strconv.Itoa(dead.Process.Pid),
		"live-owner":  strconv.Itoa(os.Getpid()),
		"no-owner":    "",
		"junk-owner":  "not a pid",
		"other-owner": "1", // alive (init), must be kept
	}
	for name, pid := range dirs {
		d := filepath.Join(tmp, dirPrefix+name)
		if err := os.MkdirAll(filepath.Join(d, "etcd"), 0o700); err != nil {
			t.Fatal(err)
		}
		if pid != "" {
			if err := os.WriteFile(filepath.Join(d, ownerFile), []byte(pid), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeAbandoned(tmp)
	for name := range dirs {
		_, err := os.Stat(filepath.Join(tmp, dirPrefix+name))
		if gone, want := os.IsNotExist(err), name == "dead-owner"; gone != want {
			t.Errorf("%s: removed = %v, want %v", name, gone, want)
		}
	}
}
