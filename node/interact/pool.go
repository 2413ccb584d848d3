package interact

import (
	"bufio"
	"io"
	"sync"
)

// readers pools the buffered readers of streams: every interaction over
// libp2p needs one at each end, and a fresh 4 KiB buffer per stream was
// the largest allocation of a request-reply.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// getReader returns a pooled buffered reader of r.
func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

// putReader returns br to the pool; the caller must not use it afterwards.
func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}
