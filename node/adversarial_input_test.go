package node_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// badText: bodies that encoding/json would rewrite to U+FFFD (invalid
// UTF-8, a lone surrogate escape) and JSON in another charset than UTF-8,
// on every kind of write route of node 0, with the token: the groups, a
// group's messages, trust, the admin and directory TD routes, and a call
// of node 1's door (plain and streaming). Each is a 400 or 415 problem;
// the door never opens (issue 24: {"name":"\xff"} made a group whose
// signed log held U+FFFD).
func (s *advSuite) badText(t *testing.T) advCount {
	n := s.nodes[0]
	base := "http://" + n.APIAddr()
	action := base + "/things/" + url.PathEscape(s.door) + "/actions/open"
	td := func(title string) string {
		return `{"@context":"https://www.w3.org/2022/wot/td/v1.1","id":"urn:x:text","title":"` + title + `","securityDefinitions":{"n":{"scheme":"nosec"}},"security":"n"}`
	}
	const json, utf16 = "application/json", "application/json; charset=utf-16"
	reqs := []struct{ method, u, ct, body string }{
		{http.MethodPost, base + "/api/v1/groups", json, "{\"name\":\"\xff\"}"},
		{http.MethodPost, base + "/api/v1/groups", json, `{"name":"\ud800"}`},
		{http.MethodPost, base + "/api/v1/groups", utf16, `{"name":"x"}`},
		{http.MethodPost, base + "/api/v1/groups/" + s.gid + "/messages", json, "{\"text\":\"\xc3\"}"},
		{http.MethodPut, base + "/api/v1/trust/" + url.PathEscape(s.nodes[1].PeerID().String()), "application/json; charset=ISO-8859-1", `{"level":"allow"}`},
		{http.MethodPost, base + "/api/v1/things", json, `{"td":` + td("\xff") + `}`},
		{http.MethodPut, base + "/things/urn:x:text", "application/td+json", td(`\udfff`)},
		{http.MethodPut, base + "/things/urn:x:text", "application/td+json; charset=UTF-16LE", td("T")},
		{http.MethodPost, action, json, `"\ud800"`},
		{http.MethodPost, action, json, "\"\xff\""},
		{http.MethodPost, action, "application/x-ndjson", "\"\\ud800\"\n"},
	}
	opened := s.opened.Load()
	c := advCount{how: " (400 naming the member, 415 for another charset; nothing rewritten to U+FFFD, the door never opened)"}
	for _, r := range reqs {
		c.tries++
		req, err := http.NewRequest(r.method, r.u, strings.NewReader(r.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", r.ct)
		req.Header.Set("Authorization", "Bearer "+n.APIToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		want := http.StatusBadRequest
		if strings.Contains(r.ct, "charset") {
			want = http.StatusUnsupportedMediaType
		}
		if p, err := httpapi.ResponseProblem(resp, body); err != nil || resp.StatusCode != want || p.Status != want {
			t.Errorf("%s %s %q %q: %d %.200s, want a %d problem", r.method, r.u, r.ct, r.body, resp.StatusCode, body, want)
			continue
		}
		c.refused++
	}
	if got := s.opened.Load(); got != opened {
		t.Errorf("the door opened %d times", got-opened)
	}
	return c
}

// wsFrames: WebSocket clients of node 0's /ws that send a frame header
// declaring 2^62 bytes, or 1 byte over the 4 MiB limit, and no payload,
// after the handshake or in the same write. Each gets close 1009 and the
// end of the connection without sending the payload (issue 24: the
// socket waited for it).
func (s *advSuite) wsFrames(t *testing.T) advCount {
	addr := s.nodes[0].APIAddr()
	handshake := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + lmosproto.WebSocketSubprotocol + "\r\n\r\n"
	header := func(length uint64) []byte { // a masked text frame, zero key
		return append(binary.BigEndian.AppendUint64([]byte{0x81, 0x80 | 127}, length), 0, 0, 0, 0)
	}
	c := advCount{how: " (close 1009 at the header, before any payload)"}
	for _, tc := range []struct {
		length    uint64
		pipelined bool
	}{{1 << 62, false}, {1 << 62, true}, {lmosproto.MaxMessageSize + 1, false}} {
		c.tries++
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		first := []byte(handshake)
		if tc.pipelined {
			first = append(first, header(tc.length)...)
		}
		_, err = conn.Write(first)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // generous: without the check it never ends
		br := bufio.NewReader(conn)
		resp, rerr := http.ReadResponse(br, nil)
		if err != nil || rerr != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Errorf("handshake: %v %v %v", resp, err, rerr)
			_ = conn.Close()
			continue
		}
		if !tc.pipelined {
			_, _ = conn.Write(header(tc.length))
		}
		rest, err := io.ReadAll(br)
		_ = conn.Close()
		if err != nil || len(rest) < 4 || rest[0] != 0x88 || binary.BigEndian.Uint16(rest[2:4]) != 1009 {
			t.Errorf("a %d-byte frame header: read %x, %v; want close 1009 and the end of the connection", tc.length, rest, err)
			continue
		}
		c.refused++
	}
	return c
}
