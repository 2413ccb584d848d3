package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/examples/demo"
	"github.com/lmosnode/lmosnode/node"
	"github.com/lmosnode/lmosnode/node/config"
	"github.com/lmosnode/lmosnode/node/homedir"
	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// demoStepTimeout bounds each step of the demo.
const demoStepTimeout = 15 * time.Second

func newDemoCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a few nodes on this machine with example agents and show every interaction pattern",
		Long: `demo starts a small federation inside this one process, on 127.0.0.1 only
(mDNS off, no bootstrap peers: nothing leaves this machine), with the example
agents and tools of package examples/demo:

  node 1  WeatherAgent (lmos:Agent)
  node 2  ChatAgent (lmos:Agent) and Geocoder (lmos:Tool)
  node 3  a pure consumer

It links the nodes, waits until node 3's directory lists every Thing, then
runs each LMOS interaction pattern once from node 3 and prints what happens.
Then it leaves the nodes running, with node 3's HTTP API on --api-port, so
that you can browse the Thing Descriptions, until Ctrl-C. The nodes' homes
are in a temporary directory removed at exit.`,
		Example: `  lmosnode demo
  lmosnode demo --api-port 0 --keep=false`,
		Args: cobra.NoArgs,
		RunE: runDemo,
	}
	f := cmd.Flags()
	f.Int("nodes", 3, "number of nodes (at least 3; nodes beyond the third are further consumers)")
	f.Int("api-port", 5080, "port of node 3's HTTP API on 127.0.0.1 (0: any free port)")
	f.Bool("keep", true, "keep the nodes running after the demo until Ctrl-C")
	return cmd
}

func runDemo(cmd *cobra.Command, _ []string) (err error) {
	f := cmd.Flags()
	count, _ := f.GetInt("nodes")
	apiPort, _ := f.GetInt("api-port")
	keep, _ := f.GetBool("keep")
	if count < 3 {
		return fmt.Errorf("--nodes %d: the demo needs at least 3", count)
	}
	if apiPort < 0 || apiPort > 65535 {
		return fmt.Errorf("--api-port %d: not a port", apiPort)
	}
	log, err := logger(cmd)
	if err != nil {
		return err
	}
	if !f.Changed("log-level") {
		// the demo's own output tells the story; the nodes' logs only on request
		log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelError}))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tmp, err := os.MkdirTemp("", "lmosnode-demo-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()

	out := cmd.OutOrStdout()
	d := &demoRun{out: out, start: time.Now()}
	fmt.Fprintf(out, "lmosnode demo: %d nodes in this process, on 127.0.0.1 only (mDNS off, no bootstrap peers)\n", count)
	fmt.Fprintf(out, "homes in %s (removed at exit)\n\n", tmp)

	nodes := make([]*node.Node, 0, count)
	defer func() {
		// close in reverse order, consumers first
		for i := len(nodes) - 1; i >= 0; i-- {
			err = errors.Join(err, nodes[i].Close())
		}
	}()
	if err := d.startNodes(ctx, &nodes, tmp, count, apiPort, log); err != nil {
		return err
	}
	weather, err := d.register(nodes)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	t0 := time.Now() // discovery is timed from the first connect
	if err := d.link(ctx, nodes); err != nil {
		return err
	}
	if done, err := d.discover(ctx, nodes, t0); done || err != nil {
		return err
	}
	if err := d.patterns(ctx, nodes, weather); err != nil {
		return err
	}
	printAPI(out, nodes[2])
	if !keep {
		fmt.Fprintln(out, "demo done (--keep=false): shutting down")
		return nil
	}
	fmt.Fprintln(out, "\nthe nodes keep running; press Ctrl-C to stop")
	<-ctx.Done()
	stop()
	fmt.Fprintln(out, "shutting down")
	return nil
}

// startNodes starts count nodes with homes in tmp, node 3's API on
// apiPort, appending each to nodes as it starts (the caller closes them).
func (d *demoRun) startNodes(ctx context.Context, nodes *[]*node.Node, tmp string, count, apiPort int, log *slog.Logger) error {
	for i := range count {
		cfg := config.Loopback(filepath.Join(tmp, fmt.Sprintf("node%d", i+1)))
		if i == 2 {
			cfg.API = fmt.Sprintf("127.0.0.1:%d", apiPort)
		}
		cfg.DHTMode = config.DHTModeServer
		cfg.MQTT = ""
		if _, err := homedir.Init(cfg.Home); err != nil {
			return err
		}
		n, err := node.New(cfg, node.WithLogger(log.With("node", i+1)))
		if err != nil {
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		startCtx, cancel := context.WithTimeout(ctx, startTimeout)
		err = n.Start(startCtx)
		cancel()
		if err != nil {
			_ = n.Close()
			if i == 2 && errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("node %d: %w\n(is another demo or node using port %d? 'lmosnode demo --api-port 0' picks a free port)", i+1, err, apiPort)
			}
			return fmt.Errorf("node %d: %w", i+1, err)
		}
		*nodes = append(*nodes, n)
		d.printf("node %d up: peer %s, API %s", i+1, short(n.PeerID()), n.APIAddr())
	}

	return nil
}

