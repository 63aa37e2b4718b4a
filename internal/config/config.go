package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/stagehand-gitops/stagehand/internal/policy"
	"github.com/stagehand-gitops/stagehand/pkg/lock"
)

// Config is the whole of reconciler.yaml.
type Config struct {
	Source       Source                 `json:"source"`
	Environments map[string]Environment `json:"environments"`
	Registry     Registry               `json:"registry"`
	Workloads    Workloads              `json:"workloads"`
	GitHub       GitHub                 `json:"github"`
	Server       Server                 `json:"server"`
	Locks        Locks                  `json:"locks"`
	Manifest     Manifest               `json:"manifest"`
	State        State                  `json:"state"`
	// LeaderElection says how the replicas share the work.
	LeaderElection LeaderElection `json:"leaderElection"`
	// Notifications are where plans and deploys are announced.
	Notifications []Notification `json:"notifications,omitempty"`
	// Verification configures the http and prometheus tasks of sequences.
	Verification Verification `json:"verification"`
	// DORA configures the DORA figures.
	DORA DORA `json:"dora"`
	// Tracing is where the reconciler sends its traces (off by default).
	Tracing Tracing `json:"tracing"`
}

// Source says where the manifests repository is and how to reach it.
type Source struct {
	URL      string   `json:"url"`
	Branch   string   `json:"branch"`
	Root     string   `json:"root"`
	Interval Duration `json:"interval"`
	Schedule string   `json:"schedule"`
	CacheDir string   `json:"cacheDir"`
	// CAFile is a PEM bundle of certificate authorities trusted, beside
	// the system's, for an https source (a git server with a private CA),
	// and by the reconciler's GitHub API client (GitHub Enterprise Server).
	CAFile string  `json:"caFile"`
	Auth   Auth    `json:"auth"`
	Verify *Verify `json:"verify,omitempty"`
	// AllowRewrite lets a revision that does not descend from the last
	// applied one be applied without approval where skipConfirmation is set.
	AllowRewrite bool `json:"allowRewrite,omitempty"`
}

// Auth holds references to credential files for the git source.
type Auth struct {
	Username       string     `json:"username"`
	TokenFile      string     `json:"tokenFile"`
	SSHKeyFile     string     `json:"sshKeyFile"`
	KnownHostsFile string     `json:"knownHostsFile"`
	GitHubApp      *GitHubApp `json:"githubApp,omitempty"`
}

// GitHubApp identifies a GitHub App installation and its private key file.
type GitHubApp struct {
	AppID          int64  `json:"appID"`
	InstallationID int64  `json:"installationID"`
	PrivateKeyFile string `json:"privateKeyFile"`
}

// Verify asks for verification of commit signatures: OpenPGP against a
// keyring, SSH (git's gpg.format=ssh) against an allowed-signers file.
type Verify struct {
	Mode               string `json:"mode"` // "head"
	KeyringFile        string `json:"keyringFile"`
	AllowedSignersFile string `json:"allowedSignersFile"`
}

// Environment is one environment's deployment targets and lock path.
type Environment struct {
	LockPath string   `json:"lockPath"`
	Targets  []Target `json:"targets"`
	// Approvals is who, and how many, must approve the environment's plans.
	Approvals Approvals `json:"approvals,omitempty"`
	// Windows are when the environment's plans may be applied (deploy
	// windows and freezes, internal/policy): outside them an approved or
	// auto-approved plan waits, deferred.
	Windows policy.Windows `json:"windows,omitempty"`
	// OnFailedRollout is what an apply whose rollout failed leaves behind:
	// OnFailedRolloutStay (the default, "") or OnFailedRolloutRollback.
	OnFailedRollout string `json:"onFailedRollout,omitempty"`
	// Rollouts, when set, makes Argo Rollouts' Rollouts workloads of the
	// environment's targets, and says what an apply does with one paused at
	// a step for a promotion.
	Rollouts *Rollouts `json:"rollouts,omitempty"`
}

// Rollouts is environments.<env>.rollouts: Argo Rollouts' Rollouts.
type Rollouts struct {
	// Promote is RolloutsPromoteWait (the default, "") or RolloutsPromoteAuto.
	Promote string `json:"promote,omitempty"`
}

