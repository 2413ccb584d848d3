package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lmosnode/lmosnode/node/apiclient"
	"github.com/lmosnode/lmosnode/node/httpapi"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// pollInterval is how often invoke asks for the status of a long-running
// action.
const pollInterval = 500 * time.Millisecond

// listPage is the page size invoke & co. list the directory with to find
// a Thing by title.
const listPage = 500

func newReadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read THING PROPERTY",
		Short: "Read a property of a Thing, on this node or another",
		Long: `read reads a property of any Thing the running node knows, through the
node's HTTP binding; a Thing of another node is reached over libp2p. THING is
a thing id or the start of a title (case-insensitive). The value is printed
as JSON.`,
		Example: `  lmosnode read urn:uuid:6f1d… temperature
  lmosnode read "Weather" units`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return callBinding(cmd, args[0], http.MethodGet, "properties", args[1], "")
		},
	}
	addPublisherFlag(cmd)
	return cmd
}

func newWriteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "write THING PROPERTY JSON",
		Short: "Write a property of a Thing",
		Long:  `write sets a property of any Thing the running node knows to the JSON value given.`,
		Example: `  lmosnode write "Thermostat" target 21.5
  lmosnode write urn:dev:1 mode '"eco"'`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !json.Valid([]byte(args[2])) {
				return fmt.Errorf("value %q is not JSON (a string needs quotes: '\"text\"')", args[2])
			}
			return callBinding(cmd, args[0], http.MethodPut, "properties", args[1], args[2])
		},
	}
	addPublisherFlag(cmd)
	return cmd
}

func newInvokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invoke THING ACTION [JSON]",
		Short: "Invoke an action of a Thing and print its output",
		Long: `invoke invokes an action of any Thing the running node knows with the JSON
input given (none if absent) and prints the output as JSON. A long-running
action is followed until it ends. Interrupting invoke cancels the action.

--stream opens a streaming session instead: every output chunk (a token of
a chat agent, a progress report of a long job) is printed as one JSON line
as it comes, then the final output. With --stdin, each line of standard
input is sent as one more input chunk, and the end of input ends the
session's input.`,
		Example: `  lmosnode invoke "Weather" forecast '{"city": "Bonn"}'
  lmosnode invoke urn:dev:1 calibrate --stream
  printf '"hello"\n"world"\n' | lmosnode invoke Shouter shout --stream --stdin`,
		Args: cobra.RangeArgs(2, 3),
		RunE: runInvoke,
	}
	addPublisherFlag(cmd)
	cmd.Flags().Bool("stream", false, "open a streaming session: print each output chunk as it comes")
	cmd.Flags().Bool("stdin", false, "with --stream: send each line of standard input as one more input chunk")
	return cmd
}

func newSubscribeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "subscribe THING EVENT",
		Short: "Print the events of a Thing as they happen",
		Long: `subscribe subscribes to an event of any Thing the running node knows and
prints each event's data as one JSON line until interrupted. With
--property, EVENT names an observable property, and each new value is
printed.`,
		Example: `  lmosnode subscribe "Thermostat" alarm
  lmosnode subscribe urn:dev:1 target --property`,
		Args: cobra.ExactArgs(2),
		RunE: runSubscribe,
	}
	addPublisherFlag(cmd)
	cmd.Flags().Bool("property", false, "observe the property EVENT instead of an event")
	return cmd
}

func addPublisherFlag(cmd *cobra.Command) {
	cmd.Flags().String("publisher", "", "publisher (peer ID, did:key or the short form find prints), when several publish the Thing")
	_ = cmd.RegisterFlagCompletionFunc("publisher", cobra.NoFileCompletions)
}

// affordanceURL resolves THING and returns the binding URL of the
// affordance kind/name.
func affordanceURL(ctx context.Context, cmd *cobra.Command, d *daemon, thing, kind, name string) (string, error) {
	pub, _ := cmd.Flags().GetString("publisher")
	if pub != "" {
		var err error
		if pub, err = resolvePublisher(ctx, d, pub); err != nil {
			return "", err
		}
	}
	id, pub, err := resolveThing(ctx, d, thing, pub)
	if err != nil {
		return "", err
	}
	u := d.apiURL + "/things/" + url.PathEscape(id) + "/" + kind + "/" + url.PathEscape(name)
	if pub != "" {
		u += "?" + url.Values{"publisher": {pub}}.Encode()
	}
	return u, nil
}

