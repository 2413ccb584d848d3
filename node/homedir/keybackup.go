package homedir

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lmosnode/lmosnode/node/atomicfile"
)

// Backup and restore of a node's identity key ('lmosnode key export|import').
// The export is the Ed25519 key as a PKCS #8 "PRIVATE KEY" PEM block, the
// form openssl and most key stores read (`openssl pkey -in key.pem -noout
// -text`); import also takes an identity.key file as the node writes it.

// pemTypePrivateKey is the PEM block type of a PKCS #8 private key.
const pemTypePrivateKey = "PRIVATE KEY"

// ExportIdentity returns home's identity key as PKCS #8 PEM.
func ExportIdentity(home string) ([]byte, error) {
	key, err := LoadIdentity(home)
	if err != nil {
		return nil, err
	}
	priv, err := SigningKey(key)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("identity: export: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemTypePrivateKey, Bytes: der}), nil
}

// ParseIdentity reads an identity key from a PKCS #8 PEM export or an
// identity.key file; it must be Ed25519.
func ParseIdentity(data []byte) (crypto.PrivKey, error) {
	if block, _ := pem.Decode(bytes.TrimSpace(data)); block != nil {
		if block.Type != pemTypePrivateKey {
			return nil, fmt.Errorf("identity: PEM block %q, want %q (PKCS #8)", block.Type, pemTypePrivateKey)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("identity: a %T, want an Ed25519 key", k)
		}
		key, err := crypto.UnmarshalEd25519PrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
		return key, nil
	}
	key, err := crypto.UnmarshalPrivateKey(data)
	if err != nil {
		return nil, errors.New("identity: neither a PKCS #8 PEM key nor a libp2p identity.key file")
	}
	if key.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("identity: key type %s, want Ed25519", key.Type())
	}
	return key, nil
}

// ImportIdentity writes key as home's identity.key (mode 0600), creating
// home if needed. An existing, different key is replaced only with
// replace: the node's peer ID, did:key and the signatures of its Things
// change with it. A node must not be running in home.
func ImportIdentity(home string, key crypto.PrivKey, replace bool) error {
	if _, err := ReadAPIFile(home); err == nil {
		return fmt.Errorf("identity: a node is running in %s (its api file exists): stop it first", home)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	path := filepath.Join(home, IdentityFile)
	old, err := LoadIdentity(home)
	switch {
	case err == nil && old.Equals(key):
		return nil
	case err == nil && !replace:
		return fmt.Errorf("identity %s: holds another key; replacing it changes the node's peer ID (pass --force to replace it)", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !replace:
		return err
	}
	data, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("identity %s: %w", path, err)
	}
	return nil
}