// Values of environments.<env>.rollouts.promote.
const (
	// RolloutsPromoteWait waits, within the rollout timeout, for someone to
	// promote a Rollout paused at a step.
	RolloutsPromoteWait = "wait"
	// RolloutsPromoteAuto promotes it as `kubectl argo rollouts promote`
	// does, recording who approved the plan.
	RolloutsPromoteAuto = "auto"
)

// PromotesRollouts reports whether the environment's applies promote a
// Rollout paused at a step.
func (e Environment) PromotesRollouts() bool {
	return e.Rollouts != nil && e.Rollouts.Promote == RolloutsPromoteAuto
}

// Values of environments.<env>.onFailedRollout.
const (
	// OnFailedRolloutStay leaves the workloads of a failed rollout as they are.
	OnFailedRolloutStay = "stay"
	// OnFailedRolloutRollback puts them back on the images they ran before
	// and does not apply that revision again.
	OnFailedRolloutRollback = "rollback"
)

// RollsBack reports whether a failed rollout of the environment is rolled back.
func (e Environment) RollsBack() bool { return e.OnFailedRollout == OnFailedRolloutRollback }

// Target is one cluster and namespace an environment deploys to.
type Target struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
	Namespace  string `json:"namespace"`
	// KubeconfigSecret names a Secret in state.namespace of the state
	// cluster holding a kubeconfig; ClusterSecret one in Argo CD's cluster
	// Secret format. Either is watched: a rotated Secret is used by the next
	// request, without a restart.
	KubeconfigSecret *SecretKey `json:"kubeconfigSecret,omitempty"`
	ClusterSecret    string     `json:"clusterSecret"`
	// Timeout bounds each request to the target's API server (watches
	// excepted); default 30s.
	Timeout Duration `json:"timeout"`
}

// SecretKey is one key of a Secret.
type SecretKey struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Registry configures digest verification and pinning.
type Registry struct {
	VerifyDigests *bool    `json:"verifyDigests,omitempty"`
	PinDigests    *bool    `json:"pinDigests,omitempty"`
	Insecure      []string `json:"insecure"`
	// WorkloadCredentials resolves a workload's images with the
	// imagePullSecrets of its pod spec and ServiceAccount, read from its
	// target cluster (default true).
	WorkloadCredentials *bool `json:"workloadCredentials,omitempty"`
	// DockerConfigFile is a docker config.json (a mounted
	// kubernetes.io/dockerconfigjson Secret) tried after them.
	DockerConfigFile string `json:"dockerConfigFile"`
	// RateLimit is the most requests a second sent to one registry host
	// (default 20; 0: no limit).
	RateLimit *float64 `json:"rateLimit,omitempty"`
	// DigestCacheTTL is how long a resolved digest is reused (default 5m;
	// 0s: not at all).
	DigestCacheTTL *Duration `json:"digestCacheTTL,omitempty"`
}

// Workloads configures how services map to workloads.
type Workloads struct {
	SelectorLabel  string   `json:"selectorLabel"`
	RolloutTimeout Duration `json:"rolloutTimeout"`
	Concurrency    int      `json:"concurrency"`
}

// GitHub configures the GitHub App used for check runs and webhooks.
type GitHub struct {
	APIURL            string     `json:"apiURL"`
	Owner             string     `json:"owner"`
	Repo              string     `json:"repo"`
	App               *GitHubApp `json:"app,omitempty"`
	WebhookSecretFile string     `json:"webhookSecretFile"`
	// WebhookMaxBodyBytes caps a webhook delivery's body; 0 keeps the
	// receiver's default (5 MiB).
	WebhookMaxBodyBytes int64     `json:"webhookMaxBodyBytes,omitempty"`
	Approvers           Approvers `json:"approvers"`
	DetailsURL          string    `json:"detailsURL"`
	// Deployments shows every apply as a GitHub deployment.
	Deployments GitHubDeployments `json:"deployments"`
	// Previews tunes the PR previews computed after their webhook was answered.
	Previews GitHubPreviews `json:"previews"`
}

// GitHubPreviews tunes PR previews: how many are computed at once and how long one may take (0 keeps the
// defaults, 1 worker and 2 minutes).
type GitHubPreviews struct {
	Workers int      `json:"workers"`
	Timeout Duration `json:"timeout"`
}

