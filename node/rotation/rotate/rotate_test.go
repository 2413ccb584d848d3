package rotate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/homedir"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TestHome: the rotation keeps the node's own Thing (with its backend and
// sequence number) under the new key, drops the old key's record, makes
// the new key the identity and keeps a rotation record that verifies.
func TestHome(t *testing.T) {
	home := t.TempDir()
	if _, err := homedir.Init(home); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	oldKey, err := homedir.LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := peer.IDFromPrivateKey(oldKey)
	signing, _ := homedir.SigningKey(oldKey)
	td, err := lmosproto.ParseTD([]byte(`{"@context": ["https://www.w3.org/2019/wot/td/v1", "https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
	  "@type": ["lmos:Agent"], "id": "urn:test:forecaster", "title": "Forecaster", "lmos:seq": 7,
	  "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}}, "security": "nosec_sc"}`))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := lmosproto.SignThing(td, signing, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	local := directory.Local{Backend: "http://127.0.0.1:8081"}
	if err := withDirectory(cfg, old, func(dir *directory.Directory) error {
		_, err := dir.Put(rec, &local)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	res, err := Home(home, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	newKey, err := homedir.LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := peer.IDFromPrivateKey(newKey); id != res.New || res.Old != old || res.Things != 1 {
		t.Fatalf("result %+v, identity now %s", res, id)
	}
	raw, err := homedir.LoadKeyRecord(home, "rotation-"+old.String())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lmosproto.ParseKeyRecord(raw); err != nil || got.Key != old || got.Successor != res.New {
		t.Fatalf("kept record: %+v, %v", got, err)
	}
	if err := withDirectory(cfg, res.New, func(dir *directory.Directory) error {
		own := dir.Own()
		if len(own) != 1 || own[0].ThingID != td.ID || own[0].Seq != 7 || own[0].Local != local {
			t.Errorf("own Things under the new key: %+v", own)
		}
		if _, ok := dir.Get(old, td.ID); ok {
			t.Error("the old key's record is still held")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, NextIdentityFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s after the rotation: %v", NextIdentityFile, err)
	}
}
