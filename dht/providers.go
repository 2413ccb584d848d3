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
	caps := make([]string, len(td.Capabilities))
	for i, c := range td.Capabilities {
		caps[i] = c.ID
	}
	forms := ProviderForms(caps, td.Types, td.Vendor())
	keys := make([]cid.Cid, len(forms))
	for i, f := range forms {
		keys[i] = providerCID(f)
	}
	return keys
}

// ProviderForms returns the string forms whose SHA-256 digests make the
// provider keys of a Thing with these capability ids, types and vendor
// (ProviderKeys): "lmos:capability:" + id, "lmos:type:" + type,
// "lmos:vendor:" + NormalizeVendor(vendor), in that order, without
// duplicates and without empty names.
func ProviderForms(caps, types []string, vendor string) []string {
	var forms []string
	seen := make(map[string]bool)
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, c := range caps {
		if c != "" {
			add(proto.ProvideCapability + c)
		}
	}
	for _, t := range types {
		if t != "" {
			add(proto.ProvideType + t)
		}
	}
	if v := NormalizeVendor(vendor); v != "" {
		add(proto.ProvideVendor + v)
	}
	return forms
}

// ProviderCID is the provider key of a string form (ProviderForms).
func ProviderCID(form string) cid.Cid { return providerCID(form) }

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
