package wsgateway

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// errFrameTooBig is the read error of a connection whose client declared a
// message longer than the read limit.
var errFrameTooBig = errors.New("websocket: a frame header declares a message longer than the read limit")

// limitedHijack hands coder/websocket a connection whose reads check
// every frame header the client sends against limit, the socket's read
// limit. The library checks its read limit only as it reads the payload,
// so a header declaring 2^62 bytes, followed by nothing, would hold the
// socket open; with limitedHijack the read that brings such a header
// fails, and the socket closes (1009) at once.
type limitedHijack struct {
	http.ResponseWriter
	limit int64
}

// Hijack implements http.Hijacker: the connection of the ResponseWriter,
// with the bytes already buffered read again through the frame check.
func (h limitedHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	buffered, _ := brw.Peek(brw.Reader.Buffered())
	fc := &frameLimitConn{Conn: conn, r: io.MultiReader(bytes.NewReader(bytes.Clone(buffered)), conn), limit: h.limit}
	return fc, bufio.NewReadWriter(bufio.NewReader(fc), brw.Writer), nil
}

// frameLimitConn follows the frames a client sends (RFC 6455 §5.2): it
// reads each header and skips the payload it declares, summing the
// lengths of a message's data frames.
type frameLimitConn struct {
	net.Conn
	r       io.Reader
	limit   int64
	head    []byte // the header read so far
	payload uint64 // payload bytes of the current frame still to come
	message uint64 // declared bytes of the current message
	err     error
}

func (c *frameLimitConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if ferr := c.follow(p[:n]); ferr != nil {
		c.err = ferr
		return 0, ferr
	}
	return n, err
}

// follow reads b, the next bytes of the stream.
func (c *frameLimitConn) follow(b []byte) error {
	for len(b) > 0 {
		if c.payload > 0 {
			k := min(c.payload, uint64(len(b)))
			c.payload -= k
			b = b[k:]
			continue
		}
		c.head = append(c.head, b[0])
		b = b[1:]
		if len(c.head) < headerLen(c.head) {
			continue
		}
		if err := c.frame(); err != nil {
			return err
		}
	}
	return nil
}

// headerLen is the length of the frame header that starts with head
// (at least 2 bytes): by the 7-bit length and the mask bit.
func headerLen(head []byte) int {
	if len(head) < 2 {
		return 2
	}
	n := 2
	switch head[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if head[1]&0x80 != 0 {
		n += 4
	}
	return n
}

// frame takes the complete header in c.head.
func (c *frameLimitConn) frame() error {
	fin, opcode := c.head[0]&0x80 != 0, c.head[0]&0x0f
	length := uint64(c.head[1] & 0x7f)
	switch length {
	case 126:
		length = uint64(binary.BigEndian.Uint16(c.head[2:4]))
	case 127:
		length = binary.BigEndian.Uint64(c.head[2:10])
	}
	c.head, c.payload = c.head[:0], length
	if opcode >= 0x8 { // control frames: the library bounds them (125 bytes)
		return nil
	}
	if opcode != 0 { // text or binary: a new message
		c.message = 0
	}
	if length > uint64(c.limit) || c.message+length > uint64(c.limit) {
		return fmt.Errorf("%w (%d bytes)", errFrameTooBig, c.limit)
	}
	c.message += length
	if fin {
		c.message = 0
	}
	return nil
}