// resolveThing finds the Thing arg names: the Things whose id is arg,
// else those whose title starts with arg (case-insensitive); exactly one
// publisher's Thing must match.
func resolveThing(ctx context.Context, d *daemon, arg, publisher string) (id, pub string, err error) {
	var exact, prefix []apiclient.Found
	q := apiclient.FindQuery{Publisher: publisher, Limit: listPage}
	for {
		res, err := d.api.Find(ctx, q)
		if err != nil {
			return "", "", err
		}
		for _, f := range res.Things {
			switch {
			case f.TD.ID == arg:
				exact = append(exact, f)
			case strings.HasPrefix(strings.ToLower(f.TD.Title), strings.ToLower(arg)):
				prefix = append(prefix, f)
			}
		}
		if !res.More || len(res.Things) == 0 {
			break
		}
		// By cursor: a page cut short (its TDs over the node's page
		// bytes) continues after its last TD; by offset from a node
		// that has no cursors.
		if q.Cursor = res.Next; q.Cursor == "" {
			q.Offset += len(res.Things)
		}
	}
	found := exact
	if len(found) == 0 {
		found = prefix
	}
	switch len(found) {
	case 0:
		return "", "", notFound(fmt.Errorf("no Thing with id or title prefix %q in the node's directory (see 'lmosnode find')", arg))
	case 1:
		return found[0].TD.ID, found[0].Publisher.String(), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%q matches %d Things; give the id (and --publisher):", arg, len(found))
	for _, f := range found {
		fmt.Fprintf(&b, "\n  %s  %s  publisher %s", f.TD.ID, f.TD.Title, f.Publisher)
	}
	return "", "", errors.New(b.String())
}

// callBinding makes one request-reply call of the HTTP binding and prints
// the answer's body.
func callBinding(cmd *cobra.Command, thing, method, kind, name, body string) error {
	return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
		u, err := affordanceURL(ctx, cmd, d, thing, kind, name)
		if err != nil {
			return err
		}
		resp, err := d.doJSON(ctx, method, u, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return printAnswer(cmd.OutOrStdout(), resp)
	})
}

func (d *daemon) doJSON(ctx context.Context, method, u, body string) (*http.Response, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return d.http.Do(req)
}

// printAnswer prints a 2xx body (nothing for 204) or returns the problem.
func printAnswer(w io.Writer, resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return problemError(resp.StatusCode, b)
	}
	if len(b) > 0 {
		_, err = fmt.Fprintln(w, strings.TrimSpace(string(b)))
	}
	return err
}

// problemError turns an RFC 7807 body, what a Thing answered, into an
// error (a thingAnswer).
func problemError(status int, body []byte) error {
	var p lmosproto.Problem
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != "") {
		if p.Status == 0 {
			p.Status = status
		}
		return thingAnswer(&p)
	}
	return fmt.Errorf("%d %s: %s", status, http.StatusText(status), strings.TrimSpace(string(body)))
}

// thingAnswer classifies a Thing's failure now, by its status: it is the
// Thing's (a backend's 401 is not about the node's token), so explain
// leaves it as it is.
func thingAnswer(p *lmosproto.Problem) error {
	return &exitError{code: exitCode(p), err: p}
}

// actionState is the status body of a long-running action.
type actionState struct {
	Status string             `json:"status"`
	Output json.RawMessage    `json:"output,omitempty"`
	Error  *lmosproto.Problem `json:"error,omitempty"`
}

func runInvoke(cmd *cobra.Command, args []string) error {
	input := ""
	if len(args) == 3 {
		input = args[2]
		if !json.Valid([]byte(input)) {
			return fmt.Errorf("input %q is not JSON (a string needs quotes: '\"text\"')", input)
		}
	}
	stream, _ := cmd.Flags().GetBool("stream")
	stdin, _ := cmd.Flags().GetBool("stdin")
	if stdin && !stream {
		return errors.New("--stdin needs --stream")
	}
	return callDaemon(cmd, requestTimeout, func(ctx context.Context, d *daemon) error {
		u, err := affordanceURL(ctx, cmd, d, args[0], "actions", args[1])
		if err != nil {
			return err
		}
		if stream {
			return streamSession(cmd, d, u, args[1], input, stdin)
		}
		resp, err := d.doJSON(ctx, http.MethodPost, u, input)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return printAnswer(cmd.OutOrStdout(), resp)
		}
		// Long-running: follow the status URL until the action ends.
		loc, err := resp.Location()
		if err != nil {
			return fmt.Errorf("action %q: 201 without a status URL: %w", args[1], err)
		}
		var st actionState
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return fmt.Errorf("action %q: status: %w", args[1], err)
		}
		return followAction(cmd, d, loc.String(), args[1], st)
	})
}

