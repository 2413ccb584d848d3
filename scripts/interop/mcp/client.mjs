// An MCP host as the official TypeScript SDK makes one: it connects to an
// lmosnode (Streamable HTTP URL, or a command speaking stdio such as
// `lmosnode mcp`) and runs the commands it reads on stdin, one JSON object
// per line, printing one JSON object per line for each (after a first
// {"ok":true,"server":…,"protocolVersion":…}, the version negotiated over
// Streamable HTTP):
//
//   {"op":"list"}                                   → {"tools":[…],"pages":N}
//   {"op":"call","name":…,"arguments":{…},"progress":true} → {"result":{…},"progress":[…]}
//   {"op":"abort","name":…,"arguments":{…}}         → {"aborted":true} (aborts at the first progress)
//   {"op":"changed","since":N}                      → {"changed":M} once M > N list_changed arrived
//   {"op":"read","uri":…}                           → {"result":{…}}
//
// A failure prints {"error": "…"}. argv[2] is {"url":…,"token":…} or
// {"command":…,"args":[…]}.
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const spec = JSON.parse(process.argv[2]);
const print = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const transport = spec.url
  ? new StreamableHTTPClientTransport(new URL(spec.url), {
      requestInit: { headers: spec.token ? { Authorization: `Bearer ${spec.token}` } : {} },
    })
  : new StdioClientTransport({ command: spec.command, args: spec.args ?? [], env: spec.env, stderr: 'inherit' });

const client = new Client({ name: 'lmosnode-interop', version: '0.0.0' });
let changed = 0;
let waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  const w = waiters;
  waiters = [];
  w.forEach((f) => f());
});

await client.connect(transport);
print({ ok: true, server: client.getServerVersion(), protocolVersion: transport.protocolVersion });

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    switch (cmd.op) {
      case 'list': {
        const tools = [];
        let cursor;
        let pages = 0;
        do {
          const r = await client.listTools(cursor ? { cursor } : {});
          tools.push(...r.tools);
          cursor = r.nextCursor;
          pages++;
        } while (cursor);
        print({ tools, pages });
        break;
      }
      case 'call': {
        const progress = [];
        const opts = cmd.progress ? { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true } : {};
        const result = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, opts);
        print({ result, progress });
        break;
      }
      case 'abort': {
        const ac = new AbortController();
        try {
          await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, {
            signal: ac.signal,
            onprogress: () => ac.abort('enough'),
          });
          print({ aborted: false });
        } catch (e) {
          print({ aborted: ac.signal.aborted, message: String(e?.message ?? e) });
        }
        break;
      }
      case 'changed': {
        if (changed <= (cmd.since ?? 0)) await new Promise((res) => waiters.push(res));
        print({ changed });
        break;
      }
      case 'read':
        print({ result: await client.readResource({ uri: cmd.uri }) });
        break;
      default:
        print({ error: `unknown op ${cmd.op}` });
    }
  } catch (e) {
    print({ error: String(e?.message ?? e) });
  }
}
await client.close();
