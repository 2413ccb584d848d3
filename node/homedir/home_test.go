package homedir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/config"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

func TestResolveHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(config.HomeEnv, filepath.Join(dir, "env"))
	if got, _ := Resolve(filepath.Join(dir, "flag")); got != filepath.Join(dir, "flag") {
		t.Errorf("flag: %q", got)
	}
	if got, _ := Resolve(""); got != filepath.Join(dir, "env") {
		t.Errorf("env: %q", got)
	}
	t.Setenv(config.HomeEnv, "")
	t.Setenv("HOME", dir)
	if got, _ := Resolve(""); got != filepath.Join(dir, DefaultName) {
		t.Errorf("default: %q", got)
	}
	t.Chdir(dir)
	if got, _ := Resolve("rel"); got != filepath.Join(dir, "rel") {
		t.Errorf("relative flag not made absolute: %q", got)
	}
}

func TestInitCreatesHome(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	created, err := Init(home)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{home, filepath.Join(home, config.File), filepath.Join(home, IdentityFile), filepath.Join(home, DatastoreDir), filepath.Join(home, APITokenFile)}
	if !slices.Equal(created, want) {
		t.Errorf("created %v, want %v", created, want)
	}
	for path, mode := range map[string]os.FileMode{
		home:                              0o700 | os.ModeDir,
		filepath.Join(home, config.File):  0o600,
		filepath.Join(home, IdentityFile): 0o600,
		filepath.Join(home, DatastoreDir): 0o700 | os.ModeDir,
		filepath.Join(home, APITokenFile): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
		}
	}
	key1, err := LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	tok1, err := readAPIToken(home)
	if err != nil || len(tok1) != 64 {
		t.Fatalf("api token %q, %v; want 64 hex characters", tok1, err)
	}

	// A second Init changes nothing.
	created, err = Init(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 0 {
		t.Errorf("second Init created %v", created)
	}
	key2, err := LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	if !key1.Equals(key2) {
		t.Error("second Init replaced the identity key")
	}
	if tok2, err := readAPIToken(home); err != nil || tok2 != tok1 {
		t.Errorf("second Init: api token %q, %v; want the first", tok2, err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 4 {
		t.Errorf("home holds %d entries (temporary files left?): %v", len(entries), entries)
	}
}

func TestIdentityRefusesReadableKey(t *testing.T) {
	home := t.TempDir()
	if _, err := Init(home); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, IdentityFile)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadIdentity(home)
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %#o: err = %v, want a refusal that says how to fix it", mode, err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(home); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
}

func TestIdentityRejectsGarbage(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, IdentityFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(home); err == nil || !strings.Contains(err.Error(), IdentityFile) {
		t.Errorf("err = %v, want one naming the key file", err)
	}
}

func TestPeerIDAndDIDKeyNameSameKey(t *testing.T) {
	home := t.TempDir()
	if _, err := Init(home); err != nil {
		t.Fatal(err)
	}
	key, err := LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	did, err := DIDKeyOf(key.GetPublic())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := lmosproto.ParseDIDKey(did)
	if err != nil {
		t.Fatal(err)
	}
	fromDID, err := lmosproto.PeerIDFromEd25519(pub)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(key)
	if fromDID != id {
		t.Errorf("did:key names %s, key file names %s", fromDID, id)
	}
}
