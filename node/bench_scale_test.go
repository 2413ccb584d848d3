package node_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosdht "github.com/lmosnode/lmosnode/dht"
	"github.com/lmosnode/lmosnode/internal/testnet"
	"github.com/lmosnode/lmosnode/node/datastore"
	"github.com/lmosnode/lmosnode/node/directory"
	"github.com/lmosnode/lmosnode/node/federation"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// BenchmarkAnnouncementIntake measures what every node pays for each
// announcement it accepts (docs/performance.md, "At internet scale, on
// paper"): the check of a record it has not seen before (size, proof, TD
// schema, freshness, publisher — what the announce validator does) and its
// store in a directory on the node's pebble datastore, one goroutine. The
// records are signed beforehand by 64 publishers, one new Thing each; it
// also reports the signed record's size and a presence beat's payload size.
func BenchmarkAnnouncementIntake(b *testing.B) {
	type pub struct {
		id  peer.ID
		key ed25519.PrivateKey
	}
	pubs := make([]pub, 65) // the first is the node itself
	for i := range pubs {
		var err error
		if _, pubs[i].key, err = ed25519.GenerateKey(rand.Reader); err == nil {
			pubs[i].id, err = lmosproto.PeerIDFromEd25519(pubs[i].key.Public().(ed25519.PublicKey))
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	self := pubs[0].id
	pubs = pubs[1:]
	store, err := datastore.Open(datastore.Deps{Self: self}, datastore.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	dir, err := directory.Open(directory.Deps{Datastore: store, Self: self}, directory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer dir.Close()
	in, err := federation.NewIntake(federation.IntakeDeps{Directory: dir, Self: self,
		Validator: lmosdht.ThingValidator{Cache: lmosdht.NewRecordCache(0)}})
	if err != nil {
		b.Fatal(err)
	}
	raws := make([][]byte, b.N)
	now := time.Now()
	for i := range raws {
		p := pubs[i%len(pubs)]
		td := testnet.TD(b, testnet.UniqueID(b), fmt.Sprintf("Scale %d", i), "scale-capability", "scale-other")
		rec, err := lmosproto.SignThing(td, p.key, now)
		if err != nil {
			b.Fatal(err)
		}
		raws[i] = rec.Raw
	}
	b.ResetTimer()
	for i, raw := range raws {
		rec, err := in.Check(pubs[i%len(pubs)].id, raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := in.Store("gossip", rec); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	beat, err := json.Marshal(struct {
		Peer string    `json:"peer"`
		At   time.Time `json:"at"`
	}{self.String(), now})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(raws[0])), "record-bytes")
	b.ReportMetric(float64(len(beat)), "beat-bytes")
}
