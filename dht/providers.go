package dht

import (
	"crypto/sha256"
	"strings"
	"unicode"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/lmosnode/lmosnode/proto"
)

// CapabilityCID is the provider key of a capability id ("lmos:id"), used
// exactly as written: the CIDv1 (codec raw) of the SHA-256 multihash of
// "lmos:capability:" + id.
func CapabilityCID(id string) cid.Cid { return providerCID(proto.ProvideCapability + id) }

// TypeCID is the provider key of a TD type as written in "@type" (e.g.
// "lmos:Agent"): the CIDv1 (codec raw) of the SHA-256 multihash of
// "lmos:type:" + type.
func TypeCID(typ string) cid.Cid { return providerCID(proto.ProvideType + typ) }

// VendorCID is the provider key of a vendor name: the CIDv1 (codec raw) of
// the SHA-256 multihash of "lmos:vendor:" + NormalizeVendor(name), so that
// names differing in case and spacing share a key.
func VendorCID(name string) cid.Cid {
	return providerCID(proto.ProvideVendor + NormalizeVendor(name))
}

// foldCase is Unicode full case folding; a cases.Caser is stateful and
// not safe for concurrent use, hence a fresh one per call (they are cheap).
func foldCase(s string) string { return cases.Fold().String(s) }

// NormalizeVendor returns the form of a vendor name that VendorCID hashes
// and that vendor filters compare: white space trimmed and inner runs of it
// made one space, Unicode full case folding, then NFC.
func NormalizeVendor(name string) string {
	return norm.NFC.String(foldCase(strings.Join(strings.FieldsFunc(name, unicode.IsSpace), " ")))
}

// ProviderKeys returns the provider keys a TD is announced under: one per
// capability id, one per @type, one for the vendor, in that order, without
// duplicates and without empty names. A nil TD has none.
func ProviderKeys(td *proto.TD) []cid.Cid {
	if td == nil {
		return nil
	}
	var keys []cid.Cid
	seen := make(map[cid.Cid]bool)
	add := func(c cid.Cid) {
		if !seen[c] {
			seen[c] = true
			keys = append(keys, c)
		}
	}
	for _, c := range td.Capabilities {
		if c.ID != "" {
			add(CapabilityCID(c.ID))
		}
	}
	for _, t := range td.Types {
		if t != "" {
			add(TypeCID(t))
		}
	}
	if v := NormalizeVendor(td.Vendor()); v != "" {
		add(providerCID(proto.ProvideVendor + v))
	}
	return keys
}

// providerCID is CIDv1, codec raw, of the sha2-256 multihash of s.
func providerCID(s string) cid.Cid {
	digest := sha256.Sum256([]byte(s))
	// A multihash is <varint code><varint length><digest>; sha2-256 is
	// code 0x12, length 32, both one-byte varints.
	buf := make([]byte, 0, 2+len(digest))
	buf = append(buf, mh.SHA2_256, sha256.Size)
	buf = append(buf, digest[:]...)
	return cid.NewCidV1(cid.Raw, mh.Multihash(buf))
}
