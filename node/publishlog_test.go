package node

import (
	"context"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/httpapi"
)

// TestPublishLoggedOnce: a publication through the API is one line at
// info level, and so is a removal (a failed DHT put on a node without peers is a debug line).
func TestPublishLoggedOnce(t *testing.T) {
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	n, err := New(testConfig(t), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../examples/things/weather-agent.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apiclient.New("http://"+n.APIAddr(), httpapi.BearerClient(n.APIToken())).Publish(ctx, doc, nil); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if logMessage(l, "publish") && strings.Contains(l, "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d log lines about the publication, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if err := apiclient.New("http://"+n.APIAddr(), httpapi.BearerClient(n.APIToken())).RemoveThing(ctx, "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77"); err != nil {
		t.Fatal(err)
	}
	removals := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if logMessage(l, "remove") && strings.Contains(l, "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77") {
			removals++
		}
	}
	if removals != 1 {
		t.Errorf("%d log lines about the removal, want 1:\n%s", removals, out.String())
	}
}

// logMessage reports whether the message (msg=) of a text log line
// contains word: a line whose attributes quote an error that mentions
// it (the event feed of a Thing with no backend, "…the node that
// publishes it…") is not about the publication.
func logMessage(line, word string) bool {
	m := logMsg.FindStringSubmatch(line)
	return m != nil && strings.Contains(m[1]+m[2], word)
}

var logMsg = regexp.MustCompile(`msg=(?:"((?:[^"\\]|\\.)*)"|(\S*))`)
