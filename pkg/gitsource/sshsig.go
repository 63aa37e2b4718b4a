package gitsource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// sshSignaturePrefix starts the armored signature git writes with
// gpg.format=ssh (OpenSSH's PROTOCOL.sshsig).
const sshSignaturePrefix = "-----BEGIN SSH SIGNATURE-----"

// gitNamespace is the SSHSIG namespace git signs commits in.
const gitNamespace = "git"

// allowedSigner is one line of an OpenSSH allowed-signers file.
type allowedSigner struct {
	principals string
	key        ssh.PublicKey
	namespaces []string // empty: any
}

// parseAllowedSigners reads an allowed-signers file (ssh-keygen(1), "ALLOWED
// SIGNERS"): one "principals [options] keytype base64-key [comment]" a line,
// # comments and blank lines ignored. Of the options, namespaces= is honoured;
// cert-authority and the validity options are refused rather than ignored.
func parseAllowedSigners(b []byte) ([]allowedSigner, error) {
	var out []allowedSigner
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		principals, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("allowed signers line %d: want \"principals [options] keytype key\", got %q", n, line)
		}
		key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
		if err != nil {
			return nil, fmt.Errorf("allowed signers line %d: parsing key: %w", n, err)
		}
		s := allowedSigner{principals: principals, key: key}
		for _, o := range options {
			name, val, _ := strings.Cut(o, "=")
			switch strings.ToLower(name) {
			case "namespaces":
				s.namespaces = strings.Split(strings.Trim(val, `"`), ",")
			default:
				return nil, fmt.Errorf("allowed signers line %d: option %q is not supported (only namespaces=)", n, name)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading allowed signers: %w", err)
	}
	return out, nil
}

// verifySSH checks an SSH signature (git's gpg.format=ssh) on c against the
// allowed signers: the signing key must be listed for the "git" namespace
// and the signature must verify over the commit without its signature.
func verifySSH(c *object.Commit, allowed []byte) error {
	signers, err := parseAllowedSigners(allowed)
	if err != nil {
		return err
	}
	sig, err := sshsig.Unarmor([]byte(c.PGPSignature))
	if err != nil {
		return fmt.Errorf("reading SSH signature: %w", err)
	}
	var signer *allowedSigner
	for i := range signers {
		s := &signers[i]
		if bytes.Equal(s.key.Marshal(), sig.PublicKey.Marshal()) &&
			(len(s.namespaces) == 0 || containsFold(s.namespaces, gitNamespace)) {
			signer = s
			break
		}
	}
	if signer == nil {
		return fmt.Errorf("signing key %s is not in the allowed signers for namespace %q", ssh.FingerprintSHA256(sig.PublicKey), gitNamespace)
	}
	encoded := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(encoded); err != nil {
		return fmt.Errorf("encoding commit: %w", err)
	}
	r, err := encoded.Reader()
	if err != nil {
		return fmt.Errorf("encoding commit: %w", err)
	}
	if err := sshsig.Verify(r, sig, signer.key, sig.HashAlgorithm, gitNamespace); err != nil {
		return fmt.Errorf("SSH signature by %s does not verify: %w", signer.principals, err)
	}
	return nil
}

func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(strings.TrimSpace(x), s) {
			return true
		}
	}
	return false
}

// errNoSSHSigners is why an SSH-signed commit is refused when only an
// OpenPGP keyring is configured (and the other way round).
var errNoSSHSigners = errors.New("no allowed signers configured for SSH signatures")
