// Package rotate replaces the identity key of a stopped node in its home
// (`lmosnode key rotate`): it signs the rotation record (proto.SignRotation,
// by the old key and the new), re-signs the node's own Things under the new
// key in its directory, and makes the new key the identity. The node
// announces the rotation on its next start (node/rotation); docs/identity.md
// describes it for operators.
package rotate

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/atomicfile"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// NextIdentityFile holds the new key while a rotation is under way; a
// rotation interrupted (a crash) resumes with it.
const NextIdentityFile = "identity.next.key"

// Result is what Home did.
type Result struct {
	// Old and New are the peer IDs before and after.
	Old, New peer.ID
	// Record is the rotation record, kept in the home's keys/.
	Record *lmosproto.KeyRecord
	// Things is how many own Things were re-signed under the new key.
	Things int
}

// Home rotates the identity of the node in home, which must not be
// running. Each step can be repeated: an interrupted rotation is finished
// by running Home again.
func Home(home string, now time.Time) (Result, error) {
	if _, err := homedir.ReadAPIFile(home); err == nil {
		return Result{}, fmt.Errorf("key rotate: a node is running in %s (its api file exists): stop it first", home)
	}
	cfg, err := config.Load(home)
	if err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	oldKey, err := homedir.LoadIdentity(home)
	if err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	newKey, err := nextKey(home)
	if err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	var res Result
	if res.Old, err = peer.IDFromPrivateKey(oldKey); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	if res.New, err = peer.IDFromPrivateKey(newKey); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	oldSign, err := homedir.SigningKey(oldKey)
	if err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	newSign, err := homedir.SigningKey(newKey)
	if err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	if res.Record, err = lmosproto.SignRotation(oldSign, newSign, now); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	if err := homedir.SaveKeyRecord(home, "rotation-"+res.Old.String(), res.Record.Raw); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	if res.Things, err = moveThings(cfg, res.Old, res.New, newSign, now); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	if err := os.Rename(filepath.Join(home, NextIdentityFile), filepath.Join(home, homedir.IdentityFile)); err != nil {
		return Result{}, fmt.Errorf("key rotate: %w", err)
	}
	return res, nil
}

// nextKey returns the key of NextIdentityFile, made first if missing.
func nextKey(home string) (crypto.PrivKey, error) {
	path := filepath.Join(home, NextIdentityFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			return nil, err
		}
		if data, err = crypto.MarshalPrivateKey(key); err != nil {
			return nil, err
		}
		if err := atomicfile.Create(path, data, 0o600); err != nil {
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, err
	}
	return homedir.ParseIdentity(data)
}

// ownThing is an own Thing to carry over.
type ownThing struct {
	td    *lmosproto.TD
	local directory.Local
}

// moveThings re-signs the own live Things of old under the new key, with
// their local metadata and sequence numbers, and drops old's records.
func moveThings(cfg config.Config, old, successor peer.ID, key ed25519.PrivateKey, now time.Time) (int, error) {
	var things []ownThing
	err := withDirectory(cfg, old, func(dir *directory.Directory) error {
		for _, e := range dir.Own() {
			td, err := e.TD()
			if err != nil {
				return fmt.Errorf("thing %q: %w", e.ThingID, err)
			}
			things = append(things, ownThing{td: td, local: e.Local})
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = withDirectory(cfg, successor, func(dir *directory.Directory) error {
		for _, t := range things {
			rec, err := lmosproto.SignThing(t.td, key, now)
			if err != nil {
				return err
			}
			if _, err := dir.Put(rec, &t.local); err != nil {
				return fmt.Errorf("thing %q: %w", t.td.ID, err)
			}
		}
		_, err := dir.DropPublisher(old)
		return err
	})
	return len(things), err
}

// withDirectory opens the home's directory as the node self would and
// runs fn on it.
func withDirectory(cfg config.Config, self peer.ID, fn func(*directory.Directory) error) (err error) {
	store, err := datastore.Open(datastore.Deps{Self: self},
		datastore.Config{Dir: filepath.Join(cfg.Home, homedir.DatastoreDir), CacheMB: cfg.Datastore.CacheMB})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()
	dir, err := directory.Open(directory.Deps{Datastore: store, Self: self}, cfg.Directory())
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dir.Close()) }()
	return fn(dir)
}
