package acts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is what the runner needs of the SUT.
type Config struct {
	// CardURL is the URL of the SUT's Agent Card: get_agent_card reads it,
	// and its supportedInterfaces give each transport's URL.
	CardURL string
	// Behaviors are the behaviour prefixes (§11) the SUT implements; a test
	// requiring another is skipped.
	Behaviors []string
	// ParseClient parses a client_response wire payload of an abstract
	// operation into the client's model and returns it as JSON; nil skips
	// client steps.
	ParseClient func(operation string, payload []byte) ([]byte, error)
	// HTTPClient makes the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Parallel is how many tests run at once (default 8); §4 allows any
	// order and parallelism.
	Parallel int
	// StepTimeout bounds a step, a stream included (default 30 s).
	StepTimeout time.Duration
}

// Outcomes of a test.
const (
	Pass = "pass"
	Fail = "fail"
	Skip = "skip"
)

// Result is the outcome of a test on one transport.
type Result struct {
	Suite, ID, Name, Level, Transport string
	Outcome                           string
	// Reason says why it was skipped or how it failed (the step first).
	Reason   string
	Duration time.Duration
}

// Transports are the bindings a test runs on, in report order.
var Transports = []string{JSONRPC, REST, GRPC}

// Run runs tests against the SUT on every transport of Transports and
// returns a result per test and transport (a test restricted to other
// transports has none for a transport). gRPC is never run: the runner has
// no gRPC binding.
func Run(ctx context.Context, cfg Config, tests []Test) []Result {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = 30 * time.Second
	}
	card, cardErr := fetchCard(ctx, cfg)
	type job struct {
		t         Test
		transport string
		i         int
	}
	var jobs []job
	for _, tr := range Transports {
		for _, t := range tests {
			if len(t.Transport) == 0 || slices.Contains(t.Transport, tr) {
				jobs = append(jobs, job{t, tr, len(jobs)})
			}
		}
	}
	results := make([]Result, len(jobs))
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			start := time.Now()
			res := Result{Suite: j.t.Suite, ID: j.t.ID, Name: j.t.Name, Level: j.t.Level, Transport: j.transport}
			if cardErr != nil {
				res.Outcome, res.Reason = Fail, "reading the agent card: "+cardErr.Error()
			} else {
				res.Outcome, res.Reason = runTest(ctx, cfg, card, j.t, j.transport)
			}
			res.Duration = time.Since(start)
			results[j.i] = res
		})
	}
	wg.Wait()
	return results
}

func fetchCard(ctx context.Context, cfg Config) (any, error) {
	r := &run{cfg: cfg, t: &Test{}}
	resp, err := r.do(ctx, http.MethodGet, cfg.CardURL, map[string]string{"Accept": "application/json"}, nil)
	if err != nil {
		return nil, err
	}
	if resp.status != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.status)
	}
	return resp.body, nil
}

// interfaceURL is the URL of the card's interface for transport, "" if it
// lists none.
func interfaceURL(card any, transport string) string {
	ifaces, _ := member(card, "supportedInterfaces").([]any)
	for _, i := range ifaces {
		if slices.Contains(bindingNames[transport], str(member(i, "protocolBinding"))) {
			return str(member(i, "url"))
		}
	}
	return ""
}

// skipReason says why test t does not run on transport, "" if it runs.
func skipReason(cfg Config, card any, t Test, transport string) string {
	if transport == GRPC {
		return "gRPC: the runner and the SUT have no gRPC binding"
	}
	if interfaceURL(card, transport) == "" {
		return fmt.Sprintf("precondition: the agent card lists no %s interface", bindingNames[transport][0])
	}
	if p := t.Preconditions; p != nil {
		if r := capabilityMismatch(card, p.Capabilities); r != "" {
			return "precondition: " + r
		}
		for _, tr := range p.Transport {
			if interfaceURL(card, tr) == "" {
				return fmt.Sprintf("precondition: the agent card lists no %s interface", bindingNames[tr][0])
			}
		}
		if len(p.Skills) > 0 || len(p.Extensions) > 0 {
			return "precondition: skills and extensions are not checked by this runner"
		}
	}
	for _, b := range t.RequiresBehaviors {
		if !slices.Contains(cfg.Behaviors, b) {
			return "the SUT does not implement behaviour " + b
		}
	}
	if len(t.RunnerRequirements) > 0 {
		return "runner requirement not supported: " + strings.Join(t.RunnerRequirements, ", ")
	}
	if slices.Contains(t.Tags, "runner-special") {
		return "tag runner-special: needs runner support beyond its steps (" + firstSentence(t.Description) + ")"
	}
	for _, s := range t.Steps {
		if s.ClientResponse != nil {
			switch {
			case cfg.ParseClient == nil:
				return "client steps: no client parser configured"
			case transport != JSONRPC:
				return "client steps: the wire payloads are JSON-RPC responses"
			}
		}
	}
	return ""
}