// register registers the example Things: the WeatherAgent on node 1, the
// ChatAgent and the Geocoder on node 2.
func (d *demoRun) register(nodes []*node.Node) (*demo.Weather, error) {
	weather, chat, geocoder := demo.NewWeather(), demo.NewChat(), demo.NewGeocoder()
	for _, r := range []struct {
		n  int
		ex demo.Example
	}{{0, weather.Example}, {1, chat}, {1, geocoder}} {
		if _, err := nodes[r.n].Register(r.ex.TD, r.ex.Thing); err != nil {
			return nil, err
		}
		d.printf("node %d registered %s (%s) %s", r.n+1, r.ex.TD.Title, typesOf(r.ex.TD), r.ex.TD.ID)
	}
	return weather, nil
}

// link connects node 2 to node 1, then every consumer to nodes 1 and 2.
func (d *demoRun) link(ctx context.Context, nodes []*node.Node) error {
	links := [][2]int{{1, 0}}
	for i := 2; i < len(nodes); i++ {
		links = append(links, [2]int{i, 0}, [2]int{i, 1})
	}
	for _, l := range links {
		a, b := nodes[l[0]], nodes[l[1]]
		cctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
		err := a.Host().Connect(cctx, peer.AddrInfo{ID: b.PeerID(), Addrs: b.Host().Addrs()})
		cancel()
		if err != nil {
			return fmt.Errorf("connect node %d to node %d: %w", l[0]+1, l[1]+1, err)
		}
		d.printf("connect: node %d → node %d at %s", l[0]+1, l[1]+1, b.Host().Addrs()[0])
	}

	return nil
}