// streamSession runs a streaming session: the input, then (with stdin)
// every line of standard input as a chunk; each output chunk is printed
// as it comes.
func streamSession(cmd *cobra.Command, d *daemon, u, name, input string, stdin bool) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	pr, pw := io.Pipe()
	go func() {
		if input != "" {
			if _, err := io.WriteString(pw, input+"\n"); err != nil {
				return
			}
		}
		if stdin {
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" {
					continue
				}
				if !json.Valid([]byte(line)) {
					pw.CloseWithError(fmt.Errorf("stdin line %q is not JSON", line))
					return
				}
				if _, err := io.WriteString(pw, line+"\n"); err != nil {
					return
				}
			}
		}
		_ = pw.Close() // a pipe closes without error
	}()
	defer func() { _ = pr.Close() }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("action %q: %w", name, ctx.Err())
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return printAnswer(cmd.OutOrStdout(), resp)
	}
	out := cmd.OutOrStdout()
	done, err := readSSE(resp.Body, func(event, data string) (bool, error) {
		switch event {
		case "failed":
			return true, problemError(http.StatusBadGateway, []byte(data))
		case "completed":
			if data != "" {
				fmt.Fprintln(out, data)
			}
			return true, nil
		}
		fmt.Fprintln(out, data)
		return false, nil
	})
	if done {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("action %q: %w", name, ctx.Err())
	}
	return fmt.Errorf("action %q: the session ended without a final status", name)
}

// followAction polls a long-running action until it ends; interrupting
// the command cancels the action.
func followAction(cmd *cobra.Command, d *daemon, loc, name string, st actionState) error {
	out := cmd.OutOrStdout()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		switch st.Status {
		case "completed":
			if len(st.Output) > 0 {
				fmt.Fprintln(out, string(st.Output))
			}
			return nil
		case "failed":
			if st.Error != nil {
				return thingAnswer(st.Error)
			}
			return fmt.Errorf("action %q failed: %s", name, st.Output)
		case "cancelled":
			return fmt.Errorf("action %q was cancelled", name)
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			defer cancel()
			if resp, err := d.doJSON(cctx, http.MethodDelete, loc, ""); err == nil {
				resp.Body.Close()
			}
			return fmt.Errorf("action %q: %w (cancelled it)", name, ctx.Err())
		case <-time.After(pollInterval):
		}
		resp, err := d.doJSON(ctx, http.MethodGet, loc, "")
		if err != nil {
			continue // ctx done: cancelled above on the next turn
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return problemError(resp.StatusCode, b)
		}
		st = actionState{}
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("action %q: status: %w", name, err)
		}
	}
}

func runSubscribe(cmd *cobra.Command, args []string) error {
	kind := "events"
	if prop, _ := cmd.Flags().GetBool("property"); prop {
		kind = "properties"
	}
	return callDaemon(cmd, requestTimeout, func(rctx context.Context, d *daemon) error {
		u, err := affordanceURL(rctx, cmd, d, args[0], kind, args[1])
		if err != nil {
			return err
		}
		if kind == "properties" {
			u = strings.Replace(u, "/properties/"+url.PathEscape(args[1]), "/properties/"+url.PathEscape(args[1])+"/observe", 1)
		}
		// The subscription runs until interrupted: on the command's
		// context, not the request's.
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		out := cmd.OutOrStdout()
		return d.follow(ctx, u, fmt.Sprintf("%q", args[1]), func(resp *http.Response) error {
			return printAnswer(out, resp)
		}, func(event, data string) (bool, error) {
			if event == "error" {
				return true, problemError(http.StatusBadGateway, []byte(data))
			}
			fmt.Fprintln(out, data)
			return false, nil
		})
	})
}

// follow reads the SSE stream at u, calling on for each event until on
// says it is done, the node ends the stream, or ctx ends (the normal end
// of a subscription: interrupted). refused answers a response other than
// 200. what names the stream in errors.
func (d *daemon) follow(ctx context.Context, u, what string, refused func(*http.Response) error, on func(event, data string) (bool, error)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := d.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return refused(resp)
	}
	done, err := readSSE(resp.Body, on)
	if done {
		return err
	}
	if ctx.Err() != nil {
		return nil // interrupted: the normal end
	}
	if err != nil {
		return fmt.Errorf("subscription to %s ended: %w", what, err)
	}
	return fmt.Errorf("subscription to %s ended by the node", what)
}

// maxEvent bounds one server-sent event the CLI reads.
const maxEvent = 8 << 20

// readSSE reads a text/event-stream and calls fn with each event's type
// ("" for plain data events) and its data (multi-line data joined). It
// stops when fn reports done (returning fn's error) or the stream ends
// (returning the read error, if any, with done false).
func readSSE(r io.Reader, fn func(event, data string) (done bool, err error)) (bool, error) {
	for ev, err := range httpapi.ReadEvents(r, maxEvent) {
		if err != nil {
			return false, err
		}
		if done, err := fn(ev.Type, ev.Data); done {
			return true, err
		}
	}
	return false, nil
}
