package wire

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// ecrEnv points the AWS SDK at a local ECR endpoint with static
// credentials, and away from every other source (instance metadata, shared
// files, the helper's cache).
func ecrEnv(t *testing.T, endpoint string) {
	t.Helper()
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_ENDPOINT_URL_ECR": endpoint, "AWS_EC2_METADATA_DISABLED": "true", "AWS_ECR_DISABLE_CACHE": "true",
		"AWS_CONFIG_FILE": filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "credentials"),
		"AWS_PROFILE": "", "AWS_REGION": "", "AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
	} {
		t.Setenv(k, v)
	}
}

// TestCloudKeychainsECR: an ECR registry's images are pulled with the token
// ECR's GetAuthorizationToken hands out for the AWS credentials at hand,
// through the same keychain the reconciler uses; other registries never
// reach ECR.
func TestCloudKeychainsECR(t *testing.T) {
	var calls atomic.Int32
	ecr := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Amz-Target"); got != "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken" {
			http.Error(w, "unexpected target "+got, http.StatusBadRequest)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(map[string]any{"authorizationData": []map[string]any{{
			"authorizationToken": base64.StdEncoding.EncodeToString([]byte("AWS:ecr-password")),
			"expiresAt":          float64(time.Now().Add(12 * time.Hour).Unix()),
			"proxyEndpoint":      "https://123456789012.dkr.ecr.eu-west-1.amazonaws.com",
		}}})
	}))
	defer ecr.Close()
	ecrEnv(t, ecr.URL)

	kc := authn.NewMultiKeychain(cloudKeychains()...)
	resolve := func(t *testing.T, registry string) authn.AuthConfig {
		t.Helper()
		reg, err := name.NewRegistry(registry)
		if err != nil {
			t.Fatal(err)
		}
		a, err := kc.Resolve(reg)
		if err != nil {
			t.Fatalf("resolving %s: %v", registry, err)
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		return *cfg
	}

	got := resolve(t, "123456789012.dkr.ecr.eu-west-1.amazonaws.com")
	if got.Username != "AWS" || got.Password != "ecr-password" {
		t.Errorf("ECR registry resolved to %q/%q, want AWS/ecr-password", got.Username, got.Password)
	}
	if calls.Load() != 1 {
		t.Errorf("GetAuthorizationToken called %d times, want 1", calls.Load())
	}
	if got := resolve(t, "registry.example.com"); got != (authn.AuthConfig{}) {
		t.Errorf("a registry of no cloud resolved to %+v, want anonymous", got)
	}
	if calls.Load() != 1 {
		t.Errorf("a registry of no cloud reached ECR (%d calls)", calls.Load())
	}
}

// TestCloudKeychainsECRBadConfig: a malformed AWS configuration file makes
// ECR's credentials fail, and the image is pulled anonymously; it does not
// panic (the helper's own client factory would).
func TestCloudKeychainsECRBadConfig(t *testing.T) {
	ecrEnv(t, "http://127.0.0.1:1")
	if err := os.WriteFile(os.Getenv("AWS_CONFIG_FILE"), []byte("[profile x\nthis is not ini"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_PROFILE", "missing")
	reg, _ := name.NewRegistry("123456789012.dkr.ecr.eu-west-1.amazonaws.com")
	a, err := authn.NewMultiKeychain(cloudKeychains()...).Resolve(reg)
	if err != nil {
		t.Fatal(err)
	}
	if a != authn.Anonymous {
		t.Errorf("resolved to %v, want anonymous", a)
	}
}
