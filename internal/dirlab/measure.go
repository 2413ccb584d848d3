package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lmosnode/lmosnode/internal/dircorpus"
	"github.com/lmosnode/lmosnode/node/aicatalog"
	"github.com/lmosnode/lmosnode/node/homedir"
)

// mib is a MiB, the MB of docs/performance.md.
const mib = 1 << 20

// client asks one node's API, with its token.
type client struct {
	api, token string
	http       *http.Client
}

// get GETs path and returns the body of a 200.
func (c *client) get(ctx context.Context, path string) ([]byte, error) {
	return c.do(ctx, request{path: path})
}

// request is a GET of path, or a POST of body (JSON) to it.
type request struct {
	path string
	body []byte
}

// do sends r and returns the body of a 200.
func (c *client) do(ctx context.Context, r request) ([]byte, error) {
	method, path := http.MethodGet, r.path
	var rd io.Reader
	if r.body != nil {
		method, rd = http.MethodPost, bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.api+path, rd)
	if err != nil {
		return nil, err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: %s: %.200s", method, path, resp.Status, body)
	}
	return body, err
}

// runMeasure measures the node running in a home: its memory once its
// heap is collected, then the latency of queries through its API.
func runMeasure(args []string) error {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	home := fs.String("home", "", "the running node's home")
	queries := fs.Int("queries", 2000, "capability queries to time, a tenth as many free-text ones and ones by title, a hundredth as many pages of every Thing (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *home == "" {
		return errors.New("measure: -home is required")
	}
	api, err := homedir.ReadAPIFile(*home)
	if err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	token, err := homedir.LoadAPIToken(*home)
	if err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	c := &client{api: api, token: token, http: &http.Client{Timeout: time.Minute}}
	ctx := context.Background()
	if err := c.memory(ctx, *home, "heap.pb.gz"); err != nil || *queries <= 0 {
		return err
	}
	if err := c.latency(ctx, *queries); err != nil {
		return err
	}
	// The caches a node fills as it serves (parsed TDs, records) are
	// bounded: after the queries they hold what they can.
	fmt.Print("after the queries, ")
	return c.memory(ctx, *home, "heap-queried.pb.gz")
}

// memory writes the node's heap profile, taken after a GC, to file in
// home, and prints what its metrics say right after.
func (c *client) memory(ctx context.Context, home, file string) error {
	prof, err := c.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("measure: heap profile (is pprof on?): %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, file), prof, 0o600); err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	body, err := c.get(ctx, "/metrics")
	if err != nil {
		return fmt.Errorf("measure: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("measure: /metrics: %w", err)
	}
	sum := func(name string) float64 {
		var v float64
		for _, m := range families[name].GetMetric() {
			v += m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		return v
	}
	things := sum("lmos_directory_things")
	heap := sum("go_memstats_heap_alloc_bytes")
	fmt.Printf("the node holds %.0f Things; heap after a GC %.1f MB (%.3f MB per 1k Things), heap in use %.1f MB, resident %.1f MB\n",
		things, heap/mib, heap/mib/max(things/1000, 1), sum("go_memstats_heap_inuse_bytes")/mib, sum("process_resident_memory_bytes")/mib)
	fmt.Printf("heap profile: %s\n", filepath.Join(home, file))
	return nil
}

// latency times capability queries of the corpus's Zipf mix (the
// directory benchmark's, first page of 20), two-word free-text queries,
// a tenth of the capability queries ordered by title, a hundredth (at
// least 3) of pages of every Thing, newest first, and a tenth of ARD
// searches of two words (POST /ard/search), each run once
// untimed first: the first query of a capability asks the network (here:
// a DHT without peers) and marks it fresh.
func (c *client) latency(ctx context.Context, n int) error {
	corpus, err := dircorpus.New()
	if err != nil {
		return err
	}
	qrng := rand.New(rand.NewPCG(3, 4))
	capZipf := rand.NewZipf(qrng, 1.05, 10, uint64(len(corpus.Caps)-1))
	wordZipf := rand.NewZipf(qrng, 1.1, 1, uint64(len(corpus.Words)-1))
	caps := make([]request, n)
	for i := range caps {
		caps[i].path = "/things?limit=20&capability=" + url.QueryEscape(corpus.Caps[capZipf.Uint64()])
	}
	words := func() string { return corpus.Words[wordZipf.Uint64()] + " " + corpus.Words[wordZipf.Uint64()] }
	texts := make([]request, max(n/10, 1))
	for i := range texts {
		texts[i].path = "/things?limit=20&q=" + url.QueryEscape(words())
	}
	sorted := make([]request, max(n/10, 1))
	for i := range sorted {
		sorted[i].path = caps[i].path + "&sort_by=title"
	}
	whole := make([]request, max(n/100, 3))
	for i := range whole {
		whole[i].path = fmt.Sprintf("/things?limit=20&offset=%d&sort_by=modified&sort_order=desc", i*20)
	}
	ard := make([]request, max(n/10, 1))
	for i := range ard {
		body, err := json.Marshal(map[string]any{"query": map[string]any{"text": words()}, "federation": "none", "pageSize": 10})
		if err != nil {
			return err
		}
		ard[i] = request{path: aicatalog.PathSearch, body: body}
	}
	for _, set := range []struct {
		name string
		reqs []request
	}{
		{"capability", caps}, {"free text, two words", texts}, {"capability, sort_by=title", sorted},
		{"every Thing, sort_by=modified, desc", whole}, {"ARD search (POST /ard/search, page of 10), two words", ard},
	} {
		for _, r := range set.reqs { // untimed: every capability asked once
			if _, err := c.do(ctx, r); err != nil {
				return fmt.Errorf("measure: %w", err)
			}
		}
		lat := make([]time.Duration, 0, len(set.reqs))
		var size int
		for _, r := range set.reqs {
			start := time.Now()
			body, err := c.do(ctx, r)
			lat = append(lat, time.Since(start))
			if err != nil {
				return fmt.Errorf("measure: %w", err)
			}
			size += len(body)
		}
		slices.Sort(lat)
		q := func(f float64) string {
			return fmt.Sprintf("%.2f ms", float64(lat[int(f*float64(len(lat)-1))].Microseconds())/1000)
		}
		fmt.Printf("query through the API, %s (%d queries, %.0f KB an answer): p50 %s, p90 %s, p99 %s\n",
			set.name, len(lat), float64(size)/float64(len(lat))/(1<<10), q(0.5), q(0.9), q(0.99))
	}
	return nil
}
