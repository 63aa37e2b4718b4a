package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Env is a running control plane.
type Env struct {
	// Config gives admin access (group system:masters) to the API server.
	Config *rest.Config
	// Clientset is a client built from Config.
	Clientset kubernetes.Interface
	// Kubeconfig is the path of a kubeconfig file with the same access, for CLIs.
	Kubeconfig string
	// Dir holds the logs, certificates and data of this control plane.
	Dir string

	opts options
	dir  string
	// processes are the control plane's running binaries.
	processes
	token   string
	pki     *pki
	apiURL  string
	apiArgs []string // kube-apiserver's flags, for RestartAPIServer

	// The Argo Rollouts controller started by ArgoRollouts.
	argoOnce sync.Once
	argoSkip string
	argoErr  error
}

type options struct {
	rollouts bool
	argo     bool // the Argo Rollouts controller too (WithArgoRollouts)
	crds     []string
	keep     bool
	audit    bool
	reason   string // why the binaries are needed, said when they must be built
	flagger  bool   // Flagger too (WithFlagger)
}

// Option configures Start.
type Option func(*options) error

// WithRollouts also starts kube-controller-manager (deployment, replicaset, job,
// statefulset, daemonset and namespace controllers), kube-scheduler and kwok
// with one fake, Ready node, so that workloads really roll out.
func WithRollouts() Option {
	return func(o *options) error {
		o.rollouts = true
		return nil
	}
}

// WithCRDs applies the CustomResourceDefinitions in the given YAML files or
// directories at start and waits until they are established.
func WithCRDs(paths ...string) Option {
	return func(o *options) error {
		if len(paths) == 0 {
			return errors.New("WithCRDs: no file or directory given")
		}
		for _, p := range paths {
			if p == "" {
				return errors.New("WithCRDs: empty path")
			}
		}
		o.crds = append(o.crds, paths...)
		return nil
	}
}

// WithAuditLog makes kube-apiserver write an audit log (Env.AuditLog) of
// every create, update and patch of a workload (Deployments, StatefulSets,
// DaemonSets, Argo Rollouts' Rollouts and their status), and every write to a ConfigMap or an Environment resource, so
// that a test can count the writes a process made.
func WithAuditLog() Option {
	return func(o *options) error {
		o.audit = true
		return nil
	}
}

// withReason says why the control plane is started, so that a build of its
// binaries names the test that needs them.
func withReason(reason string) Option {
	return func(o *options) error {
		o.reason = reason
		return nil
	}
}

// makeOptions applies the defaults, then opts, then checks the combination.
func makeOptions(opts ...Option) (options, error) {
	o := options{
		keep:   os.Getenv("STAGEHAND_TESTENV_KEEP") != "",
		reason: "a control plane was started",
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, fmt.Errorf("configuring testenv: %w", err)
		}
	}
	for _, p := range o.crds {
		if _, err := os.Stat(p); err != nil {
			return options{}, fmt.Errorf("configuring testenv: CRDs: %w", err)
		}
	}
	return o, nil
}

// Start runs etcd and kube-apiserver (and more, with WithRollouts) and returns
// once the API server is ready. The caller must call Stop.
//
// A port is free when it is picked and taken only when a process binds it, so
// another process can take it in between; a start that lost a port that way
// is tried again from scratch, up to startAttempts times.
func Start(ctx context.Context, opts ...Option) (*Env, error) {
	var err error
	for range startAttempts {
		var e *Env
		if e, err = start(ctx, opts...); err == nil {
			return e, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
	return nil, err
}

const startAttempts = 3

func start(ctx context.Context, opts ...Option) (_ *Env, err error) {
	e := &Env{}
	if e.opts, err = makeOptions(opts...); err != nil {
		return nil, err
	}
	if e.binDir, err = binaries(ctx, e.opts.reason); err != nil {
		return nil, err
	}
	removeAbandoned(os.TempDir())
	if e.dir, err = os.MkdirTemp("", dirPrefix); err != nil {
		return nil, fmt.Errorf("creating testenv dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, fmt.Errorf("writing testenv owner: %w", err)
	}
	e.Dir, e.logDir = e.dir, e.dir
	e.spawner = newSpawner()
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, e.logTails())
			e.Stop()
		}
	}()
	if e.pki, err = newPKI(e.dir); err != nil {
		return nil, err
	}
	e.token = randomHex(16)
	if err := e.startEtcdAndAPIServer(ctx); err != nil {
		return nil, err
	}
	if e.opts.rollouts {
		if err := e.startRollouts(ctx); err != nil {
			return nil, err
		}
	}
	if e.opts.argo {
		if err := e.startArgoRollouts(ctx); err != nil {
			return nil, err
		}
	}
	if len(e.opts.crds) > 0 {
		if err := e.installCRDs(ctx, e.opts.crds); err != nil {
			return nil, err
		}
	}
	if e.opts.flagger {
		if err := e.startFlagger(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *Env) startEtcdAndAPIServer(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcd, err := e.run("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(e.dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, etcd, health{url: etcdURL + "/health"}); err != nil {
		return fmt.Errorf("waiting for etcd: %w", err)
	}
	tokenFile := filepath.Join(e.dir, "tokens.csv")
	line := fmt.Sprintf("%s,admin,admin,system:masters\n", e.token)
	if err := os.WriteFile(tokenFile, []byte(line), 0o600); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	e.apiURL = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		"--tls-cert-file=" + e.pki.certFile,
		"--tls-private-key-file=" + e.pki.keyFile,
		"--client-ca-file=" + e.pki.caFile,
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + e.pki.saPubFile,
		"--service-account-signing-key-file=" + e.pki.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--v=1",
	}
	if e.opts.audit {
		policy := filepath.Join(e.dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return fmt.Errorf("writing audit policy: %w", err)
		}
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+e.AuditLog(), "--audit-log-mode=blocking")
	}
	e.apiArgs = args
	api, err := e.run("kube-apiserver", args...)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, api, e.apiHealth()); err != nil {
		return fmt.Errorf("waiting for kube-apiserver: %w", err)
	}
	e.Config = &rest.Config{
		Host:            e.apiURL,
		BearerToken:     e.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: e.pki.caPEM},
		QPS:             1000,
		Burst:           2000,
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Config); err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(e.kubeconfig(), e.Kubeconfig); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

