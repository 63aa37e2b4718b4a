package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stagehand-gitops/stagehand/internal/cli/command"
	"github.com/stagehand-gitops/stagehand/internal/envresource"
	"github.com/stagehand-gitops/stagehand/internal/waiter"
)

// environmentClient is the client of the Environments in --namespace (else
// the namespace of the kubeconfig's current context) of the cluster of
// --kubeconfig, and that namespace.
func (f *waitFlags) environmentClient() (environments, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: f.kubeconfig}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	rc, err := cc.ClientConfig()
	if err != nil {
		return environments{}, command.Usagef("--kubeconfig %q: %v", f.kubeconfig, err)
	}
	ns := f.namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return environments{}, command.Usagef("--kubeconfig %q: %v", f.kubeconfig, err)
		}
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return environments{}, fmt.Errorf("building Environment client from kubeconfig %q: %w", f.kubeconfig, err)
	}
	return environments{client: dyn.Resource(envresource.GVR).Namespace(ns), namespace: ns}, nil
}

// environments is the client of the Environment objects in namespace.
type environments struct {
	client    dynamic.ResourceInterface
	namespace string
}

// watchObject waits by watching env's Environment object in ns: it lists
// the object (a field selector on its name), judges it, then watches it from
// the list's resourceVersion, judging each change; a watch that ends (its
// timeout, --watch-timeout, or an error) is followed by a new list. A list or
// watch refused (credentials, RBAC, the CRD not served) ends the wait with
// exit 1; other errors (the API server unreachable) are waited out, --interval
// apart. ctx bounds the wait (--timeout).
func (f *waitFlags) watchObject(ctx context.Context, cmd *cobra.Command, j *waiter.Judge, envs environments) error {
	c, ns := envs.client, envs.namespace
	p := &progress{cmd: cmd, env: f.env}
	byName := fields.OneTermEqualSelector("metadata.name", f.env).String()
	secs := int64(f.watchTimeout / time.Second)
	for {
		pause := f.interval
		list, err := c.List(ctx, metav1.ListOptions{FieldSelector: byName})
		if err == nil {
			var done bool
			if done, err = p.judgeList(j, list, ns); done {
				return err
			}
		}
		if err == nil {
			started := time.Now()
			var w watch.Interface
			if w, err = c.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: list.GetResourceVersion(), TimeoutSeconds: &secs}); err == nil {
				var done bool
				done, err = p.follow(ctx, j, w)
				w.Stop()
				if done {
					return err
				}
				if err == nil {
					// A watch that ended by its timeout is renewed at once, one
					// that ended early (a proxy cutting it) after --interval.
					pause = f.interval - time.Since(started)
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) || apierrors.IsNotFound(err) {
				fmt.Fprintf(cmd.ErrOrStderr(), "Error: watching Environment %s in namespace %s refused (%d): %v\n", f.env, ns, statusCode(err), err)
				return command.Exit(1, nil)
			}
			p.say("watching the Environment: " + err.Error())
		}
		if ctx.Err() == nil && pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
		if ctx.Err() != nil {
			if cmd.Context().Err() != nil {
				return cmd.Context().Err()
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: timed out after %s: %s\n", f.timeout, p.last)
			return command.Exit(2, nil)
		}
	}
}

// statusCode is the HTTP status of the API server's refusal err.
func statusCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}

// progress prints a wait's progress lines, each once.
type progress struct {
	cmd  *cobra.Command
	env  string
	last string
}

func (p *progress) say(msg string) {
	if msg != p.last {
		fmt.Fprintf(p.cmd.OutOrStdout(), "%s %s: %s\n", time.Now().UTC().Format(time.TimeOnly), p.env, msg)
		p.last = msg
	}
}

// judgeList judges the object a list found (none: not written yet), as
// judge does.
func (p *progress) judgeList(j *waiter.Judge, list *unstructured.UnstructuredList, ns string) (bool, error) {
	for i := range list.Items {
		if list.Items[i].GetName() == p.env {
			return p.judge(j, &list.Items[i])
		}
	}
	p.say(fmt.Sprintf("no Environment %s in namespace %s (yet)", p.env, ns))
	return false, nil
}

// follow judges the objects of w's events until the wait ends (true, and
// the command's result) or w does (false, and nil at its timeout, else the
// Error event's error or ctx's).
func (p *progress) follow(ctx context.Context, j *waiter.Judge, w watch.Interface) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetName() == p.env {
					if done, err := p.judge(j, u); done || err != nil {
						return done, err
					}
				}
			case watch.Deleted:
				p.say("Environment " + p.env + " deleted")
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			}
		}
	}
}

// judge judges obj's status, printing the verdict, and ends the wait (true,
// and the command's result) when the verdict does. A status that does not
// decode is an error to wait out.
func (p *progress) judge(j *waiter.Judge, obj *unstructured.Unstructured) (bool, error) {
	var st envresource.Status
	if m, ok, _ := unstructured.NestedMap(obj.Object, "status"); ok {
		raw, err := json.Marshal(m)
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		if err != nil {
			return false, fmt.Errorf("decoding status of Environment %s: %w", p.env, err)
		}
	}
	verdict, err := j.Object(&st)
	if err != nil {
		return true, command.Usagef("%v", err)
	}
	p.say(verdict.Message)
	if !verdict.Done {
		return false, nil
	}
	if verdict.Code() != 0 {
		fmt.Fprintf(p.cmd.ErrOrStderr(), "Error: %s: %s\n", verdict.Outcome, verdict.Message)
	}
	return true, command.Exit(verdict.Code(), nil)
}

// runObject is `reconciler wait --kubeconfig`: its flags checked, the wait
// by the Environment object (watchObject).
func (f *waitFlags) runObject(cmd *cobra.Command, j *waiter.Judge) error {
	switch {
	case f.kubeconfig == "":
		return command.Usagef("--namespace needs --kubeconfig")
	case f.server != "" || f.tokenFile != "":
		return command.Usagef("--kubeconfig watches the Environment object, --server and --token-file call the API: give one or the other")
	case f.service != "":
		return command.Usagef("--service cannot be used with --kubeconfig: the Environment object carries no service versions (use --revision, or --server)")
	case f.watchTimeout < time.Second:
		return command.Usagef("--watch-timeout %s: want at least 1s", f.watchTimeout)
	}
	envs, err := f.environmentClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	defer cancel()
	return f.watchObject(ctx, cmd, j, envs)
}
