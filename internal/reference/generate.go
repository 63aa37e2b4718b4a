package reference

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Pages renders every generated page of the repository at root, by its path
// relative to root.
func Pages(root string) (map[string][]byte, error) {
	var cmds bytes.Buffer
	if err := Commands(&cmds); err != nil {
		return nil, fmt.Errorf("rendering commands: %w", err)
	}
	ms, err := Metrics(root)
	if err != nil {
		return nil, err
	}
	var metrics bytes.Buffer
	if err := MetricsPage(&metrics, ms); err != nil {
		return nil, fmt.Errorf("rendering metrics: %w", err)
	}
	return map[string][]byte{
		"docs/reference/commands.md": cmds.Bytes(),
		"docs/reference/metrics.md":  metrics.Bytes(),
	}, nil
}

// Write renders the pages and writes them under root.
func Write(root string) error {
	pages, err := Pages(root)
	if err != nil {
		return err
	}
	for path, b := range pages {
		file := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := os.WriteFile(file, b, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
