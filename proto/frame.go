package proto

// Framing of messages on byte streams (libp2p streams of ProtocolInteract):
// every frame is an unsigned varint length (LEB128, minimal, at most 9
// bytes, as in multiformats unsigned-varint) followed by that many bytes of
// payload, one encoded message.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned by ReadFrame for a frame longer than the
// limit. The stream is then out of step and must be reset.
var ErrFrameTooLarge = errors.New("lmos frame: larger than the limit")

// maxVarintLen is the longest unsigned varint a frame length may take.
const maxVarintLen = 9

// WriteFrame writes p as one frame, in a single Write call.
func WriteFrame(w io.Writer, p []byte) error {
	buf := make([]byte, 0, binary.MaxVarintLen64+len(p))
	buf = binary.AppendUvarint(buf, uint64(len(p)))
	buf = append(buf, p...)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("lmos frame: write: %w", err)
	}
	return nil
}

// ReadFrame reads one frame and returns its payload. A length above limit
// (MaxMessageSize when limit <= 0) fails with ErrFrameTooLarge before
// anything is allocated for it. It returns io.EOF when r ends before the
// first byte of a frame and io.ErrUnexpectedEOF when it ends inside one.
//
// If r is an io.ByteReader (a *bufio.Reader) the length is read from it;
// otherwise ReadFrame reads the length one byte at a time, so it never
// reads past the frame and r can be read further by others.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	if limit <= 0 {
		limit = MaxMessageSize
	}
	br, ok := r.(io.ByteReader)
	if !ok {
		br = &frameByteReader{r: r}
	}
	n, err := readUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("lmos frame: payload: %w", err)
	}
	return p, nil
}

// readUvarint reads a minimally encoded unsigned varint of at most
// maxVarintLen bytes.
func readUvarint(br io.ByteReader) (uint64, error) {
	var x uint64
	for i := 0; i < maxVarintLen; i++ {
		b, err := br.ReadByte()
		if err == io.EOF && i == 0 {
			return 0, io.EOF // a clean end between frames
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, fmt.Errorf("lmos frame: length: %w", err)
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			if b == 0 && i > 0 {
				return 0, errors.New("lmos frame: length varint is not minimally encoded")
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("lmos frame: length varint longer than %d bytes", maxVarintLen)
}

// frameByteReader reads single bytes from an io.Reader without buffering.
type frameByteReader struct {
	r   io.Reader
	buf [1]byte
}

func (b *frameByteReader) ReadByte() (byte, error) {
	_, err := io.ReadFull(b.r, b.buf[:])
	return b.buf[0], err
}

// FrameCodec reads and writes messages as frames with a Codec, the way
// libp2p streams carry them. The zero value is not usable: set Codec.
type FrameCodec struct {
	Codec Codec
	// Max is the largest frame read or written; MaxMessageSize when 0.
	Max int
}

func (fc FrameCodec) max() int {
	if fc.Max <= 0 {
		return MaxMessageSize
	}
	return fc.Max
}

// WriteMessage encodes m and writes it as one frame. It refuses a message
// larger than the limit rather than send one the peer rejects.
func (fc FrameCodec) WriteMessage(w io.Writer, m *Message) error {
	p, err := fc.Codec.Marshal(m)
	if err != nil {
		return err
	}
	if len(p) > fc.max() {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, len(p), fc.max())
	}
	return WriteFrame(w, p)
}

// ReadMessage reads one frame and decodes it into m. At the end of the
// stream it returns io.EOF.
func (fc FrameCodec) ReadMessage(r io.Reader, m *Message) error {
	p, err := ReadFrame(r, fc.max())
	if err != nil {
		return err
	}
	return fc.Codec.Unmarshal(p, m)
}
