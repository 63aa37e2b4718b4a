package main

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
)

// loadKey reads o.key, or makes a new P-256 key and writes it to
// <dist>/signing.key; either way the public key goes to <dist>/signing.pub,
// the file `cosign verify --key` takes.
func loadKey(o options) (signature.SignerVerifier, error) {
	var priv *ecdsa.PrivateKey
	if o.key != "" {
		b, err := os.ReadFile(o.key)
		if err != nil {
			return nil, fmt.Errorf("reading --key: %w", err)
		}
		k, err := cryptoutils.UnmarshalPEMToPrivateKey(b, cryptoutils.SkipPassword)
		if err != nil {
			return nil, fmt.Errorf("reading --key %s: %w", o.key, err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok || ec.Curve != elliptic.P256() {
			return nil, fmt.Errorf("reading --key %s: %T is not an ECDSA P-256 key", o.key, k)
		}
		priv = ec
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("making a signing key: %w", err)
		}
		b, err := cryptoutils.MarshalPrivateKeyToPEM(k)
		if err != nil {
			return nil, fmt.Errorf("encoding the signing key: %w", err)
		}
		if err := os.WriteFile(filepath.Join(o.dist, "signing.key"), b, 0o600); err != nil {
			return nil, fmt.Errorf("writing the signing key: %w", err)
		}
		priv = k
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding the public key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(o.dist, "signing.pub"), pub, 0o644); err != nil {
		return nil, fmt.Errorf("writing the public key: %w", err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("loading the signing key: %w", err)
	}
	return sv, nil
}

// loadPublicKey reads a PEM public key (signing.pub) as a verifier.
func loadPublicKey(path string) (signature.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading public key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("reading public key %s: %w", path, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("loading public key %s: %w", path, err)
	}
	return v, nil
}

// signBlob is the base64 signature of b, as `cosign sign-blob` writes it and
// `cosign verify-blob --signature` reads it.
func signBlob(s signature.Signer, b []byte) ([]byte, error) {
	sig, err := s.SignMessage(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(sig)), nil
}

// verifyBlob checks sig (base64, as signBlob writes it) over b.
func verifyBlob(v signature.Verifier, b, sig []byte) error {
	raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sig)))
	if err != nil {
		return fmt.Errorf("decoding signature: %w", err)
	}
	return v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(b))
}

// attest is st signed as a DSSE envelope (what `cosign attest` stores and
// `cosign verify-attestation` checks).
func attest(s signature.Signer, st *statement) ([]byte, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding statement: %w", err)
	}
	env, err := dsse.WrapSigner(s, payloadType).SignMessage(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("signing statement: %w", err)
	}
	return env, nil
}

// openEnvelope checks env's signature and returns its statement.
func openEnvelope(v signature.Verifier, env []byte) (*statement, error) {
	if err := dsse.WrapVerifier(v).VerifySignature(bytes.NewReader(env), nil); err != nil {
		return nil, fmt.Errorf("verifying DSSE envelope: %w", err)
	}
	var e struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal(env, &e); err != nil {
		return nil, fmt.Errorf("decoding DSSE envelope: %w", err)
	}
	if e.PayloadType != payloadType {
		return nil, fmt.Errorf("DSSE envelope of type %q, want %q", e.PayloadType, payloadType)
	}
	p, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("decoding DSSE payload: %w", err)
	}
	var st statement
	if err := json.Unmarshal(p, &st); err != nil {
		return nil, fmt.Errorf("decoding in-toto statement: %w", err)
	}
	if st.Type != statementType {
		return nil, fmt.Errorf("statement of type %q, want %q", st.Type, statementType)
	}
	return &st, nil
}

// signFiles writes SHA256SUMS.sig and the signed provenance
// (provenance.intoto.jsonl, one DSSE envelope, as `cosign verify-blob-attestation`
// and slsa-verifier read it) into dist.
func signFiles(s signature.Signer, dist string, prov *statement) error {
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		return fmt.Errorf("reading SHA256SUMS: %w", err)
	}
	sig, err := signBlob(s, sums)
	if err != nil {
		return fmt.Errorf("SHA256SUMS: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS.sig"), sig, 0o644); err != nil {
		return fmt.Errorf("writing SHA256SUMS.sig: %w", err)
	}
	env, err := attest(s, prov)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dist, "provenance.intoto.jsonl"), append(env, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing provenance.intoto.jsonl: %w", err)
	}
	return nil
}
