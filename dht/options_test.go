package dht

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	kaddht "github.com/libp2p/go-libp2p-kad-dht"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lmosnode/lmosnode/internal/loopback"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{
		"auto": ModeAuto, "server": ModeServer, "client": ModeClient,
		" Server ": ModeServer, "CLIENT": ModeClient,
	} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "dht", "autoserver", "1"} {
		if got, err := ParseMode(in); err == nil || !strings.Contains(err.Error(), "auto, server, client") {
			t.Errorf("ParseMode(%q) = %v, %v; want an error listing the modes", in, got, err)
		}
	}
	if s := Mode(7).String(); s != "Mode(7)" {
		t.Errorf("Mode(7).String() = %q", s)
	}
}

func TestModeText(t *testing.T) {
	type config struct {
		Mode Mode `json:"mode"`
	}
	for _, m := range []Mode{ModeAuto, ModeServer, ModeClient} {
		raw, err := json.Marshal(config{m})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"mode":"` + m.String() + `"}`; string(raw) != want {
			t.Errorf("%v marshals as %s, want %s", m, raw, want)
		}
		var back config
		if err := json.Unmarshal(raw, &back); err != nil || back.Mode != m {
			t.Errorf("%s unmarshals to %v, %v", raw, back.Mode, err)
		}
	}
	var c config
	if err := json.Unmarshal([]byte(`{"mode":"peer"}`), &c); err == nil || !strings.Contains(err.Error(), `"peer"`) {
		t.Errorf("unmarshal of an unknown mode: %v", err)
	}
	if _, err := json.Marshal(config{Mode(-1)}); err == nil {
		t.Error("marshal of an invalid mode succeeded")
	}
}

func TestOptionsRejects(t *testing.T) {
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	good := peer.AddrInfo{ID: mustPeer(t, fixedPeer), Addrs: []ma.Multiaddr{addr}}
	for name, c := range map[string]struct {
		p    Params
		want string
	}{
		"invalid mode":         {Params{Mode: Mode(9)}, "not a valid mode"},
		"override lmos-td":     {Params{Validators: map[string]record.Validator{"lmos-td": record.PublicKeyValidator{}}}, "Params.Things"},
		"empty namespace":      {Params{Validators: map[string]record.Validator{"": record.PublicKeyValidator{}}}, "non-empty"},
		"namespace with slash": {Params{Validators: map[string]record.Validator{"a/b": record.PublicKeyValidator{}}}, "without '/'"},
		"nil validator":        {Params{Validators: map[string]record.Validator{"lmos-group": nil}}, "nil validator"},
		"bootstrap without ID": {Params{BootstrapPeers: []peer.AddrInfo{good, {Addrs: []ma.Multiaddr{addr}}}}, "bootstrap peer 1"},
		"bootstrap no addrs":   {Params{BootstrapPeers: []peer.AddrInfo{{ID: good.ID}}}, "no addresses"},
	} {
		if _, err := Options(c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Options = %v, want an error mentioning %q", name, err, c.want)
		}
	}
	if opts, err := Options(Params{BootstrapPeers: []peer.AddrInfo{good}}); err != nil || len(opts) == 0 {
		t.Errorf("Options with a bootstrap peer: %v", err)
	}
}

// groupValidator stands in for the validator of another namespace.
type groupValidator struct{}

func (groupValidator) Validate(_ string, value []byte) error {
	if string(value) != "group" {
		return errors.New("not a group")
	}
	return nil
}

func (groupValidator) Select(string, [][]byte) (int, error) { return 0, nil }

// TestOptionsDHT builds lone DHTs from Options and checks what they speak,
// what they store and where, and that they dial nobody.
func TestOptionsDHT(t *testing.T) {
	gater := loopback.NewGater(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	auto := newNode(t, gater, Params{Validators: map[string]record.Validator{"lmos-group": groupValidator{}}})
	client := newNode(t, gater, Params{Mode: ModeClient})

	if got := auto.dht.Mode(); got != kaddht.ModeAutoServer {
		t.Errorf("ModeAuto gives kad-dht mode %v, want ModeAutoServer (%v)", got, kaddht.ModeAutoServer)
	}
	if got := client.dht.Mode(); got != kaddht.ModeClient {
		t.Errorf("ModeClient gives kad-dht mode %v", got)
	}
	protos := auto.host.Mux().Protocols()
	if !slices.Contains(protos, ProtocolID) || ProtocolID != "/lmos/kad/1.0.0" {
		t.Errorf("server protocols %v lack %s", protos, ProtocolID)
	}
	for _, p := range protos {
		if strings.HasPrefix(string(p), "/ipfs/kad/") || (strings.Contains(string(p), "/kad/") && p != ProtocolID) {
			t.Errorf("server speaks %s", p)
		}
	}
	if slices.Contains(client.host.Mux().Protocols(), protocol.ID(ProtocolID)) {
		t.Error("client answers DHT queries")
	}

	// kad-dht's Amino checks guard the public DHT: options that would join
	// it with the LMOS validator are refused.
	opts, err := Options(Params{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := kaddht.New(ctx, newHost(t, gater), append(opts, kaddht.ProtocolPrefix("/ipfs"))...); err == nil {
		d.Close()
		t.Error("kad-dht accepted the LMOS validator under the /ipfs prefix")
	}

	// The validator knows the LMOS namespaces only.
	alice := newPublisher(t)
	rec := alice.sign(t, "urn:x", 1, time.Now())
	key := ThingKey(alice.id, "urn:x")
	for name, c := range map[string]struct {
		key   string
		value []byte
		want  error
	}{
		"pk":              {"/pk/" + string(alice.id), []byte("x"), record.ErrInvalidRecordType},
		"ipns":            {"/ipns/" + string(alice.id), []byte("x"), record.ErrInvalidRecordType},
		"unknown":         {"/other/x", []byte("x"), record.ErrInvalidRecordType},
		"lmos-td forged":  {key, []byte("{}"), ErrBadRecord},
		"lmos-group, bad": {"/lmos-group/g", []byte("x"), nil},
	} {
		err := auto.dht.PutValue(ctx, c.key, c.value)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: PutValue = %v, want %v", name, err, c.want)
		}
	}
	// A lone DHT stores valid records locally (and fails to find peers).
	if err := auto.dht.PutValue(ctx, key, rec.Raw); err == nil {
		t.Log("PutValue on a lone DHT succeeded")
	}
	_ = auto.dht.PutValue(ctx, "/lmos-group/g", []byte("group"))
	stored := auto.stored(t)
	if string(stored[key]) != string(rec.Raw) || string(stored["/lmos-group/g"]) != "group" {
		t.Errorf("datastore below %s holds %d records, want the thing and the group", DatastorePrefix, len(stored))
	}

	// No bootstrap peers: refreshing an empty routing table dials nobody.
	select {
	case err := <-auto.dht.RefreshRoutingTable():
		t.Logf("refresh of an empty routing table: %v", err)
	case <-ctx.Done():
		t.Fatal("refresh did not end")
	}
	if err := auto.dht.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	for _, n := range []*testNode{auto, client} {
		if peers := n.host.Network().Peers(); len(peers) != 0 {
			t.Errorf("lone DHT connected to %v", peers)
		}
	}
}
