package dht

import (
	"fmt"
	"strings"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/namespace"
	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lmosnode/lmosnode/proto"
)

// ProtocolID is the Kademlia stream protocol of the LMOS DHT.
const ProtocolID protocol.ID = proto.ProtocolPrefix + "/kad/1.0.0"

// DatastorePrefix is the key prefix below which kad-dht keeps its values
// and provider records in the node's datastore.
const DatastorePrefix = "/dht"

// Mode is the role a node plays in the DHT. The zero value is ModeAuto.
type Mode int

const (
	// ModeAuto serves the DHT unless the node learns (from AutoNAT) that
	// others cannot reach it, and is a client then. It is kad-dht's
	// ModeAutoServer, not its ModeAuto: kad-dht's ModeAuto stays a client
	// until AutoNAT reports the node publicly reachable, which on a LAN or a
	// private network with no AutoNAT servers never happens, and a DHT whose
	// nodes are all clients stores nothing.
	ModeAuto Mode = iota
	// ModeServer always answers DHT queries and stores records.
	ModeServer
	// ModeClient only queries; it neither answers queries nor stores records
	// for others. For nodes behind NAT or on battery.
	ModeClient
)

var modeNames = [...]string{ModeAuto: "auto", ModeServer: "server", ModeClient: "client"}

// String returns the mode's name: "auto", "server" or "client".
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ParseMode parses "auto", "server" or "client" (any case, surrounding
// space ignored).
func ParseMode(s string) (Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for m, n := range modeNames {
		if n == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("dht mode %q: want one of auto, server, client", s)
}

// MarshalText implements encoding.TextMarshaler, so a Mode reads and writes
// as its name in configuration files.
func (m Mode) MarshalText() ([]byte, error) {
	if m < 0 || int(m) >= len(modeNames) {
		return nil, fmt.Errorf("dht mode %d is not a valid mode", int(m))
	}
	return []byte(modeNames[m]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseMode.
func (m *Mode) UnmarshalText(text []byte) error {
	parsed, err := ParseMode(string(text))
	if err != nil {
		return err
	}
	*m = parsed
	return nil
}

func (m Mode) kaddht() (kaddht.ModeOpt, error) {
	switch m {
	case ModeAuto:
		return kaddht.ModeAutoServer, nil
	case ModeServer:
		return kaddht.ModeServer, nil
	case ModeClient:
		return kaddht.ModeClient, nil
	}
	return 0, fmt.Errorf("dht mode %d is not a valid mode", int(m))
}

// Params is what Options needs to configure a DHT; the node fills it from
// its configuration.
type Params struct {
	// Mode is the node's role; the zero value is ModeAuto.
	Mode Mode
	// Datastore keeps the records this node stores for the DHT (values and
	// provider records), below DatastorePrefix; it is not closed with the
	// DHT. Nil keeps them in memory (kad-dht's default), for tests.
	Datastore ds.Batching
	// BootstrapPeers are the peers the DHT connects to when its routing
	// table is empty. None by default: there are no built-in (and never
	// public IPFS) bootstrap peers.
	BootstrapPeers []peer.AddrInfo
	// Things validates the "lmos-td" namespace; the zero value uses the
	// defaults and the system clock.
	Things ThingValidator
	// Validators adds the validators of other namespaces, by namespace
	// (e.g. "lmos-group"). "lmos-td" is Things'.
	Validators map[string]record.Validator
	// MaxRecordsPerPublisher, if set, bounds the Thing records this node
	// stores in Datastore for the DHT per publisher: a put of a new record
	// beyond it is refused (ErrRecordQuota), a newer version of a record
	// held is not. 0: no limit.
	MaxRecordsPerPublisher int
}

// Options returns the kad-dht options of an LMOS DHT, for
// kaddht.New(ctx, host, opts...):
//
//   - protocol prefix "/lmos" (protocol ProtocolID, "/lmos/kad/1.0.0"),
//     so the node never speaks to the public IPFS DHT;
//   - the mode (ModeAuto is kad-dht's ModeAutoServer, see ModeAuto);
//   - a validator that knows only the LMOS namespaces: "lmos-td" and
//     p.Validators. It replaces kad-dht's default one, so the node does not
//     store the public key ("pk") and IPNS ("ipns") records of the IPFS
//     world, which an LMOS node has no use for (Ed25519 peer IDs embed
//     their key) and which anyone could fill its disk with;
//   - MaxRecordAge as the longest a peer keeps a record it received;
//   - the datastore, below DatastorePrefix, with at most
//     MaxRecordsPerPublisher Thing records per publisher, if set;
//   - the bootstrap peers, if any. kad-dht has none unless given: its
//     list of public IPFS bootstrap peers is used only by callers that ask
//     for it, and Options never does.
//
// kad-dht applies options in order, so options appended after these
// override them. The validator map is built afresh by each call; call
// Options once per DHT.
func Options(p Params) ([]kaddht.Option, error) {
	mode, err := p.Mode.kaddht()
	if err != nil {
		return nil, err
	}
	validators := record.NamespacedValidator{proto.NamespaceThing: p.Things}
	for ns, v := range p.Validators {
		switch {
		case ns == "" || strings.Contains(ns, "/"):
			return nil, fmt.Errorf("dht validators: namespace %q: must be a non-empty name without '/'", ns)
		case ns == proto.NamespaceThing:
			return nil, fmt.Errorf("dht validators: namespace %q is validated by Params.Things", ns)
		case v == nil:
			return nil, fmt.Errorf("dht validators: namespace %q: nil validator", ns)
		}
		validators[ns] = v
	}
	for i, ai := range p.BootstrapPeers {
		if err := ai.ID.Validate(); err != nil {
			return nil, fmt.Errorf("dht bootstrap peer %d: %w", i, err)
		}
		if len(ai.Addrs) == 0 {
			return nil, fmt.Errorf("dht bootstrap peer %d (%s): no addresses", i, ai.ID)
		}
	}

	opts := []kaddht.Option{
		kaddht.ProtocolPrefix(proto.ProtocolPrefix),
		kaddht.Mode(mode),
		kaddht.Validator(validators),
		kaddht.MaxRecordAge(MaxRecordAge),
	}
	if p.Datastore != nil {
		var store ds.Batching = namespace.Wrap(p.Datastore, ds.NewKey(DatastorePrefix))
		if p.MaxRecordsPerPublisher > 0 {
			if store, err = newQuotaStore(store, p.MaxRecordsPerPublisher); err != nil {
				return nil, err
			}
		}
		opts = append(opts, kaddht.Datastore(store))
	}
	if len(p.BootstrapPeers) > 0 {
		peers := make([]peer.AddrInfo, len(p.BootstrapPeers))
		copy(peers, p.BootstrapPeers)
		opts = append(opts, kaddht.BootstrapPeers(peers...))
	}
	return opts, nil
}
