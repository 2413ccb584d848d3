package a2abridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/lmosnode/lmosnode/node/interact"
	lmosproto "github.com/lmosnode/lmosnode/proto"
)

// task is an A2A task: one LMOS invocation (invokeAction) of an agent's
// action that the bridge follows for its client. Its events are kept in
// order, so that a stream (SendStreamingMessage, SubscribeToTask) reads
// every one of them whenever it joined.
type task struct {
	id, contextID string
	thingID       string
	action        string
	sess          interact.Session
	cancel        context.CancelFunc
	initial       Task            // the task as created, before any event
	metadata      json.RawMessage // the task's metadata: the agent and action
	// session is set for an LMOS streaming session: further messages are
	// its input, of the action affordance.
	session    bool
	affordance *lmosproto.ActionAffordance
	inputMu    sync.Mutex // serialises the session's input; guards inputEnded
	inputEnded bool

	mu       sync.Mutex
	status   TaskStatus
	arts     []Artifact
	history  []Message
	events   []StreamResponse // the events after the initial task, in order, from event number dropped on
	dropped  int              // the number of early events no longer kept (maxEvents)
	changed  chan struct{}    // closed and replaced on every new event
	done     chan struct{}    // closed when the task reached a terminal state
	settled  chan struct{}    // closed when done, or when the agent accepted the session
	accepted bool
	finished time.Time
}

func newTask(ctxID, thingID, action string, req Message) *task {
	t := &task{id: uuid.NewString(), contextID: ctxID, thingID: thingID, action: action,
		changed: make(chan struct{}), done: make(chan struct{}), settled: make(chan struct{})}
	t.status = TaskStatus{State: StateSubmitted, Timestamp: now()}
	req.TaskID, req.ContextID = t.id, ctxID
	t.history = []Message{req}
	t.metadata, _ = json.Marshal(map[string]string{"lmos:thingId": thingID, "lmos:action": action}) // strings only
	t.initial = t.snapshotLocked(nil)
	return t
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// snapshot returns the task as A2A shows it, with at most historyLength
// messages of its history (nil: all).
func (t *task) snapshot(historyLength *int) Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(historyLength)
}

func (t *task) snapshotLocked(historyLength *int) Task {
	s := Task{ID: t.id, ContextID: t.contextID, Status: t.status, Artifacts: cloneArtifacts(t.arts)}
	h := t.history
	if historyLength != nil && *historyLength < len(h) {
		h = h[len(h)-max(*historyLength, 0):]
	}
	s.History = append([]Message(nil), h...)
	s.Metadata = t.metadata
	return s
}

func cloneArtifacts(as []Artifact) []Artifact {
	out := make([]Artifact, len(as))
	for i, a := range as {
		a.Parts = append([]Part(nil), a.Parts...)
		out[i] = a
	}
	return out
}

// What a task keeps of a long-running invocation or session: the latest
// events (a stream that falls further behind skips the older ones), the
// latest parts of each artifact and the latest messages of its history.
const (
	maxEvents  = 4096
	maxParts   = 4096
	maxHistory = 256
)

// keepLast returns the last n elements of s.
func keepLast[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return append(s[:0:0], s[len(s)-n:]...)
}

// emitLocked appends ev to the events and wakes the streams.
func (t *task) emitLocked(ev StreamResponse) {
	t.events = append(t.events, ev)
	if len(t.events) > 2*maxEvents { // drop in halves: amortised O(1)
		t.dropped += len(t.events) - maxEvents
		t.events = keepLast(t.events, maxEvents)
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// eventCount is the number of events emitted so far.
func (t *task) eventCountLocked() int { return t.dropped + len(t.events) }

// addHistoryLocked appends m to the history.
func (t *task) addHistoryLocked(m Message) {
	t.history = append(t.history, m)
	if len(t.history) > 2*maxHistory {
		t.history = keepLast(t.history, maxHistory)
	}
}

// setStatusLocked moves the task to state with an optional agent message
// and emits the status update.
func (t *task) setStatusLocked(state string, msg *Message) {
	if terminal(t.status.State) {
		return
	}
	if msg != nil {
		msg.TaskID, msg.ContextID = t.id, t.contextID
		t.addHistoryLocked(*msg)
	}
	t.status = TaskStatus{State: state, Message: msg, Timestamp: now()}
	t.emitLocked(StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: t.id, ContextID: t.contextID, Status: t.status}})
	if terminal(state) {
		t.finished = time.Now()
		close(t.done)
		t.settleLocked()
	}
}

// Artifact ids: the chunks of a running invocation (LMOS "one request,
// many responses", actionStatus running with output) are appended to one
// artifact; the final output is an artifact of its own.
const (
	artifactStream = "stream"
	artifactResult = "result"
)

// addArtifactLocked adds parts to the artifact id (appending to it when
// it exists) and emits the artifact update.
func (t *task) addArtifactLocked(id string, parts []Part, last bool) {
	ev := &TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.contextID, LastChunk: last,
		Artifact: Artifact{ArtifactID: id, Name: id, Parts: parts}}
	found := false
	for i := range t.arts {
		if t.arts[i].ArtifactID == id {
			t.arts[i].Parts = append(t.arts[i].Parts, parts...)
			if len(t.arts[i].Parts) > 2*maxParts {
				t.arts[i].Parts = keepLast(t.arts[i].Parts, maxParts)
			}
			ev.Append, found = true, true
		}
	}
	if !found {
		t.arts = append(t.arts, Artifact{ArtifactID: id, Name: id, Parts: append([]Part(nil), parts...)})
	}
	t.emitLocked(StreamResponse{ArtifactUpdate: ev})
}