func (e *Env) kubeconfig() clientcmdapi.Config {
	c := clientcmdapi.NewConfig()
	c.Clusters["testenv"] = &clientcmdapi.Cluster{Server: e.apiURL, CertificateAuthorityData: e.pki.caPEM}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: e.token}
	c.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	c.CurrentContext = "testenv"
	return *c
}

// Stop stops every process, the API server before etcd, and removes the
// environment's directory (kept when STAGEHAND_TESTENV_KEEP is set).
func (e *Env) Stop() {
	if e == nil {
		return
	}
	e.stopAll()
	if e.dir != "" && !e.opts.keep {
		_ = os.RemoveAll(e.dir)
	}
}

// binaries finds the control-plane binaries: $KUBEBUILDER_ASSETS, else
// <repo>/bin/k8s, building them with hack/testbin/build.sh when missing. A
// build takes minutes, so it is announced on stderr with the reason.
func binaries(ctx context.Context, reason string) (string, error) {
	if dir, ok := installed(); ok {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "k8s")
	fmt.Fprintf(os.Stderr, "testenv: building the test control plane into %s because %s (KUBEBUILDER_ASSETS does not hold it; `make testbin` builds it ahead)\n", dir, reason)
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "testbin", "build.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building test binaries with hack/testbin/build.sh: %w", err)
	}
	return dir, nil
}

// installed finds the control-plane binaries without building them:
// $KUBEBUILDER_ASSETS, else <repo>/bin/k8s.
func installed() (string, bool) {
	need := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	have := func(dir string) bool {
		for _, n := range need {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" && have(d) {
		return d, true
	}
	root, err := RepoRoot()
	if err != nil {
		return "", false
	}
	dir := filepath.Join(root, "bin", "k8s")
	return dir, have(dir)
}

// RepoRoot walks up from the working directory to the directory holding the
// Stagehand module's go.mod: tests and the demo find bin/, charts/ and
// examples/ from there.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding repository root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/stagehand-gitops/stagehand\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding repository root: no go.mod of github.com/stagehand-gitops/stagehand above the working directory; set KUBEBUILDER_ASSETS")
		}
		dir = parent
	}
}

// FreeAddr returns a loopback address nothing listens on just now, for a
// server a test starts itself. Like the control plane's own ports it comes
// from below the ephemeral range, so no outgoing connection takes it first.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0])
}

// freePorts returns n ports that could be bound just now. They come from
// below Linux's default ephemeral range (32768-60999): a port the kernel hands
// out for ":0" or as an outgoing connection's source port is one any other
// test process may be given in the moment before our process binds it.
func freePorts(n int) ([]int, error) {
	const lo, hi = 20000, 32768
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 1000 {
			return nil, fmt.Errorf("finding a free port in %d-%d: none of 1000 tried was free", lo, hi-1)
		}
		port := lo + mathrand.IntN(hi-lo)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// health is where a process answers 200 once it is ready: url, over TLS
// signed by caPEM (nil: plain HTTP), with a bearer token ("": none).
type health struct {
	url   string
	caPEM []byte
	token string
}

// apiHealth is where the API server answers once it is ready.
func (e *Env) apiHealth() health {
	return health{url: e.apiURL + "/readyz", caPEM: e.pki.caPEM, token: e.token}
}

// waitHTTP polls h until it answers 200, the process exits, or 90 s pass.
func waitHTTP(ctx context.Context, p *process, h health) error {
	url, caPEM, token := h.url, h.caPEM, h.token
	tr := &http.Transport{}
	if caPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.running() {
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s: %w", p.name, url, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

const (
	dirPrefix = "stagehand-testenv-"
	ownerFile = "owner.pid"
)

// removeAbandoned deletes the directories of control planes whose owning
// process is gone: a test binary killed by a signal or a timeout cannot run
// Stop, and its children already died with it (Pdeathsig), but each left an
// etcd data directory of about 100 MiB behind.
func removeAbandoned(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours to judge: no owner recorded
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // owner alive, or unknown
		}
		_ = os.RemoveAll(d)
	}
}
