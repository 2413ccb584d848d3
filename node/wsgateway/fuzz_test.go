package wsgateway

import (
	"testing"

	"github.com/coder/websocket"
)

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"thingID":"urn:x","messageID":"m","messageType":"readProperty","name":"p"}`), false)
	f.Add([]byte(`{"thingId":"urn:x","messageId":"m","messageType":"nope","correlationId":"c"}`), false)
	f.Add([]byte{0xa1, 0x61, 0x61, 0x01}, true)
	f.Fuzz(func(t *testing.T, data []byte, binary bool) {
		typ := websocket.MessageText
		if binary {
			typ = websocket.MessageBinary
		}
		m, bad := decode(typ, data)
		if (m == nil) == (bad == nil) {
			t.Fatalf("decode returned message %v and error %v", m, bad)
		}
		if bad != nil {
			if _, err := encode(bad, typ); err != nil {
				t.Fatalf("error reply does not encode: %v", err)
			}
		}
	})
}
