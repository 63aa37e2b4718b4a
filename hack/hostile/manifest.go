package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing/fstest"
	"time"

	"github.com/stagehand-gitops/stagehand/pkg/manifest"
)

// amplify resolves a root manifest that includes one 4 MB file of 215,000
// services n times (the case: 9,999 includes, a 110 KB root).
func amplify(ctx context.Context, n int) error {
	var big strings.Builder
	big.WriteString(`{"services":[`)
	for i := range 215000 {
		if i > 0 {
			big.WriteString(",\n")
		}
		fmt.Fprintf(&big, "{\"name\":\"s%05x\"}", i)
	}
	big.WriteString(`]}`)
	root := `{"includes":[` + strings.TrimSuffix(strings.Repeat(`"./b.json",`, n), ",") + `]}`
	fsys := fstest.MapFS{
		"environments/e/manifest.json": {Data: []byte(root)},
		"environments/e/b.json":        {Data: []byte(big.String())},
	}
	fmt.Printf("amplify: root %d bytes including a %d-byte file of 215000 services %d times\n", len(root), big.Len(), n)
	return measure(ctx, fsys)
}

// oneLine resolves one manifest of about mb megabytes written on one line.
func oneLine(ctx context.Context, mb int) error {
	var b strings.Builder
	b.WriteString(`{"services":[`)
	for i := 0; b.Len() < mb<<20-128; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"service-%06d","containers":[{"dockerTag":"1.2.%d"}]}`, i, i%100)
	}
	b.WriteString(`]}`)
	fsys := fstest.MapFS{"environments/e/manifest.json": {Data: []byte(b.String())}}
	fmt.Printf("oneline: %d bytes on one line\n", b.Len())
	return measure(ctx, fsys)
}

func measure(ctx context.Context, fsys fstest.MapFS) error {
	runtime.GC()
	before := rss()
	start := time.Now()
	env, err := manifest.Resolve(ctx, manifest.Repo{FS: fsys, Root: "."}, "e")
	took := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	switch {
	case err != nil:
		msg := err.Error()
		if len(msg) > 400 {
			msg = msg[:400] + "…"
		}
		fmt.Printf("error: %s\n", msg)
	default:
		fmt.Printf("resolved %d services\n", len(env.Services))
	}
	fmt.Printf("time %v, RSS before %.0f MiB, peak RSS %.0f MiB, total allocated %.0f MiB\n",
		took.Round(time.Millisecond), before, peakRSS(), float64(ms.TotalAlloc)/(1<<20))
	return nil
}