// GitHubDeployments configures the GitHub deployment recorded for every apply (it needs the App's
// Deployments read & write permission, so it is off unless enabled). The URLs are templates in which
// {env} and {revision} are replaced by the environment's name and the applied commit.
type GitHubDeployments struct {
	Enabled        bool   `json:"enabled"`
	EnvironmentURL string `json:"environmentURL"`
	LogURL         string `json:"logURL"`
}

// Approvers says who may approve a plan through GitHub.
type Approvers struct {
	MinPermission string   `json:"minPermission"`
	Teams         []string `json:"teams"`
}

// Server configures the HTTP server.
type Server struct {
	Listen string `json:"listen"`
	// APITokenFile is the deprecated single API token: read and lock only.
	APITokenFile string `json:"apiTokenFile"`
	// UI is the web page served at / (see ui.go).
	UI UI `json:"ui"`
	// TokensFile is a mounted Secret of named tokens with scopes (internal/auth).
	TokensFile string `json:"tokensFile"`
	// KubernetesAuth accepts Kubernetes bearer tokens (TokenReview and
	// SubjectAccessReview on the state cluster).
	KubernetesAuth bool `json:"kubernetesAuth"`
	// KubernetesAudience is the audience a Kubernetes token must be minted for (TokenReview's
	// audiences; default DefaultKubernetesAudience): a token for the API server alone is refused.
	KubernetesAudience string `json:"kubernetesAudience"`
	// KubernetesActsFor names the person a Kubernetes user acts for (user name → github:<login>), e.g.
	// system:serviceaccount:ci:alice-bot → github:alice: that user is then the person for every approval
	// rule. A Kubernetes user not named here is automation.
	KubernetesActsFor map[string]string `json:"kubernetesActsFor"`
	// ShutdownGrace bounds a stop: after SIGTERM the process finishes or
	// hands over its work, releases its Lease and exits within it (default
	// DefaultShutdownGrace); keep it under the Pod's
	// terminationGracePeriodSeconds.
	ShutdownGrace Duration `json:"shutdownGrace"`
	// HTTP is the server's limits (timeouts, header size), the keys of
	// prbot.yaml's http.
	HTTP HTTP `json:"http"`
}

// DefaultShutdownGrace is server.shutdownGrace's default: under the chart's
// terminationGracePeriodSeconds (60) with room for the kubelet's own steps.
const DefaultShutdownGrace = 30 * time.Second

// DefaultKubernetesAudience is server.kubernetesAudience's default.
const DefaultKubernetesAudience = "stagehand"

// Locks configures deploy-lock storage, and who may lock for how long.
type Locks struct {
	Storage   string `json:"storage"` // kubernetes | memory
	Namespace string `json:"namespace"`
	// Rule says who may take a lock over the API (internal/auth's LockRule):
	// approvers (default), scope or readers.
	Rule string `json:"rule"`
	// MaxDuration is the longest lock of each type a caller may take.
	MaxDuration LockDurations `json:"maxDuration"`
}

// LockDurations are the longest locks by type, written as lock durations
// ("6h", "7d") or "none" for no maximum; "" keeps pkg/lock's default.
type LockDurations struct {
	Automation string `json:"automation"`
	Deploy     string `json:"deploy"`
	Incident   string `json:"incident"`
	Freeze     string `json:"freeze"`
	Hold       string `json:"hold"`
}

// NoMaxDuration is the value of a locks.maxDuration key for no maximum.
const NoMaxDuration = "none"

// Durations returns the maxima set, by lock type: lock.NoMaximum for
// "none"; the types left empty are not in the map.
func (d LockDurations) Durations() (map[lock.Type]time.Duration, error) {
	out := map[lock.Type]time.Duration{}
	for _, e := range []struct {
		t lock.Type
		v string
	}{{lock.Automation, d.Automation}, {lock.Deploy, d.Deploy}, {lock.Incident, d.Incident}, {lock.Freeze, d.Freeze}, {lock.Hold, d.Hold}} {
		switch v := strings.TrimSpace(e.v); v {
		case "":
		case NoMaxDuration:
			out[e.t] = lock.NoMaximum
		default:
			dur, err := lock.ParseDuration(v)
			if err != nil {
				return nil, fmt.Errorf("locks.maxDuration.%s: %w, or none for no maximum", e.t, err)
			}
			out[e.t] = dur
		}
	}
	return out, nil
}

