// Command hostile measures how a replica copes with the hostile inputs of
// issue 15: it builds the input in memory, runs it through the real code and
// prints the time taken and the process's peak resident memory (VmHWM), so
// that figures can be compared before and after a change:
//
//	go run ./hack/hostile amplify 9999   # a 4 MB file of 215k services (one a line) included N times
//	go run ./hack/hostile oneline 4      # a one-line manifest of N MB
//	go run ./hack/hostile webhook 40     # N concurrent 25 MiB POSTs with a bad signature
//
// Run it under /usr/bin/time -v for a second opinion on the peak RSS.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: hostile amplify|oneline|webhook N")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "hostile: N must be a positive number, got %q\n", os.Args[2])
		os.Exit(2)
	}
	ctx := context.Background()
	switch os.Args[1] {
	case "amplify":
		err = amplify(ctx, n)
	case "oneline":
		err = oneLine(ctx, n)
	case "webhook":
		err = flood(ctx, n)
	default:
		err = fmt.Errorf("unknown case %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

// peakRSS returns the process's peak resident set size (VmHWM) in MiB, or
// -1 where /proc is not available.
func peakRSS() float64 { return procKB("VmHWM:") / 1024 }

// rss returns the process's current resident set size in MiB.
func rss() float64 { return procKB("VmRSS:") / 1024 }

func procKB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1024
	}
	var kb float64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, field+" %f kB", &kb); err == nil {
			return kb
		}
	}
	return -1024
}
