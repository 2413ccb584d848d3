package wsgateway

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestTranscripts replays testdata/transcripts/*.txt: wire conversations
// between a consumer socket (C) and an agent socket (A) and one node, so
// that a reviewer sees the protocol without reading code. Each line is
//
//	C> {json}   the consumer sends this text frame
//	C< {json}   the consumer receives this frame next
//	A> {json}   the agent sends this text frame
//	A< {json}   the agent receives this frame next
//	@register   the agent registers the test TD (registerThing, thingRegistered)
//
// In an expected frame, the value "*" matches any value of the member (ids
// and timestamps the node makes up). Blank lines and lines starting with
// # are comments.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			env := newAgentEnv(t)
			sockets := map[string]*client{"C": dial(t, env.consumer), "A": dial(t, env.agent)}
			for i, line := range strings.Split(string(data), "\n") {
				line = strings.TrimSpace(line)
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				if line == "@register" {
					register(t, sockets["A"])
					continue
				}
				if len(line) < 3 || sockets[line[:1]] == nil || (line[1] != '>' && line[1] != '<') {
					t.Fatalf("%s:%d: bad line %q", file, i+1, line)
				}
				c, frame := sockets[line[:1]], strings.TrimSpace(line[2:])
				if line[1] == '>' {
					c.sendRaw([]byte(frame))
					continue
				}
				var want map[string]any
				if err := json.Unmarshal([]byte(frame), &want); err != nil {
					t.Fatalf("%s:%d: %v", file, i+1, err)
				}
				got := c.recvRaw()
				if !matchFrame(want, got) {
					g, _ := json.Marshal(got)
					t.Fatalf("%s:%d:\n got  %s\n want %s", file, i+1, g, frame)
				}
			}
		})
	}
}

// matchFrame compares a received frame with the expected one, where "*"
// matches any value.
func matchFrame(want, got map[string]any) bool {
	if len(want) != len(got) {
		return false
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		if w == "*" {
			continue
		}
		if !reflect.DeepEqual(w, g) {
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(g)
			if !bytes.Equal(wj, gj) {
				return false
			}
		}
	}
	return true
}
