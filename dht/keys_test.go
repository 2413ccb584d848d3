package dht

import (
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// fixedPeer is the peer ID of the Ed25519 key with the all-zero seed, so
// that expected keys can be spelt out.
const fixedPeer = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"

func mustPeer(t testing.TB, s string) peer.ID {
	t.Helper()
	id, err := peer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestThingKeyRoundTrip(t *testing.T) {
	pid := mustPeer(t, fixedPeer)
	for _, c := range []struct{ id, key string }{
		{"urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77", "/lmos-td/" + fixedPeer + "/urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"},
		{"https://x.example/things/a b?q=1#f", "/lmos-td/" + fixedPeer + "/https:%2F%2Fx.example%2Fthings%2Fa%20b%3Fq=1%23f"},
		{"urn:x:天気/ü", "/lmos-td/" + fixedPeer + "/urn:x:%E5%A4%A9%E6%B0%97%2F%C3%BC"},
		{"a%2Fb+c;d,e", "/lmos-td/" + fixedPeer + "/a%252Fb+c%3Bd%2Ce"},
		{"-._~$&+:=@", "/lmos-td/" + fixedPeer + "/-._~$&+:=@"},
		{"/", "/lmos-td/" + fixedPeer + "/%2F"},
		{" ", "/lmos-td/" + fixedPeer + "/%20"},
		{"\x00\xff", "/lmos-td/" + fixedPeer + "/%00%FF"},
	} {
		key := ThingKey(pid, c.id)
		if key != c.key {
			t.Errorf("ThingKey(%q) = %q, want %q", c.id, key, c.key)
		}
		gotPeer, gotID, err := ParseThingKey(key)
		if err != nil || gotPeer != pid || gotID != c.id {
			t.Errorf("ParseThingKey(%q) = %s, %q, %v; want %s, %q", key, gotPeer, gotID, err, pid, c.id)
		}
	}
}

func TestParseThingKeyRejects(t *testing.T) {
	pid := mustPeer(t, fixedPeer)
	cidForm := peer.ToCid(pid).String()
	for name, c := range map[string]struct{ key, want string }{
		"other namespace":     {"/lmos-group/" + fixedPeer + "/x", "does not start with"},
		"no namespace":        {fixedPeer + "/x", "does not start with"},
		"no thing id":         {"/lmos-td/" + fixedPeer, "no thing id"},
		"empty thing id":      {"/lmos-td/" + fixedPeer + "/", "empty thing id"},
		"bad peer id":         {"/lmos-td/notapeer/x", "publisher"},
		"peer id as CID":      {"/lmos-td/" + cidForm + "/x", "canonical form"},
		"unescaped slash":     {"/lmos-td/" + fixedPeer + "/a/b", "not escaped canonically"},
		"needless escape":     {"/lmos-td/" + fixedPeer + "/%41", "not escaped canonically"},
		"lower-case escape":   {"/lmos-td/" + fixedPeer + "/a%2fb", "not escaped canonically"},
		"unescaped space":     {"/lmos-td/" + fixedPeer + "/a b", "not escaped canonically"},
		"invalid escape":      {"/lmos-td/" + fixedPeer + "/%zz", "invalid URL escape"},
		"truncated escape":    {"/lmos-td/" + fixedPeer + "/a%2", "invalid URL escape"},
		"empty":               {"", "does not start with"},
		"long key is cut off": {"/lmos-td/" + fixedPeer + "/" + strings.Repeat("ü", 200), "…"},
	} {
		p, id, err := ParseThingKey(c.key)
		if err == nil {
			t.Errorf("%s: ParseThingKey(%q) = %s, %q, want an error", name, c.key, p, id)
			continue
		}
		if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want ErrBadKey mentioning %q", name, err, c.want)
		}
		if len(err.Error()) > 2*maxKeyInError+200 {
			t.Errorf("%s: error of %d bytes quotes too much of the key", name, len(err.Error()))
		}
	}
}

// FuzzThingKey checks that every thing id round-trips through its key.
func FuzzThingKey(f *testing.F) {
	for _, s := range []string{"urn:uuid:1", "https://a.example/b?c#d", "天気", "%2F", "+ ;,", "\x00\xff"} {
		f.Add(s)
	}
	pid := mustPeer(f, fixedPeer)
	f.Fuzz(func(t *testing.T, id string) {
		key := ThingKey(pid, id)
		gotPeer, gotID, err := ParseThingKey(key)
		if id == "" {
			if err == nil {
				t.Fatalf("ParseThingKey(%q) accepted an empty thing id", key)
			}
			return
		}
		if err != nil || gotPeer != pid || gotID != id {
			t.Fatalf("ParseThingKey(ThingKey(%q)) = %s, %q, %v", id, gotPeer, gotID, err)
		}
	})
}

// FuzzParseThingKey checks that any key ParseThingKey accepts is the one
// ThingKey writes for what it returns: one key per Thing.
func FuzzParseThingKey(f *testing.F) {
	for _, s := range []string{
		"/lmos-td/" + fixedPeer + "/urn:x", "/lmos-td/" + fixedPeer + "/%41", "/lmos-td/x/y", "/lmos-td/" + fixedPeer + "/a%2Fb",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p, id, err := ParseThingKey(key)
		if err != nil {
			return
		}
		if again := ThingKey(p, id); again != key {
			t.Fatalf("ParseThingKey(%q) = %s, %q, whose key is %q", key, p, id, again)
		}
	})
}
