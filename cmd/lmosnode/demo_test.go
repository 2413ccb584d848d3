package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the demo in-process, without keeping it up, and checks that
// every pattern succeeded.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if code := run(ctx, []string{"demo", "--keep=false", "--api-port", "0"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	took := time.Since(start)
	out := stdout.String()
	for _, want := range []string{
		"node 3's directory lists all 3 Things,",
		"pattern 1 (one-way): ok",
		"readProperty feedbackCount = 1",
		"pattern 2 (request-reply): ok",
		`actionStatus completed "Bonn today`,
		"pattern 3 (request → multiple responses): ok",
		"7 progress reports, then completed",
		"pattern 4 (event notification): ok",
		"subscription ended",
		"pattern 5 via gossip fan-out: the owner publishes each event once",
		"reached all 2 subscriber(s)",
		"pattern 5 (publish-subscribe, via gossip fan-out): ok",
		"pattern 6 (request-stream/response-stream): ok",
		`token "hello"`,
		`token " from"`,
		"session completed:",
		"/.well-known/wot",
		"node 3's web console: http://127.0.0.1:",
		"or: lmosnode --api http://127.0.0.1:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, &stderr)
	}
	if took > 30*time.Second {
		t.Errorf("demo took %s, want < 30s", took)
	}
	t.Logf("demo took %s", took)
}

// TestDemoPortTaken: the demo on a taken API port says how to pick a free
// one.
func TestDemoPortTaken(t *testing.T) {
	port := freePort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+port) // taken for the demo
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"demo", "--keep=false", "--api-port", port}, strings.NewReader(""), &stdout, &stderr)
	if code != exitFailure || !strings.Contains(stderr.String(), "address already in use") || !strings.Contains(stderr.String(), "'lmosnode demo --api-port 0' picks a free port") {
		t.Errorf("demo on a taken port: exit %d, stderr %q", code, &stderr)
	}
}
