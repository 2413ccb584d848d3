package homedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lmosnode/lmosnode/node/config"
)

// Files and directories in a node's home directory.
const (
	// DefaultName is the home directory's name under the user's home
	// directory when neither --home nor LMOS_HOME is given.
	DefaultName = ".lmosnode"
	// IdentityFile holds the node's Ed25519 libp2p private key (mode 0600).
	IdentityFile = "identity.key"
	// DatastoreDir holds the pebble datastore.
	DatastoreDir = "datastore"
	// APIFile holds the URL of the running daemon's HTTP API; it exists
	// only while the daemon runs.
	APIFile = "api"
	// APITokenFile holds the token of the node's API (mode 0600), made by
	// Init; see APIToken and docs/api.md#access.
	APITokenFile = "api-token"
)

// Resolve returns the absolute home directory: flagValue if set, else
// $LMOS_HOME if set, else ~/.lmosnode.
func Resolve(flagValue string) (string, error) {
	home := flagValue
	if home == "" {
		home = os.Getenv(config.HomeEnv)
	}
	if home == "" {
		userHome, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("home: no --home, no $%s and no user home directory: %w", config.HomeEnv, err)
		}
		home = filepath.Join(userHome, DefaultName)
	}
	abs, err := filepath.Abs(home)
	if err != nil {
		return "", fmt.Errorf("home %s: %w", home, err)
	}
	return abs, nil
}

// Init prepares home as a node's home directory: it creates the directory
// (mode 0700), config.json with DefaultConfig, the identity key (mode 0600),
// the datastore directory and the API token (APITokenFile, mode 0600), each only if missing, and returns the paths
// it created. An existing file is never overwritten, so Init is safe to run
// on every start.
func Init(home string) (created []string, err error) {
	if home == "" {
		return nil, errors.New("init: home must be set")
	}
	mkdir := func(dir string) error {
		if _, err := os.Stat(dir); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		created = append(created, dir)
		return nil
	}
	if err := mkdir(home); err != nil {
		return created, fmt.Errorf("init %s: %w", home, err)
	}
	ok, err := config.Exists(home)
	if err != nil {
		return created, fmt.Errorf("init %s: %w", home, err)
	}
	if !ok {
		if err := config.Write(home, config.Default()); err != nil {
			return created, fmt.Errorf("init: %w", err)
		}
		created = append(created, filepath.Join(home, config.File))
	}
	_, made, err := LoadOrCreateIdentity(home)
	if err != nil {
		return created, fmt.Errorf("init: %w", err)
	}
	if made {
		created = append(created, filepath.Join(home, IdentityFile))
	}
	if err := mkdir(filepath.Join(home, DatastoreDir)); err != nil {
		return created, fmt.Errorf("init: datastore: %w", err)
	}
	_, made, err = LoadOrCreateAPIToken(home)
	if err != nil {
		return created, fmt.Errorf("init: %w", err)
	}
	if made {
		created = append(created, filepath.Join(home, APITokenFile))
	}
	return created, nil
}

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
