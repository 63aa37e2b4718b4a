package gitsource

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrUnverified is returned (wrapped) when WithVerifyKeyring is set and the head
// commit does not carry a valid OpenPGP signature from the keyring. The
// revision is refused; the last good snapshot stays current.
var ErrUnverified = errors.New("commit signature not verified")

// verifyCommit checks the commit's OpenPGP signature against the keyring
// (read on every use, so a rotated keyring takes effect at once).
func (s *Source) verifyCommit(c *object.Commit) error {
	if s.keyring == nil {
		return nil
	}
	if c.PGPSignature == "" {
		return fmt.Errorf("refusing revision %s of %s: %w: the commit is not signed", c.Hash, s.branch, ErrUnverified)
	}
	keyring, err := s.keyring()
	if err != nil {
		return fmt.Errorf("reading verification keyring: %w", err)
	}
	entity, err := c.Verify(string(keyring))
	if err != nil {
		return fmt.Errorf("refusing revision %s of %s: %w: signature does not verify against keyring: %v", c.Hash, s.branch, ErrUnverified, err)
	}
	if entity == nil {
		return fmt.Errorf("refusing revision %s of %s: %w: no signer found in keyring", c.Hash, s.branch, ErrUnverified)
	}
	return nil
}