// capabilityMismatch compares the card's capabilities with the wanted
// ones; a capability the card omits is false (ProtoJSON omits defaults).
func capabilityMismatch(card any, want map[string]any) string {
	caps := member(card, "capabilities")
	for _, k := range sortedKeys(want) {
		got := member(caps, k)
		if isMissing(got) {
			got = false
		}
		if !equal(want[k], got) {
			return fmt.Sprintf("capabilities.%s is %s, the test needs %s", k, show(got), show(want[k]))
		}
	}
	return ""
}

func firstSentence(s string) string {
	if s == "" {
		return "no description"
	}
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i]
	}
	return strings.TrimSuffix(s, ".")
}

// run is the state of one test on one transport: its variables and the
// responses of its steps.
type run struct {
	cfg       Config
	card      any
	t         *Test
	transport string
	base      string
	vars      map[string]any
}

func runTest(ctx context.Context, cfg Config, card any, t Test, transport string) (outcome, reason string) {
	if r := skipReason(cfg, card, t, transport); r != "" {
		return Skip, r
	}
	r := &run{cfg: cfg, card: card, t: &t, transport: transport, base: interfaceURL(card, transport), vars: map[string]any{}}
	for _, s := range t.Steps {
		if err := r.step(ctx, s); err != nil {
			return Fail, fmt.Sprintf("step %s: %v", s.ID, err)
		}
	}
	for i, a := range t.Assertions {
		if err := r.assert(a); err != nil {
			return Fail, fmt.Sprintf("assertion %d: %v", i, err)
		}
	}
	return Pass, ""
}

