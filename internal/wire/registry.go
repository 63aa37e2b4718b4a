package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	ecr "github.com/awslabs/amazon-ecr-credential-helper/ecr-login"
	acr "github.com/chrismellard/docker-credential-acr-env/pkg/credhelper"
	"github.com/google/go-containerregistry/pkg/authn"
	k8sauthn "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/v1/google"
	corev1 "k8s.io/api/core/v1"

	"github.com/stagehand-gitops/stagehand/internal/config"
	"github.com/stagehand-gitops/stagehand/pkg/reconcile"
	"github.com/stagehand-gitops/stagehand/pkg/registry"
)

// registryOptions translates registry: into the reconciler's credentials,
// rate limit and digest cache. The keychain is, in order: the workload's
// imagePullSecrets and its ServiceAccount's in the target cluster (with
// registry.workloadCredentials), registry.dockerConfigFile, the process's
// own docker config ($DOCKER_CONFIG, for plan and apply from a laptop), and
// the cloud helpers (cloudKeychains).
func registryOptions(r config.Registry) ([]reconcile.Option, error) {
	fallback := []authn.Keychain{}
	if r.DockerConfigFile != "" {
		kc := dockerConfigFile(r.DockerConfigFile)
		if _, err := kc.load(); err != nil {
			return nil, fmt.Errorf("registry.dockerConfigFile: %w", err)
		}
		fallback = append(fallback, kc)
	}
	fallback = append(fallback, authn.DefaultKeychain)
	fallback = append(fallback, cloudKeychains()...)
	var opts []reconcile.Option
	if r.WorkloadCredentials == nil || *r.WorkloadCredentials {
		opts = append(opts, reconcile.WithWorkloadKeychains(registry.ClusterKeychains(fallback...)))
	} else {
		opts = append(opts, reconcile.WithKeychain(authn.NewMultiKeychain(fallback...)))
	}
	if r.RateLimit != nil {
		opts = append(opts, reconcile.WithRegistryRateLimit(*r.RateLimit))
	}
	if r.DigestCacheTTL != nil {
		opts = append(opts, reconcile.WithDigestCacheTTL(r.DigestCacheTTL.Duration))
	}
	return opts, nil
}

// cloudKeychains are the credential helpers of the three clouds' registries,
// the ones go-containerregistry's k8schain carries, each consulted only for
// its own registry hosts and answering anonymously when it has no
// credentials: Google's (Artifact Registry and GCR, through workload identity
// or application default credentials), Amazon ECR's (the AWS SDK's default
// credential chain: IRSA, EKS Pod Identity, instance roles, AWS_* variables)
// and Azure ACR's (a service principal or managed identity from the AZURE_*
// variables, exchanged for a registry refresh token). The ECR helper logs
// nothing and cannot panic (ecrClients).
func cloudKeychains() []authn.Keychain {
	return []authn.Keychain{
		google.Keychain,
		authn.NewKeychainFromHelper(ecr.NewECRHelper(ecr.WithLogger(io.Discard), ecr.WithClientFactory(ecrClients{}))),
		authn.NewKeychainFromHelper(acr.NewACRCredentialsHelper()),
	}
}

// dockerConfigFile is a keychain over a docker config.json, read on every
// resolution so that a rotated Secret mounted as the file takes effect
// without a restart. It matches registries as pull secrets do.
type dockerConfigFile string

func (f dockerConfigFile) load() (authn.Keychain, error) {
	b, err := os.ReadFile(string(f))
	if err != nil {
		return nil, fmt.Errorf("reading docker config: %w", err)
	}
	var probe struct {
		Auths map[string]json.RawMessage `json:"auths"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("parsing docker config %s: %w", f, err)
	}
	if len(probe.Auths) == 0 {
		return nil, fmt.Errorf("docker config %s has no \"auths\"", f)
	}
	s := corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: b}}
	kc, err := k8sauthn.NewFromPullSecrets(context.Background(), []corev1.Secret{s})
	if err != nil {
		return nil, fmt.Errorf("parsing docker config %s: %w", f, err)
	}
	return kc, nil
}

// Resolve implements authn.Keychain.
func (f dockerConfigFile) Resolve(r authn.Resource) (authn.Authenticator, error) {
	kc, err := f.load()
	if err != nil {
		return nil, fmt.Errorf("registry.dockerConfigFile: %w", err)
	}
	return kc.Resolve(r)
}
