package wsgateway

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// TestOversizedFrameHeader: a client that sends a frame header declaring
// more than the read limit, and no payload, gets close 1009 and the end of
// the connection at once — not after the payload it never sends. With
// coder/websocket alone the socket waited for it. Raw TCP: the handshake,
// then the header, in one write (the header arrives with the handshake) or
// after the 101; and a message of two fragments over the limit together.
func TestOversizedFrameHeader(t *testing.T) {
	env := newConsumerEnv(t, Config{})
	addr := strings.TrimPrefix(env.srv.URL, "http://")
	huge := frameHeader(0x1, false, 1<<62)
	for _, tc := range []struct {
		name      string
		pipelined bool
		frames    [][]byte
	}{
		{"2^62 bytes", false, [][]byte{huge}},
		{"2^62 bytes, sent with the handshake", true, [][]byte{huge}},
		{"one byte over", false, [][]byte{frameHeader(0x2, true, proto.MaxMessageSize+1)}},
		{"fragments over", false, [][]byte{
			append(frameHeader(0x1, false, 4), 'a', 'b', 'c', 'd'), // masked with a zero key: as is
			frameHeader(0x0, true, proto.MaxMessageSize),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			handshake := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
				"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + proto.WebSocketSubprotocol + "\r\n\r\n"
			var frames []byte
			for _, f := range tc.frames {
				frames = append(frames, f...)
			}
			if tc.pipelined {
				_, err = conn.Write(append([]byte(handshake), frames...))
			} else {
				_, err = io.WriteString(conn, handshake)
			}
			if err != nil {
				t.Fatal(err)
			}
			// A generous bound, not a speed goal: without the check the
			// server waits for the payload for as long as the client likes.
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("handshake: %v %v", resp, err)
			}
			if !tc.pipelined {
				if _, err := conn.Write(frames); err != nil {
					t.Fatal(err)
				}
			}
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("the server did not close the connection: %v (read %x)", err, rest)
			}
			// What came is a close frame (server frames are unmasked) with
			// status 1009.
			if len(rest) < 4 || rest[0] != 0x88 || binary.BigEndian.Uint16(rest[2:4]) != 1009 {
				t.Fatalf("got %x, want a close frame with status 1009", rest)
			}
		})
	}
}

// frameHeader is the header of a client frame (masked, with a zero key).
func frameHeader(opcode byte, fin bool, length uint64) []byte {
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	h := []byte{b0, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, length)
	return append(h, 0, 0, 0, 0)
}
