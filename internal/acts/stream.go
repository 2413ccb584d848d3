package acts

import (
	"fmt"
	"maps"
)

// Stream assertions (§7). An abstract operation's event is a
// StreamResponse; it is asserted as its payload (the task, message,
// status update or artifact update) with the payload also under its
// member name (task, message, statusUpdate, artifactUpdate) and the
// ACTS names status_update and artifact_update, so that both
// `final_event: {status: …}` and `final_event: {status_update: …}`
// read it. A raw step's event is its data as sent (a JSON-RPC envelope).

// payloadNames maps the members of a StreamResponse to their ACTS names.
var payloadNames = map[string]string{"task": "task", "message": "message", "statusUpdate": "status_update", "artifactUpdate": "artifact_update"}

func eventView(ev any) any {
	m, ok := ev.(map[string]any)
	if !ok {
		return ev
	}
	for member, acts := range payloadNames {
		p, ok := m[member].(map[string]any)
		if !ok {
			continue
		}
		v := maps.Clone(p)
		v[member], v[acts] = p, p
		return v
	}
	return ev
}

// stateOf is the task state an event carries, "" if none.
func stateOf(ev any) string {
	for _, p := range []string{"task.status.state", "statusUpdate.status.state"} {
		if s, ok := resolveOne(ev, p).(string); ok {
			return s
		}
	}
	return ""
}

func terminalState(s string) bool {
	switch s {
	case "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED":
		return true
	}
	return false
}

// monotonic checks §7.1: no state after a terminal one, none goes back
// to SUBMITTED.
func monotonic(events []any) error {
	prev := ""
	for i, ev := range events {
		s := stateOf(ev)
		if s == "" {
			continue
		}
		switch {
		case terminalState(prev):
			return fmt.Errorf("event %d: state %s after terminal %s", i, s, prev)
		case s == "TASK_STATE_SUBMITTED" && prev != "" && prev != s:
			return fmt.Errorf("event %d: back to SUBMITTED from %s", i, prev)
		}
		prev = s
	}
	return nil
}

func (r *run) expectStream(spec map[string]any, resp *response, raw bool) error {
	if !resp.stream {
		return fmt.Errorf("expected an event stream, got %s", show(resp.root()))
	}
	v, err := r.interpolate(spec)
	if err != nil {
		return err
	}
	spec = v.(map[string]any)
	events := resp.events
	views := make([]any, len(events))
	for i, ev := range events {
		views[i] = ev
		if !raw {
			views[i] = eventView(ev)
		}
	}
	n := float64(len(events))
	if want, ok := number(spec["min_count"]); ok && n < want {
		return fmt.Errorf("stream: %d events, want at least %v", len(events), want)
	}
	if want, ok := number(spec["max_count"]); ok && n > want {
		return fmt.Errorf("stream: %d events, want at most %v", len(events), want)
	}
	if spec["ordering"] == "monotonic_state" && !raw {
		if err := monotonic(events); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	if each, ok := spec["each_event"]; ok {
		for i, ev := range views {
			if err := check(each, ev, fmt.Sprintf("event[%d]", i)); err != nil {
				return err
			}
		}
	}
	if evs, ok := spec["events"].([]any); ok {
		for i, ea := range evs {
			if err := eventAssertion(i, ea, views); err != nil {
				return err
			}
		}
	}
	if fin, ok := spec["final_event"]; ok {
		if len(views) == 0 {
			return fmt.Errorf("stream: no events, want a final event")
		}
		if err := check(fin, views[len(views)-1], "final_event"); err != nil {
			return err
		}
	}
	return nil
}

// eventAssertion checks the i-th event assertion: at its index (default
// i), or at any position.
func eventAssertion(i int, ea any, views []any) error {
	m, ok := ea.(map[string]any)
	if !ok {
		return fmt.Errorf("events[%d]: not a map", i)
	}
	a := maps.Clone(m)
	delete(a, "description")
	pos := i
	if idx, ok := number(a["index"]); ok {
		pos = int(idx)
	}
	delete(a, "index")
	anyPos := a["match"] == "any_position"
	delete(a, "match")
	if anyPos {
		var last error
		for _, v := range views {
			if last = check(a, v, "event"); last == nil {
				return nil
			}
		}
		return fmt.Errorf("events[%d] (%v): no event of %d matches; last: %v", i, m["description"], len(views), last)
	}
	if pos >= len(views) {
		return fmt.Errorf("events[%d]: no event %d (%d events)", i, pos, len(views))
	}
	return check(a, views[pos], fmt.Sprintf("event[%d]", pos))
}
