package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/stagehand-gitops/stagehand/internal/approval"
	"github.com/stagehand-gitops/stagehand/internal/cli"
	"github.com/stagehand-gitops/stagehand/internal/cli/command"
)

// readEnter sends on x.enter each time a line is read from in (Enter on the demo's terminal), until in
// ends. One reader for the whole walk: each decision waits on the same channel.
func (x *demo) readEnter(in io.Reader) {
	r := bufio.NewReader(in)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return // no terminal (EOF): only a decision taken elsewhere, or Ctrl-C, goes on
		}
		select {
		case x.enter <- struct{}{}:
		default: // pressed twice: one is enough
		}
	}
}

// waitPending waits for env's pending plan, or with release its pending release.
func (x *demo) waitPending(ctx context.Context, env string, release bool) (*approval.Pending, error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		v, err := x.d.Environment(ctx, env)
		if err == nil && v.Pending != nil && v.Pending.Release == release {
			return v.Pending, nil
		}
		select {
		case <-ctx.Done():
			what := "plan"
			if release {
				what = "release"
			}
			return nil, fmt.Errorf("waiting for %s's pending %s: %w", env, what, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// decide takes the decision pending in env (hash; with release, its release approval) as a person
// would: it prints the command, and with --auto runs it at once; otherwise it runs it when Enter is
// pressed, unless the decision was taken elsewhere first (the command in another terminal, Approve on
// the page), which it notices. It returns once the decision is taken, not its outcome.
func (x *demo) decide(ctx context.Context, env, hash string, release bool) error {
	x.p.say("In another terminal, from %s:", x.root)
	x.p.say("  source %s", x.rel(x.envFile))
	x.p.say("  %s approve --env %s --wait        (shows the pending %s and asks)", x.reconBin, env, map[bool]string{false: "plan", true: "release"}[release])
	x.p.say("or with the hash: %s approve --env %s --plan-hash %s --wait", x.reconBin, env, hash)
	if !x.o.auto {
		x.p.say("or click Approve on %s/environments/%s, or press Enter and the demo runs it for you.", x.server, env)
		select {
		case <-x.enter: // an Enter pressed before this step does not count
		default:
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-x.enter:
				return x.approve(ctx, env, hash)
			case <-time.After(200 * time.Millisecond):
			}
			v, err := x.d.Environment(ctx, env)
			if err == nil && (v.Pending == nil || v.Pending.PlanHash != hash || v.Pending.Release != release) {
				x.p.ok("decided elsewhere")
				return nil
			}
		}
	}
	return x.approve(ctx, env, hash)
}

// approve runs reconciler approve --wait for env's pending hash, printing what it prints.
func (x *demo) approve(ctx context.Context, env, hash string) error {
	var out, errOut bytes.Buffer
	cmd := cli.NewReconciler(&out, &errOut)
	cmd.SetArgs([]string{"approve", "--server", x.server, "--token-file", x.files.tokenFile, "--env", env,
		"--plan-hash", hash, "--as", "demo", "--wait"})
	err := cmd.ExecuteContext(ctx)
	for _, l := range strings.Split(strings.TrimSpace(out.String()+errOut.String()), "\n") {
		x.p.say("> %s", l)
	}
	if err != nil || command.Code(err) != 0 {
		return fmt.Errorf("reconciler approve --env %s: %v (exit %d)", env, err, command.Code(err))
	}
	return nil
}

// waitDeployed waits until env's newest history entry is hash's and, with released, released; it
// returns who approved (or released) and the result.
func (x *demo) waitDeployed(ctx context.Context, env, hash string, released bool) (who, result string, err error) {
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	for {
		v, err := x.d.Environment(ctx, env)
		if err == nil && v.LastResult != nil && v.LastResult.PlanHash == hash && (!released || v.LastResult.ReleasedBy != "") {
			if released {
				return v.LastResult.ReleasedBy, v.LastResult.Result, nil
			}
			return v.LastResult.Approver, v.LastResult.Result, nil
		}
		select {
		case <-ctx.Done():
			return "", "", fmt.Errorf("waiting for %s's deploy of %s in its history: %w", env, hash, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeEnvFile writes what a second terminal needs to talk to the demo (source it): the API's address,
// the demo's token and the control plane's kubeconfig.
func (x *demo) writeEnvFile(kubeconfig string) error {
	text := fmt.Sprintf("# Written by the demo (make demo) while it runs, removed when it stops: source %s\nexport STAGEHAND_SERVER=%s\nexport STAGEHAND_TOKEN=%s\nexport KUBECONFIG=%s\n",
		x.envFile, x.server, x.files.token, kubeconfig)
	if err := os.WriteFile(x.envFile, []byte(text), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", x.envFile, err)
	}
	return nil
}
