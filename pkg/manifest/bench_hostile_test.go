package manifest

import (
	"encoding/json"
	"fmt"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

// oneLine returns a manifest of about size bytes written on one line, with
// realistic services (a name and one container each).
func oneLine(size int) []byte {
	b := make([]byte, 0, size+128)
	b = append(b, `{"services":[`...)
	for i := 0; len(b) < size-128; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name":"service-%06d","containers":[{"dockerTag":"1.2.%d"}]}`, i, i%100)
	}
	return append(b, `]}`...)
}

// amplification is the include-amplification repository of issue 15: a
// root manifest of about 110 KB including, 9,999 times, one file of
// services (215,000 short ones make 4 MB).
func amplification(services, includes int) fstest.MapFS {
	var big strings.Builder
	big.WriteString(`{"services":[`)
	for i := range services {
		if i > 0 {
			big.WriteString(",\n")
		}
		fmt.Fprintf(&big, "{\"name\":\"s%05x\"}", i)
	}
	big.WriteString(`]}`)
	root := `{"includes":[` + strings.TrimSuffix(strings.Repeat(`"./b.json",`, includes), ",") + `]}`
	return fstest.MapFS{
		"environments/e/manifest.json": {Data: []byte(root)},
		"environments/e/b.json":        {Data: []byte(big.String())},
	}
}

// BenchmarkDecodeOneLine resolves a 4 MB manifest written on one line.
// Compare with BenchmarkUnmarshalOneLine over the same bytes (target ≤ 3×).
func BenchmarkDecodeOneLine(b *testing.B) {
	data := oneLine(4 << 20)
	fsys := fstest.MapFS{"environments/e/manifest.json": {Data: data}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(b.Context(), Repo{FS: fsys, Root: "."}, "e"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalOneLine json.Unmarshals BenchmarkDecodeOneLine's bytes
// into map[string]any: the yardstick.
func BenchmarkUnmarshalOneLine(b *testing.B) {
	data := oneLine(4 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAmplification resolves the include amplification (a 4 MB
// file of 215,000 services included 9,999 times, and one of 50,000 services
// that passes the per-file limit) and reports the peak live heap seen while
// it runs (peak-heap-MB) besides the time: both must stay small because the
// resolution stops at the first budget crossed.
func BenchmarkAmplification(b *testing.B) {
	for _, services := range []int{215000, 50000} {
		b.Run(fmt.Sprintf("services=%d", services), func(b *testing.B) {
			fsys := amplification(services, 9999)
			b.ReportAllocs()
			peak := heapPeak(b)
			for b.Loop() {
				if _, err := Resolve(b.Context(), Repo{FS: fsys, Root: "."}, "e"); err == nil {
					b.Fatal("the amplification resolved")
				}
			}
			b.ReportMetric(peak(), "peak-heap-MB")
		})
	}
}

// heapPeak samples the live heap every millisecond until the returned
// function is called, which returns the peak in MB.
func heapPeak(tb testing.TB) func() float64 {
	tb.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak {
				peak = v
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() float64 {
		close(done)
		wg.Wait()
		if peak < base {
			return 0
		}
		return float64(peak-base) / 1e6
	}
}