// Manifest configures manifest parsing.
type Manifest struct {
	AllowUnknownKeys bool `json:"allowUnknownKeys"`
}

// State configures where pending approvals and history are kept.
type State struct {
	Namespace  string `json:"namespace"`
	Kubeconfig string `json:"kubeconfig"`
	Context    string `json:"context"`
}

// LeaderElection says how replicas share the environments.
type LeaderElection struct {
	// PerEnvironment gives each environment its own Lease, so that the
	// replicas split the environments instead of one leader working them all.
	PerEnvironment bool `json:"perEnvironment"`
}

// Duration is a time.Duration written as "90s", "5m" or "1h" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		d.Duration = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a value such as 30s, 5m or 1h", s)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Load reads, defaults and validates the configuration file at path.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.resolvePaths(filepath.Dir(path))
	return c, nil
}

// Parse decodes configuration bytes strictly (unknown keys are errors),
// applies defaults and validates the result.
func Parse(b []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("parsing config: %w", err)
	}
	c.Default()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Default fills in every unset field that has a default.
func (c *Config) Default() {
	if c.Source.Branch == "" {
		c.Source.Branch = "main"
	}
	if c.Source.Root == "" {
		c.Source.Root = "."
	}
	if c.Source.Interval.Duration == 0 && c.Source.Schedule == "" {
		c.Source.Interval.Duration = time.Minute
	}
	t := true
	if c.Registry.VerifyDigests == nil {
		c.Registry.VerifyDigests = &t
	}
	if c.Registry.PinDigests == nil {
		c.Registry.PinDigests = &t
	}
	if c.Registry.WorkloadCredentials == nil {
		c.Registry.WorkloadCredentials = &t
	}
	if c.Registry.RateLimit == nil {
		rl := float64(20)
		c.Registry.RateLimit = &rl
	}
	if c.Registry.DigestCacheTTL == nil {
		c.Registry.DigestCacheTTL = &Duration{5 * time.Minute}
	}
	if c.Workloads.SelectorLabel == "" {
		c.Workloads.SelectorLabel = "app.kubernetes.io/name"
	}
	if c.Workloads.RolloutTimeout.Duration == 0 {
		c.Workloads.RolloutTimeout.Duration = 5 * time.Minute
	}
	if c.Workloads.Concurrency == 0 {
		c.Workloads.Concurrency = 16
	}
	if c.GitHub.Approvers.MinPermission == "" {
		c.GitHub.Approvers.MinPermission = "maintain"
	}
	for n, e := range c.Environments {
		for i := range e.Targets {
			e.Targets[i].defaultCluster()
		}
		c.Environments[n] = e
	}
	if c.Server.Listen == "" {
		c.Server.Listen = ":8080"
	}
	if c.Server.KubernetesAudience == "" {
		c.Server.KubernetesAudience = DefaultKubernetesAudience
	}
	c.Server.HTTP.Default()
	if c.Server.ShutdownGrace.Duration == 0 {
		c.Server.ShutdownGrace.Duration = DefaultShutdownGrace
	}
	if c.Locks.Storage == "" {
		c.Locks.Storage = "kubernetes"
	}
	if c.Locks.Namespace == "" {
		c.Locks.Namespace = "stagehand"
	}
	if c.State.Namespace == "" {
		c.State.Namespace = c.Locks.Namespace
	}
}