// apply records an LMOS reply of the invocation.
func (t *task) apply(m *lmosproto.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch m.Type {
	case lmosproto.MsgError:
		p := m.Problem()
		t.setStatusLocked(StateFailed, agentMessage(problemText(p), problemData(p)))
	case lmosproto.MsgActionStatus:
		switch m.Status {
		case lmosproto.ActionPending:
			// Accepted, not started: the task stays submitted.
		case lmosproto.ActionRunning:
			if m.Stream {
				t.settleLocked() // the session is accepted
			}
			if t.status.State != StateWorking {
				t.setStatusLocked(StateWorking, nil)
			}
			if m.Output.Present() {
				t.addArtifactLocked(artifactStream, partsOf(m.Output), false)
			}
		case lmosproto.ActionCompleted:
			if m.Output.Present() {
				t.addArtifactLocked(artifactResult, partsOf(m.Output), true)
			}
			t.setStatusLocked(StateCompleted, nil)
		case lmosproto.ActionCancelled:
			t.setStatusLocked(StateCanceled, nil)
		default: // failed
			var msg *Message
			if m.Output.Present() {
				msg = &Message{MessageID: uuid.NewString(), Role: RoleAgent, Parts: partsOf(m.Output)}
			}
			t.setStatusLocked(StateFailed, msg)
		}
	}
}

// settleLocked closes settled once.
func (t *task) settleLocked() {
	if !t.accepted {
		t.accepted = true
		close(t.settled)
	}
}

// fail ends the task with a failure the bridge itself saw.
func (t *task) fail(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setStatusLocked(StateFailed, agentMessage(text, nil))
}

// isDone reports whether the task is terminal.
func (t *task) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// next returns the events from number i on, the number of the event
// after them, and a channel closed when more arrive; done tells that the
// task is terminal and no event follows.
func (t *task) next(i int) (evs []StreamResponse, after int, more <-chan struct{}, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	j := max(i-t.dropped, 0) // fallen behind: skip what is no longer kept
	if j < len(t.events) {
		evs = append(evs, t.events[j:]...)
	}
	return evs, t.eventCountLocked(), t.changed, terminal(t.status.State)
}

// agentMessage is a message of the agent with a text part and, if data is
// set, a data part.
func agentMessage(text string, data json.RawMessage) *Message {
	m := &Message{MessageID: uuid.NewString(), Role: RoleAgent, Parts: []Part{TextPart(text)}}
	if data != nil {
		m.Parts = append(m.Parts, Part{Data: data, MediaType: "application/problem+json"})
	}
	return m
}

func problemText(p *lmosproto.Problem) string {
	switch {
	case p.Detail != "":
		return p.Detail
	case p.Title != "":
		return p.Title
	}
	return http.StatusText(p.Status)
}

func problemData(p *lmosproto.Problem) json.RawMessage {
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return b
}

// partsOf maps an LMOS value to A2A parts: a string is a text part,
// anything else a JSON data part.
func partsOf(v lmosproto.Value) []Part {
	var s string
	if err := json.Unmarshal(v.JSON(), &s); err == nil {
		return []Part{TextPart(s)}
	}
	return []Part{{Data: append(json.RawMessage(nil), v.JSON()...), MediaType: "application/json"}}
}

// tasks holds the tasks of the bridge's clients.
type tasks struct {
	retention time.Duration
	max       int

	mu        sync.Mutex
	byID      map[string]*task
	nextPrune time.Time
}

// pruneEvery is how often the store drops the tasks finished longer than
// retention ago (a walk over all of them).
const pruneEvery = time.Second

// add keeps t. When max tasks are held, the eighth of them that finished
// first makes room (all at once, so that a full store does not walk its
// tasks on every add); it fails when all of them still run.
func (ts *tasks) add(t *task) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pruneLocked(time.Now())
	if len(ts.byID) >= ts.max {
		type fin struct {
			t  *task
			at time.Time
		}
		var done []fin
		for _, o := range ts.byID {
			o.mu.Lock()
			f := o.finished
			o.mu.Unlock()
			if !f.IsZero() {
				done = append(done, fin{o, f})
			}
		}
		if len(done) == 0 {
			return fmt.Errorf("this node runs %d A2A tasks already", len(ts.byID))
		}
		slices.SortFunc(done, func(a, b fin) int { return a.at.Compare(b.at) })
		for _, f := range done[:min(len(done), max(ts.max/8, 1))] {
			delete(ts.byID, f.t.id)
		}
	}
	ts.byID[t.id] = t
	return nil
}

func (ts *tasks) get(id string) (*task, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pruneLocked(time.Now())
	t, ok := ts.byID[id]
	return t, ok
}

func (ts *tasks) all() []*task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pruneLocked(time.Now())
	out := make([]*task, 0, len(ts.byID))
	for _, t := range ts.byID {
		out = append(out, t)
	}
	return out
}

// pruneLocked drops the tasks finished longer than retention ago, at most
// once per pruneEvery; get may return such a task until then.
func (ts *tasks) pruneLocked(now time.Time) {
	if now.Before(ts.nextPrune) {
		return
	}
	ts.nextPrune = now.Add(pruneEvery)
	for id, t := range ts.byID {
		t.mu.Lock()
		old := !t.finished.IsZero() && now.Sub(t.finished) > ts.retention
		t.mu.Unlock()
		if old {
			delete(ts.byID, id)
		}
	}
}
