package interact

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/lmosnode/lmosnode/proto"
)

// sseEvent is one server-sent event: its type ("" for the default,
// "message") and its data (the data lines joined by "\n").
type sseEvent struct {
	typ  string
	data string
}

// readSSE reads a text/event-stream and calls fn for every event until the
// stream ends, fn fails, or a line exceeds proto.MaxMessageSize. Comments,
// id and retry fields are ignored (the node does not resume streams).
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), proto.MaxMessageSize+64)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.typ = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	return nil
}
