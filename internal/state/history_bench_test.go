package state

import (
	"fmt"
	"testing"

	"github.com/stagehand-gitops/stagehand/internal/state/statetest"
)

// BenchmarkHistoryStateSize encodes a state holding a full history (100
// entries) as the Store writes it, and reports the ConfigMap bytes per entry
// and the entries that fit: without the resolved manifests (before) and with
// them (after).
func BenchmarkHistoryStateSize(b *testing.B) {
	for _, services := range []int{40, 200} {
		for _, withManifest := range []bool{false, true} {
			b.Run(fmt.Sprintf("services=%d/manifest=%v", services, withManifest), func(b *testing.B) {
				// As the Store holds it: read back from the state.
				raw, err := packHistory(statetest.History(DefaultHistoryLimit, services, withManifest))
				if err != nil {
					b.Fatal(err)
				}
				hist, err := unpackHistory(raw)
				if err != nil {
					b.Fatal(err)
				}
				var size, kept int
				for b.Loop() {
					st := &EnvState{History: hist, LastID: DefaultHistoryLimit}
					e, err := encodeState("stagehand-state-prod", st, maxStateBytes)
					if err != nil {
						b.Fatal(err)
					}
					size, kept = e.size(), len(st.History)
				}
				b.ReportMetric(float64(size)/float64(kept), "bytes/entry")
				b.ReportMetric(float64(kept), "entries")
			})
		}
	}
}
