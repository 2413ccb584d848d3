package wsgateway

import (
	"testing"

	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/lmosnode/lmosnode/proto"
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
			fr, err := encode(bad, typ)
			if err != nil {
				t.Fatalf("error reply does not encode: %v", err)
			}
			back, again := decode(typ, fr.data)
			if again != nil || back.Type != proto.MsgError || !utf8.ValidString(back.Detail) {
				t.Fatalf("error reply %q does not decode as a valid error frame: %v", fr.data, again)
			}
		}
	})
}
