// Command demo runs Stagehand end to end on this machine: a local Kubernetes
// control plane, a git server holding examples/environments, the reconciler,
// and a guided walk through deploying, bumping and approving. `make demo`
// runs it; Ctrl-C tears everything down. With --auto (or
// STAGEHAND_DEMO_AUTO=1) it walks through every step without waiting for
// you, approves prod itself and exits: that is how its test runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	o := options{out: os.Stdout, in: os.Stdin}
	flag.BoolVar(&o.auto, "auto", os.Getenv("STAGEHAND_DEMO_AUTO") != "", "run every step without waiting, approve prod, then exit")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address of the reconciler's API (a free port is used when it is taken)")
	flag.StringVar(&o.envFile, "env-file", "", "where to write the server, token and kubeconfig for another terminal (default bin/demo.env in the repository)")
	flag.Parse()
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

type options struct {
	auto    bool
	listen  string
	envFile string
	out     io.Writer
	in      io.Reader
}
