package gitsource

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrUnverified is returned (wrapped) when WithVerifyKeyring or
// WithAllowedSigners is set and the head commit does not carry a valid
// OpenPGP signature from the keyring or SSH signature from an allowed signer. The
// revision is refused; the last good snapshot stays current.
var ErrUnverified = errors.New("commit signature not verified")

// verifier checks the signature of each commit a Source accepts.
type verifier struct {
	branch         string
	keyring        ReadFunc // OpenPGP public keys; nil: none
	allowedSigners ReadFunc // an OpenSSH allowed-signers file; nil: none
}

// verify checks the commit's signature: an SSH signature (git's
// gpg.format=ssh) against the allowed signers, an OpenPGP one against the
// keyring; both are read on every use, so a rotation takes effect at once.
func (v *verifier) verify(c *object.Commit) error {
	if v.keyring == nil && v.allowedSigners == nil {
		return nil
	}
	if c.PGPSignature == "" {
		return fmt.Errorf("refusing revision %s of %s: %w: the commit is not signed", c.Hash, v.branch, ErrUnverified)
	}
	if strings.HasPrefix(strings.TrimSpace(c.PGPSignature), sshSignaturePrefix) {
		if v.allowedSigners == nil {
			return fmt.Errorf("refusing revision %s of %s: %w: SSH signature, but %v", c.Hash, v.branch, ErrUnverified, errNoSSHSigners)
		}
		allowed, err := v.allowedSigners()
		if err != nil {
			return fmt.Errorf("reading allowed signers: %w", err)
		}
		if err := verifySSH(c, allowed); err != nil {
			return fmt.Errorf("refusing revision %s of %s: %w: %v", c.Hash, v.branch, ErrUnverified, err)
		}
		return nil
	}
	if v.keyring == nil {
		return fmt.Errorf("refusing revision %s of %s: %w: OpenPGP signature, but no verification keyring configured", c.Hash, v.branch, ErrUnverified)
	}
	keyring, err := v.keyring()
	if err != nil {
		return fmt.Errorf("reading verification keyring: %w", err)
	}
	entity, err := c.Verify(string(keyring))
	if err != nil {
		return fmt.Errorf("refusing revision %s of %s: %w: signature does not verify against keyring: %v", c.Hash, v.branch, ErrUnverified, err)
	}
	if entity == nil {
		return fmt.Errorf("refusing revision %s of %s: %w: no signer found in keyring", c.Hash, v.branch, ErrUnverified)
	}
	return nil
}
