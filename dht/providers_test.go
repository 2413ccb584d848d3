package dht

import (
	"crypto/sha256"
	"slices"
	"testing"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

	"github.com/lmosnode/lmosnode/proto"
)

// TestProviderCIDGolden pins the provider keys: the expected strings were
// computed outside Go (Python: "b" + base32(0x01 0x55 0x12 0x20 ||
// sha256(form)), lower case, unpadded), so a change of the string forms,
// the normalisation or the CID encoding fails here.
func TestProviderCIDGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		got  cid.Cid
		want string
	}{
		{`CapabilityCID("weather-forecast")`, CapabilityCID("weather-forecast"), "bafkreih4g4fi4pvruk3oxzqsb26aurrvdphzyvceejzmzs22cqd7evgws4"},
		{`CapabilityCID("weather-alerts")`, CapabilityCID("weather-alerts"), "bafkreifo3kpwcegwmp6azopjb56xlbeyirpwpmn7hg3u6amal7lhzfuw4e"},
		{`CapabilityCID("Weather-Forecast")`, CapabilityCID("Weather-Forecast"), "bafkreibfpdmrgcaiipkdyufiovomtmvzz4rtx6vk7cqfcy7qrpyvaw3jwy"},
		{`CapabilityCID("天気予報")`, CapabilityCID("天気予報"), "bafkreietzus2bh6qwkp4qm7kzrigjwmhdh5sex6cansm5s2iyzunvsnid4"},
		{`TypeCID("lmos:Agent")`, TypeCID(proto.TypeAgent), "bafkreif26n4melmwgdqts246i4he7xyquc6ccylggmm5ceeku2to4fhruq"},
		{`TypeCID("lmos:Tool")`, TypeCID(proto.TypeTool), "bafkreicfxwy4wotpbcw4mn7zn53hzgjc3xm7ahasj64yvbdpcgoegobb7m"},
		{`VendorCID("Example Weather GmbH")`, VendorCID("Example Weather GmbH"), "bafkreiehjt35neucpzbzuji3xenscriakmldgrls4t6azof6omzbsdue3i"},
		{`VendorCID("  EXAMPLE\u00a0 weather\tGmbH ")`, VendorCID("  EXAMPLE\u00a0 weather\tGmbH "), "bafkreiehjt35neucpzbzuji3xenscriakmldgrls4t6azof6omzbsdue3i"},
		{`VendorCID("Straße AG")`, VendorCID("Straße AG"), "bafkreihcur7dmmb6q26pqhmh4vyyyjznp3kvkgco477b6qautlo2f33llq"},
		{`VendorCID("STRASSE AG")`, VendorCID("STRASSE AG"), "bafkreihcur7dmmb6q26pqhmh4vyyyjznp3kvkgco477b6qautlo2f33llq"},
	} {
		if c.got.String() != c.want {
			t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestProviderCIDIsSHA256 checks the hand-made multihash against go-multihash.
func TestProviderCIDIsSHA256(t *testing.T) {
	c := CapabilityCID("weather-forecast")
	want, err := mh.Sum([]byte("lmos:capability:weather-forecast"), mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != 1 || c.Type() != cid.Raw || string(c.Hash()) != string(want) {
		t.Fatalf("CapabilityCID = v%d codec %#x hash %x, want v1 raw %x", c.Version(), c.Type(), []byte(c.Hash()), []byte(want))
	}
	d := sha256.Sum256([]byte("lmos:capability:weather-forecast"))
	dec, err := mh.Decode(c.Hash())
	if err != nil || dec.Code != mh.SHA2_256 || string(dec.Digest) != string(d[:]) {
		t.Fatalf("multihash decodes to %+v, %v", dec, err)
	}
}

func TestNormalizeVendor(t *testing.T) {
	for in, want := range map[string]string{
		"Example Weather GmbH":            "example weather gmbh",
		"  Example \t\n Weather  GmbH  ":  "example weather gmbh",
		"Example\u00a0Weather\u2003GmbH":  "example weather gmbh",
		"Straße AG":                       "strasse ag",
		"Cafe\u0301 ÉCOLE":                "café école", // NFC: é is one code point
		"café":                            "café",
		"ΣΊΣΥΦΟΣ":                         "σίσυφοσ", // case folding, not lower-casing: no final sigma
		"":                                "",
		" \t ":                            "",
		"ACME":                            "acme",
		"Deutsche Telekom":                "deutsche telekom",
		"DEUTSCHE\u3000TELEKOM":           "deutsche telekom",
		"ﬁne ﬂowers":                      "fine flowers",
		"\u0130stanbul Yaz\u0131l\u0131m": "i\u0307stanbul yaz\u0131l\u0131m",
	} {
		if got := NormalizeVendor(in); got != want {
			t.Errorf("NormalizeVendor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProviderKeys(t *testing.T) {
	td := testTD(t, "urn:x", 1)
	want := []cid.Cid{
		CapabilityCID("weather-forecast"), CapabilityCID("weather-alerts"),
		TypeCID(proto.TypeAgent),
		VendorCID("Example Weather GmbH"),
	}
	if got := ProviderKeys(td); !slices.Equal(got, want) {
		t.Errorf("ProviderKeys = %v, want %v", got, want)
	}

	// Duplicates and empty names go; the order stays.
	dup := td.Clone()
	dup.Capabilities = append(dup.Capabilities, proto.Capability{ID: "weather-forecast", Version: "2.0.0"}, proto.Capability{ID: ""})
	dup.Types = []string{proto.TypeAgent, proto.TypeTool, proto.TypeAgent, ""}
	dup.Metadata.Vendor.Name = "  "
	want = []cid.Cid{
		CapabilityCID("weather-forecast"), CapabilityCID("weather-alerts"),
		TypeCID(proto.TypeAgent), TypeCID(proto.TypeTool),
	}
	if got := ProviderKeys(dup); !slices.Equal(got, want) {
		t.Errorf("ProviderKeys with duplicates = %v, want %v", got, want)
	}

	if got := ProviderKeys(nil); got != nil {
		t.Errorf("ProviderKeys(nil) = %v", got)
	}
	if got := ProviderKeys(&proto.TD{}); len(got) != 0 {
		t.Errorf("ProviderKeys(empty TD) = %v", got)
	}
}
