package proto_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/lmosnode/lmosnode/proto"
)

func TestFrameRoundTrip(t *testing.T) {
	payloads := [][]byte{{}, []byte("x"), bytes.Repeat([]byte("a"), 127), bytes.Repeat([]byte("b"), 128), bytes.Repeat([]byte("c"), 70000)}
	var stream bytes.Buffer
	for _, p := range payloads {
		if err := proto.WriteFrame(&stream, p); err != nil {
			t.Fatal(err)
		}
	}
	wire := stream.Bytes()
	// The same stream read through a ByteReader and through a plain Reader.
	for _, r := range []io.Reader{bufio.NewReader(bytes.NewReader(wire)), onlyReader{bytes.NewReader(wire)}} {
		for i, want := range payloads {
			got, err := proto.ReadFrame(r, 0)
			if err != nil {
				t.Fatalf("%T: frame %d: %v", r, i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%T: frame %d: %d bytes, want %d", r, i, len(got), len(want))
			}
		}
		if _, err := proto.ReadFrame(r, 0); err != io.EOF {
			t.Errorf("%T: after the last frame: %v, want io.EOF", r, err)
		}
	}
}

// onlyReader hides every method but Read.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestReadFrameNoReadAhead: without a ByteReader, ReadFrame reads exactly
// one frame and leaves the rest of the stream alone.
func TestReadFrameNoReadAhead(t *testing.T) {
	var b bytes.Buffer
	_ = proto.WriteFrame(&b, []byte("one"))
	b.WriteString("rest")
	r := onlyReader{&b}
	if p, err := proto.ReadFrame(r, 0); err != nil || string(p) != "one" {
		t.Fatalf("ReadFrame = %q, %v", p, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "rest" {
		t.Errorf("the stream after the frame is %q, want %q", rest, "rest")
	}
}

func TestReadFrameRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hex    string
		limit  int
		target error
		substr string
	}{
		{"over the limit", "0b" + strings.Repeat("00", 11), 10, proto.ErrFrameTooLarge, "11 bytes, limit 10"},
		{"huge length, nothing allocated", "ffffffffffffffff7f", 0, proto.ErrFrameTooLarge, ""},
		{"over MaxMessageSize", hex.EncodeToString(binary.AppendUvarint(nil, proto.MaxMessageSize+1)), 0, proto.ErrFrameTooLarge, ""},
		{"non-minimal varint", "8000", 0, nil, "not minimally encoded"},
		{"varint too long", "ffffffffffffffffff01", 0, nil, "longer than 9 bytes"},
		{"truncated varint", "80", 0, io.ErrUnexpectedEOF, ""},
		{"truncated payload", "05616263", 0, io.ErrUnexpectedEOF, ""},
	} {
		b, _ := hex.DecodeString(tc.hex)
		for _, r := range []io.Reader{bytes.NewReader(b), onlyReader{bytes.NewReader(b)}} {
			_, err := proto.ReadFrame(r, tc.limit)
			switch {
			case err == nil:
				t.Errorf("%s (%T): accepted", tc.name, r)
			case tc.target != nil && !errors.Is(err, tc.target):
				t.Errorf("%s (%T): %v, want %v", tc.name, r, err, tc.target)
			case !strings.Contains(err.Error(), tc.substr):
				t.Errorf("%s (%T): %q does not contain %q", tc.name, r, err, tc.substr)
			}
		}
	}
	// A limit exactly the frame's length is fine.
	if p, err := proto.ReadFrame(bytes.NewReader([]byte{3, 'a', 'b', 'c'}), 3); err != nil || string(p) != "abc" {
		t.Errorf("ReadFrame at the limit = %q, %v", p, err)
	}
}

// TestReadFrameHugeLengthAllocatesNothing: a length prefix of 2^63-1 is
// refused before anything of its size (or of the limit's) is allocated.
func TestReadFrameHugeLengthAllocatesNothing(t *testing.T) {
	b, _ := hex.DecodeString("ffffffffffffffff7f")
	const runs, limit = 100, 1 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := proto.ReadFrame(bytes.NewReader(b), limit); !errors.Is(err, proto.ErrFrameTooLarge) {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 4096 {
		t.Errorf("ReadFrame of an oversize frame allocates %d bytes", perRun)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("stream reset") }

func TestFrameCodec(t *testing.T) {
	for _, c := range []proto.Codec{proto.JSON, proto.CBOR} {
		fc := proto.FrameCodec{Codec: c}
		var stream bytes.Buffer
		var sent []*proto.Message
		for _, typ := range allTypes {
			m := validMessage(typ)
			sent = append(sent, m)
			if err := fc.WriteMessage(&stream, m); err != nil {
				t.Fatal(err)
			}
		}
		r := bufio.NewReader(&stream)
		for _, want := range sent {
			var got proto.Message
			if err := fc.ReadMessage(r, &got); err != nil {
				t.Fatalf("%s: %v", c.ContentType(), err)
			}
			if !reflect.DeepEqual(&got, want) {
				t.Errorf("%s: read %+v, want %+v", c.ContentType(), got, want)
			}
		}
		var m proto.Message
		if err := fc.ReadMessage(r, &m); err != io.EOF {
			t.Errorf("%s: at the end: %v, want io.EOF", c.ContentType(), err)
		}

		small := proto.FrameCodec{Codec: c, Max: 16}
		if err := small.WriteMessage(io.Discard, sent[0]); !errors.Is(err, proto.ErrFrameTooLarge) {
			t.Errorf("%s: writing over the limit: %v", c.ContentType(), err)
		}
		if err := fc.WriteMessage(failWriter{}, sent[0]); err == nil || !strings.Contains(err.Error(), "stream reset") {
			t.Errorf("%s: write error lost: %v", c.ContentType(), err)
		}
		if err := fc.WriteMessage(io.Discard, &proto.Message{}); err == nil {
			t.Errorf("%s: wrote a message without type", c.ContentType())
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{3, 'a', 'b', 'c', 1, 'x'})
	f.Add([]byte{0x80, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	var b bytes.Buffer
	_ = proto.FrameCodec{Codec: proto.CBOR}.WriteMessage(&b, validMessage(proto.MsgEvent))
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 1 << 16
		r := bytes.NewReader(data)
		for {
			before := r.Len()
			p, err := proto.ReadFrame(r, limit)
			if err != nil {
				return
			}
			if len(p) > limit {
				t.Fatalf("frame of %d bytes over the limit %d", len(p), limit)
			}
			// What was read is exactly one frame: writing it back gives
			// the bytes consumed.
			consumed := data[len(data)-before : len(data)-r.Len()]
			var w bytes.Buffer
			if err := proto.WriteFrame(&w, p); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(w.Bytes(), consumed) {
				t.Fatalf("frame %x re-encodes as %x", consumed, w.Bytes())
			}
			if c, ok := proto.SniffCodec(p); ok {
				var m proto.Message
				_ = c.Unmarshal(p, &m) // must not panic
			}
		}
	})
}

func ExampleFrameCodec() {
	var stream bytes.Buffer // a libp2p stream, in real life
	fc := proto.FrameCodec{Codec: proto.CBOR}

	req := &proto.Message{ThingID: "urn:x", MessageID: "b45e8f90-8824-4c23-bc37-c6c4ddad4b2c", Type: proto.MsgReadProperty, Name: "temperature"}
	_ = fc.WriteMessage(&stream, req)

	var got proto.Message
	err := fc.ReadMessage(&stream, &got)
	fmt.Println(got.Type, got.Name, err)
	fmt.Println(fc.ReadMessage(&stream, &got))
	// Output:
	// readProperty temperature <nil>
	// EOF
}

func ExampleWriteFrame() {
	var b bytes.Buffer
	_ = proto.WriteFrame(&b, bytes.Repeat([]byte{'x'}, 300))
	fmt.Printf("% x …\n", b.Bytes()[:3])
	p, err := proto.ReadFrame(&b, 1024)
	fmt.Println(len(p), err)
	// Output:
	// ac 02 78 …
	// 300 <nil>
}