// discover waits until every consumer's directory lists the example
// Things, timed from t0; done is set when ctx ended first.
func (d *demoRun) discover(ctx context.Context, nodes []*node.Node, t0 time.Time) (done bool, err error) {
	consumer := nodes[2]
	ids := []string{demo.WeatherID, demo.ChatID, demo.GeocoderID}
	seen := map[string]bool{}
	for len(seen) < len(ids) {
		for _, id := range ids {
			if !seen[id] && len(consumer.Directory().Lookup(id)) > 0 {
				seen[id] = true
				e := consumer.Directory().Lookup(id)[0]
				d.printf("discovery: node 3 learned %s (%s) from publisher %s, %s after the first connect", e.Title, id, short(e.Publisher), ms(time.Since(t0)))
			}
		}
		if len(seen) == len(ids) {
			break
		}
		if time.Since(t0) > demoStepTimeout {
			return false, fmt.Errorf("discovery: node 3 knows %d of %d Things after %s", len(seen), len(ids), demoStepTimeout)
		}
		select {
		case <-ctx.Done():
			return true, nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	d.printf("discovery: node 3's directory lists all %d Things, %s after the first connect", len(ids), ms(time.Since(t0)))
	for i := 3; i < len(nodes); i++ { // further consumers
		for _, id := range ids {
			for len(nodes[i].Directory().Lookup(id)) == 0 {
				if time.Since(t0) > demoStepTimeout {
					return false, fmt.Errorf("discovery: node %d does not know %s after %s", i+1, id, demoStepTimeout)
				}
				select {
				case <-ctx.Done():
					return true, nil
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		d.printf("discovery: node %d's directory lists all %d Things, %s after the first connect", i+1, len(ids), ms(time.Since(t0)))
	}

	return false, nil
}

// printAPI tells where the consumer's directory API is.
func printAPI(out io.Writer, consumer *node.Node) {
	api := "http://" + consumer.APIAddr()
	fmt.Fprintf(out, "\nnode 3's web console: %s/\n", api)
	fmt.Fprintf(out, "node 3's API (Thing Description Directory):\n")
	fmt.Fprintf(out, "  %s/things\n", api)
	fmt.Fprintf(out, "  %s/things/%s\n", api, url.PathEscape(demo.WeatherID))
	fmt.Fprintf(out, "  %s/.well-known/wot\n", api)
	fmt.Fprintf(out, "  %s/things/%s/properties/modelConfiguration (readProperty over HTTP)\n", api, url.PathEscape(demo.WeatherID))
	fmt.Fprintf(out, "  or: lmosnode --api %s read %s modelConfiguration\n", api, demo.WeatherID)
}

// demoRun prints the steps of a demo run.
type demoRun struct {
	mu    sync.Mutex // serialises printf
	out   io.Writer
	start time.Time
}

func (d *demoRun) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "[%6s] %s\n", ms(time.Since(d.start)), fmt.Sprintf(format, args...))
}

func ms(t time.Duration) string { return t.Round(time.Millisecond).String() }

func short(p peer.ID) string { return lmosproto.ShortPublisher(p) }

func typesOf(td *lmosproto.TD) string {
	if len(td.Types) == 0 {
		return "Thing"
	}
	return fmt.Sprint(td.Types)
}

func request(thingID string, typ lmosproto.MessageType, name string, input any) *lmosproto.Message {
	m := lmosproto.NewMessage(thingID, typ)
	m.Name = name
	if input != nil {
		v, err := lmosproto.ValueOf(input)
		if err == nil {
			if typ == lmosproto.MsgWriteProperty {
				m.Data = v
			} else {
				m.Input = v
			}
		}
	}
	return m
}

// describe renders one reply of the Thing for the demo's output.
func describe(m *lmosproto.Message) string {
	switch m.Type {
	case lmosproto.MsgActionStatus:
		if m.Output.Present() {
			return fmt.Sprintf("actionStatus %s %s", m.Status, m.Output)
		}
		return "actionStatus " + m.Status
	case lmosproto.MsgPropertyReading:
		return fmt.Sprintf("propertyReading %s = %s", m.Name, m.Value)
	case lmosproto.MsgEvent:
		return fmt.Sprintf("event %s %s", m.Name, m.Data)
	case lmosproto.MsgError:
		return fmt.Sprintf("error %s %s: %s", m.Status, m.Title, m.Detail)
	}
	return string(m.Type)
}

// call runs a request to its terminal reply and returns every reply.
func call(ctx context.Context, inv interact.Invoker, req *lmosproto.Message) ([]*lmosproto.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
	defer cancel()
	s, err := inv.Invoke(ctx, req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	var all []*lmosproto.Message
	for m := range s.Replies() {
		all = append(all, m)
		if m.Type == lmosproto.MsgError {
			return all, errors.New(describe(m))
		}
	}
	if ctx.Err() != nil {
		return all, fmt.Errorf("%s %s: %w", req.Type, req.Name, ctx.Err())
	}
	return all, nil
}

// patterns runs each LMOS interaction pattern once from node 3.
func (d *demoRun) patterns(ctx context.Context, nodes []*node.Node, weather *demo.Weather) error {
	inv := nodes[2].Invoker()
	section := func(title string) {
		d.mu.Lock()
		defer d.mu.Unlock()
		fmt.Fprintf(d.out, "\n== %s\n", title)
	}

	// 1. one-way
	section("pattern 1: one-way (invokeAction with oneWay, no reply)")
	req := request(demo.WeatherID, lmosproto.MsgInvokeAction, "recordFeedback", map[string]int{"rating": 5})
	req.OneWay = true
	s, err := inv.Invoke(ctx, req)
	if err != nil {
		return fmt.Errorf("pattern 1: %w", err)
	}
	n := 0
	for range s.Replies() {
		n++
	}
	_ = s.Close()
	d.printf("node 3 → WeatherAgent.recordFeedback %s oneWay: %d replies (none expected)", req.Input, n)
	var count string
	deadline := time.Now().Add(demoStepTimeout)
	for count != "1" {
		r, err := call(ctx, inv, request(demo.WeatherID, lmosproto.MsgReadProperty, "feedbackCount", nil))
		if err != nil {
			return fmt.Errorf("pattern 1: read feedbackCount: %w", err)
		}
		count = r[len(r)-1].Value.String()
		if time.Now().After(deadline) {
			return fmt.Errorf("pattern 1: feedbackCount is %s after %s", count, demoStepTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.printf("readProperty feedbackCount = %s: the one-way action ran at the owner", count)
	d.printf("pattern 1 (one-way): ok")

	// 2. request-reply
	section("pattern 2: request-reply (readProperty, writeProperty, invokeAction)")
	for _, r := range []*lmosproto.Message{
		request(demo.WeatherID, lmosproto.MsgReadProperty, "modelConfiguration", nil),
		request(demo.WeatherID, lmosproto.MsgWriteProperty, "modelConfiguration", map[string]any{"modelName": "canned-1", "temperature": 0.7}),
		request(demo.WeatherID, lmosproto.MsgInvokeAction, "getWeather", map[string]string{"place": "Bonn"}),
		request(demo.GeocoderID, lmosproto.MsgInvokeAction, "geocode", map[string]string{"place": "Bonn"}),
	} {
		what := fmt.Sprintf("node 3 → %s %s", r.Type, r.Name)
		if r.Data.Present() {
			what += " " + r.Data.String()
		}
		if r.Input.Present() {
			what += " " + r.Input.String()
		}
		t := time.Now()
		replies, err := call(ctx, inv, r)
		if err != nil {
			return fmt.Errorf("pattern 2: %s: %w", what, err)
		}
		d.printf("%s ⇒ %s (%s)", what, describe(replies[len(replies)-1]), ms(time.Since(t)))
	}
	d.printf("pattern 2 (request-reply): ok")

	// 3. one request, several responses
	section("pattern 3: one request → multiple responses (long-running forecastWeek)")
	if err := d.forecast(ctx, inv); err != nil {
		return fmt.Errorf("pattern 3: %w", err)
	}
	d.printf("pattern 3 (request → multiple responses): ok")

	// 4. event notification
	section("pattern 4: event notification (subscribeEvent alert, owner emits, unsubscribe)")
	if err := d.events(ctx, []*node.Node{nodes[2]}, []int{3}, weather, true); err != nil {
		return fmt.Errorf("pattern 4: %w", err)
	}
	d.printf("pattern 4 (event notification): ok")

	// 5. publish-subscribe
	section("pattern 5: publish-subscribe (one event, many subscribers)")
	d.printf("pattern 5 via gossip fan-out: the owner publishes each event once on the Thing's topic %s<publisher>/<thing>; every subscribing node receives it from the topic, none holds a stream to the owner", lmosproto.TopicEventsPrefix)
	subs, idx := []*node.Node{nodes[1]}, []int{2}
	for i := 2; i < len(nodes); i++ {
		subs, idx = append(subs, nodes[i]), append(idx, i+1)
	}
	if err := d.events(ctx, subs, idx, weather, false); err != nil {
		return fmt.Errorf("pattern 5: %w", err)
	}
	d.printf("pattern 5 (publish-subscribe, via gossip fan-out): ok")

	// 6. streaming
	section("pattern 6: request-stream / response-stream (chat session)")
	if err := d.chat(ctx, inv); err != nil {
		return fmt.Errorf("pattern 6: %w", err)
	}
	d.printf("pattern 6 (request-stream/response-stream): ok")
	return nil
}

func (d *demoRun) forecast(ctx context.Context, inv interact.Invoker) error {
	ctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
	defer cancel()
	req := request(demo.WeatherID, lmosproto.MsgInvokeAction, "forecastWeek", map[string]string{"place": "Berlin"})
	s, err := inv.Invoke(ctx, req)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	d.printf("node 3 → invokeAction forecastWeek %s", req.Input)
	if err := s.Send(ctx, lmosproto.NewMessage(demo.WeatherID, lmosproto.MsgQueryAction)); err != nil {
		return fmt.Errorf("queryAction: %w", err)
	}
	d.printf("node 3 → queryAction (right away)")
	running, final := 0, ""
	for m := range s.Replies() {
		d.printf("  ⇐ %s", describe(m))
		switch {
		case m.Type == lmosproto.MsgError:
			return errors.New(describe(m))
		case m.Type == lmosproto.MsgActionStatus && m.Status == lmosproto.ActionRunning:
			running++
		case m.Type == lmosproto.MsgActionStatus && m.EndsAction():
			final = m.Status
		}
	}
	if final != lmosproto.ActionCompleted {
		return fmt.Errorf("ended %q, want completed (%v)", final, ctx.Err())
	}
	d.printf("%d progress reports, then completed", running)
	return nil
}

// events subscribes each of subs to the weather agent's alert event, makes
// the owner emit alerts until every subscriber has received the same one,
// and ends the subscriptions (with unsubscribeEvent if unsubscribe).
func (d *demoRun) events(ctx context.Context, subs []*node.Node, names []int, weather *demo.Weather, unsubscribe bool) error {
	ctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
	defer cancel()
	type got struct {
		i int
		m *lmosproto.Message
	}
	ch := make(chan got)
	sessions := make([]interact.Session, 0, len(subs))
	done := make(chan struct{}, len(subs))
	ended := 0 // readers that have returned
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
		for ; ended < len(sessions); ended++ {
			<-done
		}
	}()
	for i, n := range subs {
		s, err := n.Invoker().Invoke(ctx, request(demo.WeatherID, lmosproto.MsgSubscribeEvent, "alert", nil))
		if err != nil {
			return err
		}
		sessions = append(sessions, s)
		d.printf("node %d → subscribeEvent alert", names[i])
		go func() {
			defer func() { done <- struct{}{} }()
			for m := range s.Replies() {
				select {
				case ch <- got{i, m}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	// The subscriptions reach the owner asynchronously: emit an alert
	// every 100 ms until one has reached every subscriber.
	bySeq := map[int]map[int]bool{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	seq := 0
	emit := func() {
		seq++
		weather.Alert(seq, "Bonn", "thunderstorm warning")
	}
	common := 0
	for common == 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("not every subscriber got an alert: %w", ctx.Err())
		case <-tick.C:
			emit()
		case g := <-ch:
			if g.m.Type != lmosproto.MsgEvent {
				return fmt.Errorf("node %d: %s", names[g.i], describe(g.m))
			}
			var data struct {
				Seq int `json:"seq"`
			}
			if err := g.m.Data.Decode(&data); err != nil {
				return err
			}
			d.printf("  node %d ⇐ %s", names[g.i], describe(g.m))
			if bySeq[data.Seq] == nil {
				bySeq[data.Seq] = map[int]bool{}
			}
			bySeq[data.Seq][g.i] = true
			if len(bySeq[data.Seq]) == len(subs) {
				common = data.Seq
			}
		}
	}
	note := ""
	if common > 1 {
		note = fmt.Sprintf(" (alerts #1–#%d went out before every subscription had reached the owner)", common-1)
	}
	d.printf("owner node 1 emitted alert #%d, which reached all %d subscriber(s)%s", common, len(subs), note)
	if !unsubscribe {
		return nil
	}
	for i, s := range sessions {
		if err := s.Send(ctx, lmosproto.NewMessage(demo.WeatherID, lmosproto.MsgUnsubscribeEvent)); err != nil {
			return fmt.Errorf("unsubscribeEvent: %w", err)
		}
		d.printf("node %d → unsubscribeEvent alert", names[i])
	}
	// drain until every session has ended
	for ended < len(sessions) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("subscription did not end after unsubscribeEvent: %w", ctx.Err())
		case <-ch:
		case <-done:
			ended++
		}
	}
	d.printf("subscription ended")
	return nil
}

func (d *demoRun) chat(ctx context.Context, inv interact.Invoker) error {
	ctx, cancel := context.WithTimeout(ctx, demoStepTimeout)
	defer cancel()
	req := request(demo.ChatID, lmosproto.MsgInvokeAction, "chat", "hello from node 3")
	req.Stream = true
	s, err := inv.Invoke(ctx, req)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	d.printf("node 3 → invokeAction chat stream=true %s", req.Input)
	// Input may flow once the Thing has accepted the session (an
	// actionStatus running with stream and no output).
	errc := make(chan error, 1)
	sending := false
	send := func() {
		for _, chunk := range []string{"how is the weather", "in Bonn today"} {
			m := lmosproto.NewMessage(demo.ChatID, lmosproto.MsgStreamInput)
			m.Input = lmosproto.StringValue(chunk)
			if err := s.Send(ctx, m); err != nil {
				errc <- fmt.Errorf("streamInput: %w", err)
				return
			}
			d.printf("node 3 → streamInput %q", chunk)
		}
		err := s.Send(ctx, lmosproto.NewMessage(demo.ChatID, lmosproto.MsgStreamEnd))
		if err == nil {
			d.printf("node 3 → streamEnd")
		}
		errc <- err
	}
	var tokens []string
	final := ""
	for m := range s.Replies() {
		switch {
		case m.Type == lmosproto.MsgError:
			return errors.New(describe(m))
		case m.EndsAction():
			final = m.Status
		case m.Output.Present():
			var tok string
			if err := m.Output.Decode(&tok); err != nil {
				return err
			}
			tokens = append(tokens, tok)
			d.printf("  ⇐ token %q", tok)
		case m.Stream && !sending:
			d.printf("  ⇐ actionStatus %s stream=true: the chat agent accepted the session", m.Status)
			sending = true
			go send()
		}
	}
	if !sending {
		return fmt.Errorf("the session was never accepted (ended %q)", final)
	}
	if err := <-errc; err != nil {
		return err
	}
	if final != lmosproto.ActionCompleted {
		return fmt.Errorf("session ended %q, want completed (%v)", final, ctx.Err())
	}
	d.printf("session completed: %d tokens streamed back", len(tokens))
	return nil
}
