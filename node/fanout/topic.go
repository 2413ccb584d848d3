package fanout

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// TopicName returns the gossipsub topic of the events of the Thing thingID
// published by publisher (see the package documentation).
func TopicName(publisher peer.ID, thingID string) string {
	return lmosproto.TopicEventsPrefix + publisher.String() + "/" + escapeThingID(thingID)
}

// ParseTopic splits an events topic into its publisher and the escaped
// thing id. It fails for a topic outside proto.TopicEventsPrefix or with an
// invalid peer ID.
func ParseTopic(topic string) (publisher peer.ID, escapedThingID string, err error) {
	rest, ok := strings.CutPrefix(topic, lmosproto.TopicEventsPrefix)
	if !ok {
		return "", "", fmt.Errorf("fanout: topic %q: not under %s", topic, lmosproto.TopicEventsPrefix)
	}
	p, esc, ok := strings.Cut(rest, "/")
	if !ok || esc == "" {
		return "", "", fmt.Errorf("fanout: topic %q: no thing id", topic)
	}
	publisher, err = peer.Decode(p)
	if err != nil {
		return "", "", fmt.Errorf("fanout: topic %q: publisher: %w", topic, err)
	}
	return publisher, esc, nil
}

const upperHex = "0123456789ABCDEF"

// escapeThingID keeps A–Z a–z 0–9 - . _ ~ : and percent-encodes every other
// byte with upper-case hex digits.
func escapeThingID(id string) string {
	var b strings.Builder
	b.Grow(len(id))
	for i := 0; i < len(id); i++ {
		c := id[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

func keep(c byte) bool {
	switch {
	case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return true
	}
	return c == '-' || c == '.' || c == '_' || c == '~' || c == ':'
}
