package homedir

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// LoadIdentity reads the node's Ed25519 private key from home/identity.key.
// It refuses a key file that group or others may read: whoever reads the
// key can publish Things in this node's name.
func LoadIdentity(home string) (crypto.PrivKey, error) {
	path := filepath.Join(home, IdentityFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only: a failed close loses nothing
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("identity %s: not a regular file", path)
	}
	// Windows has no POSIX mode bits to check.
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("identity %s: mode %#o lets group or others read the node's private key; refusing to start (fix with: chmod 600 %s)", path, perm, path)
	}
	data, err := readAllLimited(f, 4096)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", path, err)
	}
	key, err := crypto.UnmarshalPrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("identity %s: not a libp2p private key: %w", path, err)
	}
	if key.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("identity %s: key type %s, want Ed25519", path, key.Type())
	}
	return key, nil
}

// LoadOrCreateIdentity loads home/identity.key, creating a new Ed25519 key
// (mode 0600) if the file does not exist.
func LoadOrCreateIdentity(home string) (key crypto.PrivKey, created bool, err error) {
	key, err = LoadIdentity(home)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key, _, err = crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, false, fmt.Errorf("identity: generate key: %w", err)
	}
	data, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, false, fmt.Errorf("identity: marshal key: %w", err)
	}
	path := filepath.Join(home, IdentityFile)
	switch err := atomicfile.Create(path, data, 0o600); {
	case errors.Is(err, fs.ErrExist):
		// Another process created it first; use theirs.
		key, err := LoadIdentity(home)
		return key, false, err
	case err != nil:
		return nil, false, fmt.Errorf("identity %s: %w", path, err)
	}
	return key, true, nil
}

func readAllLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// DIDKeyOf returns the did:key of an Ed25519 libp2p public key; it names the
// same publisher as the key's peer ID.
func DIDKeyOf(pub crypto.PubKey) (string, error) {
	if pub.Type() != crypto.Ed25519 {
		return "", fmt.Errorf("did:key: key type %s, want Ed25519", pub.Type())
	}
	raw, err := pub.Raw()
	if err != nil {
		return "", fmt.Errorf("did:key: %w", err)
	}
	return lmosproto.DIDKey(ed25519.PublicKey(raw)), nil
}

// SigningKey returns the Ed25519 private key of a node identity, the key
// that signs the node's TDs (proto.SignThing, proto.SignDocument).
func SigningKey(priv crypto.PrivKey) (ed25519.PrivateKey, error) {
	if priv.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("signing key: key type %s, want Ed25519", priv.Type())
	}
	raw, err := priv.Raw()
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if len(raw) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("signing key: %d bytes, want %d", len(raw), ed25519.PrivateKeySize)
	}
	return ed25519.PrivateKey(raw), nil
}
