package proto

import (
	"maps"
	"slices"
)

// KnownTypes lists every message type Known accepts, so that the tests of
// the message rules can check that they cover each one.
var KnownTypes = slices.Sorted(maps.Keys(msgTypes))

// DecodeJSONDirect and DecodeJSONTree are the JSON codec's two decoders,
// which must agree wherever the direct one succeeds.
var (
	DecodeJSONDirect = decodeJSONDirect
	DecodeJSONTree   = decodeJSONTree
)

// ParseJSONNumber is the canonical form of a JSON number literal.
func ParseJSONNumber(lit string) (string, error) {
	n, err := parseJSONNumber(lit)
	return n.lit, err
}

// FormatJSONFloat is the canonical form of a float.
var FormatJSONFloat = formatJSONFloat
