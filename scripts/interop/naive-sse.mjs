#!/usr/bin/env node
// A naive reader of a WoT Discovery notification stream (/events), written
// from the HTML Living Standard's "Server-sent events" section (9.2.6,
// "Interpreting an event stream") and sharing no code with lmosnode. It
// reads the stream the way simple clients — the W3C WoT Discovery test
// suite's among them — do: every block of lines ended by a blank line that
// holds a field (not only comments) is taken for an event. The standard
// dispatches a block only when it has data, so a block of "retry:" alone
// is nothing to an EventSource, but it is an event with no type and no id
// to such a reader. WoT Discovery §7.3.2.3 wants every notification to
// have a type (thing_created, thing_updated, thing_deleted) and an id.
//
// Usage: node naive-sse.mjs URL COUNT [TIMEOUT_MS]
//   Opens URL with Accept: text/event-stream, prints "open" once the
//   response headers have come, then reads until COUNT blocks were
//   dispatched. Prints one JSON line {"events": [{type, id, data}]} and
//   exits 0 if every dispatched block had an event type and an id and
//   JSON data; else prints what was wrong and exits 1; 2 on usage errors.

const [url, countArg, timeoutArg] = process.argv.slice(2);
const count = Number(countArg);
if (!url || !Number.isInteger(count) || count < 1) {
  console.error("usage: node naive-sse.mjs URL COUNT [TIMEOUT_MS]");
  process.exit(2);
}
const timeout = Number(timeoutArg ?? 10000);

// parseBlock reads the lines of one block as the standard reads fields:
// a line starting with ":" is a comment; otherwise the field name is what
// comes before the first ":", the value what follows, less one leading
// space; a line without ":" is a field with an empty value. Only the
// fields event, data and id matter here.
function parseBlock(lines) {
  const ev = { fields: 0, type: "", id: null, data: [] };
  for (const line of lines) {
    if (line.startsWith(":")) continue;
    ev.fields++;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") ev.type = value;
    else if (name === "id") ev.id = value;
    else if (name === "data") ev.data.push(value);
  }
  return ev;
}

const ctl = new AbortController();
const timer = setTimeout(() => ctl.abort(), timeout);
const events = [];
const problems = [];
try {
  const res = await fetch(url, { headers: { Accept: "text/event-stream" }, signal: ctl.signal });
  if (res.status !== 200 || !(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    throw new Error(`status ${res.status}, content type ${res.headers.get("content-type")}`);
  }
  console.log("open");
  const decoder = new TextDecoder("utf-8");
  let text = "";
  let lines = [];
  for await (const chunk of res.body) {
    text += decoder.decode(chunk, { stream: true });
    // Lines end at CRLF, LF or CR; a CR at the end may be half a CRLF.
    let m;
    while ((m = /\r\n|\n|\r(?=.)/s.exec(text)) !== null) {
      const line = text.slice(0, m.index);
      text = text.slice(m.index + m[0].length);
      if (line !== "") {
        lines.push(line);
        continue;
      }
      const ev = parseBlock(lines);
      lines = [];
      if (ev.fields === 0) continue; // comments only: nothing to dispatch
      const data = ev.data.join("\n");
      events.push({ type: ev.type, id: ev.id, data });
      if (ev.type === "") problems.push(`event ${events.length} has no type: ${JSON.stringify(events.at(-1))}`);
      if (ev.id === null || ev.id === "") problems.push(`event ${events.length} has no id: ${JSON.stringify(events.at(-1))}`);
      try {
        JSON.parse(data);
      } catch {
        problems.push(`event ${events.length}: data is not JSON: ${JSON.stringify(data)}`);
      }
      if (events.length >= count) break;
    }
    if (events.length >= count) break;
  }
} catch (err) {
  problems.push(`reading ${url}: ${err.message}`);
} finally {
  clearTimeout(timer);
  ctl.abort();
}
if (events.length < count && problems.length === 0) {
  problems.push(`the stream ended after ${events.length} of ${count} events`);
}
console.log(JSON.stringify({ events }));
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
process.exit(0);
