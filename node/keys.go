package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/rotation"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// buildKeys builds the registry of key records (package node/rotation) on
// the datastore, takes in the records the operator made in the home
// (homedir.KeyRecords), and makes the DHT's validators and the group
// operations refuse what retired keys sign. It runs before the DHT is
// built, which copies the validator.
func (n *Node) buildKeys(b *built) error {
	var err error
	if n.keys, err = rotation.New(rotation.Deps{Datastore: n.store, Self: n.peerID}, n.log.With("component", "keys")); err != nil {
		return err
	}
	raws, err := homedir.KeyRecords(n.cfg.Home)
	if err != nil {
		return err
	}
	for _, raw := range raws {
		if _, _, err := n.keys.Add(n.ctx, raw); err != nil {
			return err
		}
	}
	if err := n.keys.Retired(n.peerID); err != nil {
		n.log.Error("this node's own key is retired: other nodes refuse what it signs", "peer", n.peerID, "err", err)
	}
	// Other nodes refuse what a retired key signs; the node's own
	// checks do not refuse its own records, or a node whose own key was
	// revoked would stop hearing itself while every peer refuses it
	// anyway (it logs why instead, above and in followKey).
	b.things.Retired = func(p peer.ID) error {
		if p == n.peerID {
			return nil
		}
		return n.keys.Retired(p)
	}
	b.ops.SetRetired(func(p peer.ID, created time.Time) error {
		if p == n.peerID {
			return nil
		}
		return n.keys.RetiredAt(p, created)
	})
	return nil
}

// keyRecord follows a new key record (rotation.Registry.OnRecord): see
// followKey; once the node runs, the group service moves the key's
// memberships in the groups this node administers.
func (n *Node) keyRecord(rec *lmosproto.KeyRecord) {
	successor, ok := n.followKey(rec)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started || n.closed || n.ctx.Err() != nil {
		return // Start follows every record held
	}
	n.wg.Go(func() { n.groups.Rekey(n.ctx, rec.Key, successor) })
}

// followKey makes the directory drop the Things of the key rec retires (a
// rotated node republishes them under its successor) and the trust list
// move the key's entry to its successor. It returns the successor ("" if
// none), and false for a record about this node's own key.
func (n *Node) followKey(rec *lmosproto.KeyRecord) (peer.ID, bool) {
	if rec.Key == n.peerID {
		n.log.Error("this node's own key is retired: other nodes refuse what it signs", "peer", n.peerID, "type", rec.Type)
		return "", false
	}
	if dropped, err := n.dir.DropPublisher(rec.Key); err != nil {
		n.log.Warn("drop the Things of a retired key", "key", rec.Key, "err", err)
	} else if dropped > 0 {
		n.log.Info("Things of a retired key dropped", "key", rec.Key, "things", dropped)
	}
	successor, rotated := n.keys.Successor(rec.Key)
	if !rotated {
		return "", true
	}
	if n.trust.Move(rec.Key, successor) {
		if err := config.WriteTrust(n.cfg.Home, n.trust.Config()); err != nil {
			n.log.Warn("save the trust list", "err", err)
		}
		n.log.Info("trust moved to the successor of a rotated key", "key", rec.Key, "successor", successor)
	}
	return successor, true
}

// startKeys starts the registry on the host and gossipsub and follows
// every record held (those that arrived while the node was down, or
// before a crash let it follow them). Start calls it with n.mu held, once
// the group service runs.
func (n *Node) startKeys() error {
	n.keys.OnRecord(n.keyRecord)
	if err := n.keys.Start(n.host, n.ps); err != nil {
		return err
	}
	for _, rec := range n.keys.Records() {
		if successor, ok := n.followKey(rec); ok {
			n.wg.Go(func() { n.groups.Rekey(n.ctx, rec.Key, successor) })
		}
	}
	return nil
}

// Keys returns the node's registry of key records: Add takes in a
// rotation or revocation record (as `lmosnode key` makes them).
func (n *Node) Keys() *rotation.Registry { return n.keys }