// dnsLabel is a Kubernetes namespace name.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	c.Source.validate(bad)
	names := make([]string, 0, len(c.Environments))
	for n := range c.Environments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := c.Environments[n]
		if len(e.Targets) == 0 {
			bad("environments."+n+".targets", "at least one target is required")
		}
		seen := map[string]bool{}
		for i, t := range e.Targets {
			f := fmt.Sprintf("environments.%s.targets[%d]", n, i)
			if t.Name == "" {
				bad(f+".name", "required")
			} else if seen[t.Name] {
				bad(f+".name", "duplicate target %q", t.Name)
			}
			seen[t.Name] = true
			if t.Namespace == "" {
				bad(f+".namespace", "required")
			}
			t.validateCluster(f, bad)
		}
		e.Approvals.validate("environments."+n+".approvals", bad)
		if _, err := policy.NewCalendar(e.Windows); err != nil {
			bad("environments."+n+".windows", "%v", err)
		}
		c.validateBreakGlass("environments."+n+".windows.breakGlass", e.Windows.BreakGlass, bad)
		switch e.OnFailedRollout {
		case "", OnFailedRolloutStay, OnFailedRolloutRollback:
		default:
			bad("environments."+n+".onFailedRollout", "unknown value %q; accepted: stay, rollback", e.OnFailedRollout)
		}
		if e.Rollouts != nil {
			switch e.Rollouts.Promote {
			case "", RolloutsPromoteWait, RolloutsPromoteAuto:
			default:
				bad("environments."+n+".rollouts.promote", "unknown value %q; accepted: wait, auto", e.Rollouts.Promote)
			}
		}
	}
	switch c.Locks.Storage {
	case "kubernetes", "memory":
	default:
		bad("locks.storage", "unknown storage %q; accepted: kubernetes, memory", c.Locks.Storage)
	}
	switch c.Locks.Rule {
	case "", "approvers", "scope", "readers":
	default:
		bad("locks.rule", "unknown rule %q; accepted: approvers, scope, readers", c.Locks.Rule)
	}
	if _, err := c.Locks.MaxDuration.Durations(); err != nil {
		errs = append(errs, err)
	}
	if !dnsLabel.MatchString(c.Locks.Namespace) || len(c.Locks.Namespace) > 63 {
		bad("locks.namespace", "invalid namespace %q: want a DNS label (a-z, 0-9, \"-\", at most 63 characters)", c.Locks.Namespace)
	}
	switch c.GitHub.Approvers.MinPermission {
	case "read", "triage", "write", "maintain", "admin":
	default:
		bad("github.approvers.minPermission", "unknown permission %q; accepted: read, triage, write, maintain, admin", c.GitHub.Approvers.MinPermission)
	}
	c.GitHub.validate(bad)
	if c.Workloads.Concurrency < 0 {
		bad("workloads.concurrency", "must be positive, got %d", c.Workloads.Concurrency)
	}
	if msgs := validation.IsQualifiedName(c.Workloads.SelectorLabel); len(msgs) > 0 {
		bad("workloads.selectorLabel", "invalid label key %q: %s", c.Workloads.SelectorLabel, strings.Join(msgs, "; "))
	}
	c.validateServer(bad)
	c.Registry.validate(bad)
	c.validateNotifications(bad)
	c.Verification.validate(bad)
	c.DORA.validate(bad)
	c.Tracing.Validate("tracing", bad)
	return errors.Join(errs...)
}

// EnvironmentNames returns the configured environments in sorted order.
func (c *Config) EnvironmentNames() []string {
	names := make([]string, 0, len(c.Environments))
	for n := range c.Environments {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// resolvePaths makes relative file references relative to the config file's directory.
func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) && !strings.Contains(*p, "://") {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&c.Source.CAFile)
	abs(&c.Source.Auth.TokenFile)
	abs(&c.Source.Auth.SSHKeyFile)
	abs(&c.Source.Auth.KnownHostsFile)
	if c.Source.Auth.GitHubApp != nil {
		abs(&c.Source.Auth.GitHubApp.PrivateKeyFile)
	}
	if c.Source.Verify != nil {
		abs(&c.Source.Verify.KeyringFile)
		abs(&c.Source.Verify.AllowedSignersFile)
	}
	if c.GitHub.App != nil {
		abs(&c.GitHub.App.PrivateKeyFile)
	}
	abs(&c.GitHub.WebhookSecretFile)
	abs(&c.Server.APITokenFile)
	abs(&c.Server.UI.SessionKeyFile)
	abs(&c.Server.UI.OAuth.ClientIDFile)
	abs(&c.Server.UI.OAuth.ClientSecretFile)
	abs(&c.Server.TokensFile)
	abs(&c.Registry.DockerConfigFile)
	abs(&c.State.Kubeconfig)
	for i := range c.Notifications {
		abs(&c.Notifications[i].URLFile)
		abs(&c.Notifications[i].SecretFile)
	}
	for n, e := range c.Environments {
		for i := range e.Targets {
			abs(&e.Targets[i].Kubeconfig)
		}
		c.Environments[n] = e
	}
}

// ReadSecret reads a secret file and trims surrounding white space.
func ReadSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading secret file: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	return s, nil
}