func (r *run) step(ctx context.Context, s Step) error {
	if s.DelayMS > 0 {
		select {
		case <-time.After(time.Duration(s.DelayMS) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch {
	case s.Assertion != nil:
		return r.assert(*s.Assertion)
	case s.ClientResponse != nil:
		return r.clientStep(s)
	}
	resp, err := r.repeat(ctx, s)
	if err != nil {
		return err
	}
	if err := r.expect(s, resp); err != nil {
		return err
	}
	root := resp.root()
	if s.Raw != nil {
		root = resp.body
	}
	r.vars[s.ID+".response"] = root
	for name, p := range s.Capture {
		v := resolveOne(root, p)
		if isMissing(v) {
			return fmt.Errorf("capture %s: nothing at %s in %s", name, p, show(root))
		}
		r.vars[s.ID+"."+name] = v
	}
	for i, a := range s.Assertions {
		if err := r.assert(a); err != nil {
			return fmt.Errorf("assertion %d: %w", i, err)
		}
	}
	return nil
}

// repeat performs step s, again until its repeat condition holds (§9).
func (r *run) repeat(ctx context.Context, s Step) (*response, error) {
	attempts, delay := 1, time.Second
	if s.Repeat != nil {
		attempts = 10
		if s.Repeat.MaxAttempts > 0 {
			attempts = s.Repeat.MaxAttempts
		}
		if s.Repeat.DelayMS != nil {
			delay = time.Duration(*s.Repeat.DelayMS) * time.Millisecond
		}
	}
	for i := 1; ; i++ {
		resp, err := r.perform(ctx, s)
		if err != nil || s.Repeat == nil {
			return resp, err
		}
		ok, err := until(s.Repeat.Until, resp.root())
		if err != nil || ok {
			return resp, err
		}
		if i == attempts {
			return nil, fmt.Errorf("repeat: %q still false after %d attempts (last %s)", s.Repeat.Until, attempts, show(resp.root()))
		}
		wait := delay
		switch s.Repeat.Backoff {
		case "linear":
			wait = delay * time.Duration(i)
		case "exponential":
			wait = delay << (i - 1)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// perform sends the request of a server or raw step.
func (r *run) perform(ctx context.Context, s Step) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StepTimeout)
	defer cancel()
	if s.Raw != nil {
		return r.raw(ctx, *s.Raw)
	}
	op := s.Operation
	if a, ok := operationAliases[op]; ok {
		op = a
	}
	params, err := r.interpolate(s.Params)
	if err != nil {
		return nil, err
	}
	pm, _ := params.(map[string]any)
	if pm == nil {
		pm = map[string]any{}
	}
	if op == "get_agent_card" {
		if pm["extended"] == true {
			op = "get_extended_agent_card"
		} else {
			return r.getCard(ctx)
		}
	}
	if op == "send_message" || op == "send_streaming_message" {
		pm = messageParams(pm)
	}
	if r.transport == REST {
		return r.callREST(ctx, r.base, op, pm)
	}
	return r.callRPC(ctx, r.base, op, pm)
}

func (r *run) getCard(ctx context.Context) (*response, error) {
	resp, err := r.do(ctx, http.MethodGet, r.cfg.CardURL, map[string]string{"Accept": "application/json", "A2A-Version": r.t.SpecVersion}, nil)
	if err != nil {
		return nil, err
	}
	resp.result = resp.body
	return resp, nil
}

// messageParams completes SendMessageRequest params (§4.3): a messageId
// when the message has none, and the taskId and contextId that the corpus
// puts beside the message moved into it, where A2A 1.0 has them.
func messageParams(p map[string]any) map[string]any {
	m, ok := p["message"].(map[string]any)
	if !ok {
		return p
	}
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	msg := map[string]any{}
	for k, v := range m {
		msg[k] = v
	}
	for _, k := range []string{"taskId", "contextId"} {
		if v, ok := p[k]; ok {
			if _, set := msg[k]; !set {
				msg[k] = v
			}
			delete(out, k)
		}
	}
	if _, ok := msg["messageId"]; !ok {
		msg["messageId"] = newID()
	}
	out["message"] = msg
	return out
}

// raw sends a raw wire step (§4.4) to the transport's URL joined with its
// path.
func (r *run) raw(ctx context.Context, q RawRequest) (*response, error) {
	var body []byte
	switch {
	case q.BodyRaw != nil:
		s, err := r.interpolateString(*q.BodyRaw)
		if err != nil {
			return nil, err
		}
		body = []byte(str(s))
	case q.Body != nil:
		v, err := r.interpolate(q.Body)
		if err != nil {
			return nil, err
		}
		if body, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	h := map[string]string{}
	for k, v := range q.Headers {
		s, err := r.interpolateString(v)
		if err != nil {
			return nil, err
		}
		h[k] = str(s)
	}
	p, err := r.interpolateString(q.Path)
	if err != nil {
		return nil, err
	}
	u := strings.TrimSuffix(r.base, "/") + str(p)
	if r.transport == JSONRPC && str(p) == "/" {
		u = r.base // the endpoint itself
	}
	resp, err := r.do(ctx, q.Method, u, h, body)
	if err != nil {
		return nil, err
	}
	resp.result = resp.body
	if e, ok := member(resp.body, "error").(map[string]any); ok && r.transport == JSONRPC {
		resp.err = rpcErrorView(e)
	} else if r.transport == REST && resp.status >= 400 {
		resp.err = restErrorView(resp.status, resp.body)
	}
	return resp, nil
}

// expect checks expect, expect_error and expect_stream (§6, §7).
func (r *run) expect(s Step, resp *response) error {
	if s.ExpectError != nil {
		if err := r.expectError(s.ExpectError, resp); err != nil {
			return err
		}
	}
	if s.Expect != nil {
		if err := r.expectBlock(s, resp); err != nil {
			return err
		}
	}
	if s.ExpectStream != nil {
		return r.expectStream(s.ExpectStream, resp, s.Raw != nil)
	}
	return nil
}

// expectBlock checks status and body. The corpus also writes body
// assertions straight under expect (without status or body): they are the
// body's. Status "error" is met by any A2A error; a JSON-RPC error has the
// HTTP status of its A2A type (A2A §5.4).
func (r *run) expectBlock(s Step, resp *response) error {
	exp, err := r.interpolate(s.Expect)
	if err != nil {
		return err
	}
	e := exp.(map[string]any)
	st, hasStatus := e["status"]
	b, hasBody := e["body"]
	if !hasStatus && !hasBody {
		b, hasBody = e, true
	}
	if hasStatus {
		if st == "error" {
			if resp.err == nil {
				return fmt.Errorf("expected an error, got %s", show(resp.root()))
			}
		} else {
			status := resp.status
			if s.Raw == nil && resp.err != nil && r.transport == JSONRPC {
				status = httpStatusOf(str(resp.err["code"]))
			}
			if err := check(st, float64(status), "status"); err != nil {
				return fmt.Errorf("%w (response %s)", err, show(resp.root()))
			}
		}
	}
	if !hasBody || (resp.stream && s.Raw != nil) {
		return nil
	}
	root := resp.root()
	if s.Raw != nil {
		root = resp.body
	}
	if resp.stream {
		return fmt.Errorf("expected a body, got an event stream of %d events", len(resp.events))
	}
	if err := check(b, root, "body"); err != nil {
		return err
	}
	return nil
}

// expectError checks that the step failed with the expected error; the
// corpus names the type as error_type or code.
func (r *run) expectError(spec map[string]any, resp *response) error {
	if resp.err == nil {
		if resp.stream {
			return fmt.Errorf("expected an error, got an event stream of %d events", len(resp.events))
		}
		return fmt.Errorf("expected an error, got %s", show(resp.root()))
	}
	v, err := r.interpolate(spec)
	if err != nil {
		return err
	}
	want := normalizeErrorTypes(v).(map[string]any)
	if err := check(want, resp.err, "error"); err != nil {
		return fmt.Errorf("%w (error %s)", err, show(resp.err))
	}
	return nil
}

// normalizeErrorTypes maps ACTS error type names to the A2A names.
func normalizeErrorTypes(v any) any {
	switch v := v.(type) {
	case string:
		if a, ok := errorTypeAliases[v]; ok {
			return a
		}
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalizeErrorTypes(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = normalizeErrorTypes(e)
		}
		return out
	}
	return v
}

// assert evaluates a named or inline collection assertion (§5.5).
func (r *run) assert(a NamedAssertion) error {
	src, err := r.interpolate(a.Source)
	if err != nil {
		return err
	}
	if s, ok := src.(string); ok && a.Source != "" && !strings.Contains(a.Source, "{{") {
		src = r.vars[s] // a bare variable name
	}
	if a.Path != "" {
		src = resolveOne(src, a.Path)
	}
	if a.Match != nil {
		m, err := r.interpolate(a.Match)
		if err != nil {
			return err
		}
		if err := check(m, src, "source"); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		kind string
		m    *CollectionMatch
	}{{"any", a.Any}, {"all", a.All}, {"none", a.None}} {
		if c.m == nil {
			continue
		}
		m, err := r.interpolate(c.m.Match)
		if err != nil {
			return err
		}
		if err := collection(c.kind, src, c.m.Path, m); err != nil {
			return err
		}
	}
	return nil
}

func collection(kind string, src any, p string, match any) error {
	var hits int
	var last error
	elems := resolve(src, p)
	for _, e := range elems {
		if isMissing(e) {
			continue
		}
		if err := check(match, e, p); err == nil {
			hits++
		} else {
			last = err
		}
	}
	n := 0
	for _, e := range elems {
		if !isMissing(e) {
			n++
		}
	}
	switch {
	case kind == "any" && hits == 0:
		if last == nil {
			last = errors.New("no elements")
		}
		return fmt.Errorf("any %s: no element of %d matches (%v)", p, n, last)
	case kind == "all" && hits != n:
		return fmt.Errorf("all %s: %v", p, last)
	case kind == "none" && hits > 0:
		return fmt.Errorf("none %s: %d elements match", p, hits)
	}
	return nil
}

// clientStep parses a canonical payload with the configured client and
// checks expect_parsed on the parsed result (the JSON-RPC result, or the
// error as {"error": …}).
func (r *run) clientStep(s Step) error {
	payload, err := json.Marshal(s.ClientResponse.WirePayload)
	if err != nil {
		return err
	}
	out, err := r.cfg.ParseClient(s.ClientResponse.Operation, payload)
	if err != nil {
		return fmt.Errorf("client parse: %w", err)
	}
	var parsed any
	if err := json.Unmarshal(out, &parsed); err != nil {
		return fmt.Errorf("client parse: %w", err)
	}
	want, err := r.interpolate(s.ExpectParsed)
	if err != nil {
		return err
	}
	if err := check(want, parsed, "parsed"); err != nil {
		return err
	}
	r.vars[s.ID+".response"] = parsed
	return nil
}
