package wire

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	ecrapi "github.com/awslabs/amazon-ecr-credential-helper/ecr-login/api"
)

// ecrClients is the ECR helper's client factory without its panics: the
// helper's default factory panics when the AWS configuration (a malformed
// ~/.aws/config, say) cannot be loaded, which would take the reconciler
// down in the middle of a plan. Here such an error makes that registry's
// credentials fail, and the image is resolved anonymously like any other
// registry without credentials.
type ecrClients struct{ ecrapi.DefaultClientFactory }

func (f ecrClients) NewClientFromRegion(region string) ecrapi.Client {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(region))
	if err != nil {
		return ecrFailed{fmt.Errorf("loading the AWS configuration for ECR in %s: %w", region, err)}
	}
	return f.NewClientWithOptions(ecrapi.Options{Config: cfg})
}

func (f ecrClients) NewClientWithDefaults() ecrapi.Client {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return ecrFailed{fmt.Errorf("loading the AWS configuration for ECR: %w", err)}
	}
	return f.NewClientWithOptions(ecrapi.Options{Config: cfg})
}

// ecrFailed is an ECR client whose configuration could not be loaded.
type ecrFailed struct{ err error }

func (c ecrFailed) GetCredentials(string) (*ecrapi.Auth, error)             { return nil, c.err }
func (c ecrFailed) GetCredentialsByRegistryID(string) (*ecrapi.Auth, error) { return nil, c.err }
func (c ecrFailed) ListCredentials() ([]*ecrapi.Auth, error)                { return nil, c.err }
