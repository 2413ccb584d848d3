package interact

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lmosnode/lmosnode/proto"
)

// Defaults of the libp2p transport.
const (
	// DefaultFirstFrameTimeout bounds how long a server waits for the
	// request after a stream opens: a peer that opens streams and sends
	// nothing must not pin them.
	DefaultFirstFrameTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds the write of one frame. A consumer that
	// reads nothing for this long (its flow-control window full) is dropped:
	// the stream is reset and the interaction ends (cancelled).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultDialTimeout bounds opening a stream to the owner (dial,
	// protocol negotiation, writing the request).
	DefaultDialTimeout = 15 * time.Second
	// DefaultCloseGrace is how long a server that has sent its last frame
	// waits for the consumer to close its side before it resets the stream.
	DefaultCloseGrace = 5 * time.Second
)

// TransportOptions configure the libp2p Server and Client. The zero value
// of every field selects its default.
type TransportOptions struct {
	// Codec is what the Client writes: proto.JSON or proto.CBOR. A Server
	// answers in the codec of the request. Default proto.JSON: the spec's
	// own form, and faster than CBOR with proto's codecs (whose CBOR path
	// converts through a tree; see BenchmarkRequestReply). Every node
	// understands both.
	Codec proto.Codec
	// MaxMessageSize is the largest frame read or written. Default
	// proto.MaxMessageSize.
	MaxMessageSize int
	// FirstFrameTimeout: see DefaultFirstFrameTimeout.
	FirstFrameTimeout time.Duration
	// WriteTimeout: see DefaultWriteTimeout.
	WriteTimeout time.Duration
	// DialTimeout: see DefaultDialTimeout.
	DialTimeout time.Duration
	// CloseGrace: see DefaultCloseGrace.
	CloseGrace time.Duration
	// QueueSize is the capacity of a Client session's reply queue; when it
	// is full the Client stops reading the stream, and libp2p flow control
	// holds the owner back. Default DefaultQueueSize.
	QueueSize int
	// Logger receives the transport's logs. Default: discarded.
	Logger *slog.Logger
}

func (o TransportOptions) withDefaults() TransportOptions {
	if o.Codec == nil {
		o.Codec = proto.JSON
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = proto.MaxMessageSize
	}
	if o.FirstFrameTimeout == 0 {
		o.FirstFrameTimeout = DefaultFirstFrameTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.CloseGrace == 0 {
		o.CloseGrace = DefaultCloseGrace
	}
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports every option out of range.
func (o TransportOptions) Validate() error {
	var errs []error
	if o.MaxMessageSize < 0 || o.MaxMessageSize > proto.MaxMessageSize {
		errs = append(errs, fmt.Errorf("interact transport options: MaxMessageSize: %d is not within 0..%d", o.MaxMessageSize, proto.MaxMessageSize))
	}
	for name, d := range map[string]time.Duration{
		"FirstFrameTimeout": o.FirstFrameTimeout, "WriteTimeout": o.WriteTimeout,
		"DialTimeout": o.DialTimeout, "CloseGrace": o.CloseGrace,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("interact transport options: %s: %s is negative", name, d))
		}
	}
	if o.QueueSize < 0 {
		errs = append(errs, fmt.Errorf("interact transport options: QueueSize: %d is negative", o.QueueSize))
	}
	return errors.Join(errs...)
}
