package dht

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lmosnode/lmosnode/proto"
)

// thingKeyPrefix starts every Thing record key.
const thingKeyPrefix = "/" + proto.NamespaceThing + "/"

// ErrBadKey is wrapped by the errors of ParseThingKey and of a validator
// given a key that is not a canonical Thing key.
var ErrBadKey = errors.New("bad thing key")

// ThingKey returns the DHT value key of the Thing thingID published by
// publisher: "/lmos-td/<publisher peer ID, base58btc>/<url.PathEscape(thingID)>".
// Every thing id has exactly one key, and ParseThingKey gives back publisher
// and thingID for any id (URNs, URLs with slashes, any Unicode).
func ThingKey(publisher peer.ID, thingID string) string {
	return thingKeyPrefix + publisher.String() + "/" + url.PathEscape(thingID)
}

// ParseThingKey splits a Thing record key made by ThingKey into its
// publisher and thing id. It rejects (with an error wrapping ErrBadKey) any
// other key, including keys that name a Thing in a non-canonical form: a
// peer ID in another encoding, escapes that ThingKey would not write, an
// empty thing id.
func ParseThingKey(key string) (peer.ID, string, error) {
	rest, ok := strings.CutPrefix(key, thingKeyPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w %s: does not start with %q", ErrBadKey, shortKey(key), thingKeyPrefix)
	}
	pid, escaped, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", fmt.Errorf("%w %s: no thing id after the publisher", ErrBadKey, shortKey(key))
	}
	publisher, err := peer.Decode(pid)
	if err != nil {
		return "", "", fmt.Errorf("%w %s: publisher %q: %w", ErrBadKey, shortKey(key), pid, err)
	}
	if publisher.String() != pid {
		return "", "", fmt.Errorf("%w %s: publisher %q is not in canonical form %q", ErrBadKey, shortKey(key), pid, publisher.String())
	}
	if escaped == "" {
		return "", "", fmt.Errorf("%w %s: empty thing id", ErrBadKey, shortKey(key))
	}
	thingID, err := url.PathUnescape(escaped)
	if err != nil {
		return "", "", fmt.Errorf("%w %s: thing id: %w", ErrBadKey, shortKey(key), err)
	}
	if canonical := url.PathEscape(thingID); canonical != escaped {
		return "", "", fmt.Errorf("%w %s: thing id is not escaped canonically (want %s)", ErrBadKey, shortKey(key), shorten(canonical))
	}
	return publisher, thingID, nil
}

// maxKeyInError bounds how much of a key (or a part of one) an error
// message quotes: keys come from the network and thing ids can be long.
const maxKeyInError = 160

// shortKey quotes key for an error message, cut to maxKeyInError bytes.
func shortKey(key string) string { return fmt.Sprintf("%q", shorten(key)) }

func shorten(s string) string {
	if len(s) <= maxKeyInError {
		return s
	}
	cut := maxKeyInError
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
