#!/usr/bin/env node
// An unmodified Eclipse Thingweb node-wot consumer (@node-wot/core and
// @node-wot/binding-http, pinned in package.json) against lmosnode's WoT
// HTTP binding: it fetches the consumer view of a Thing's TD from a node,
// subscribes to an event, reads, writes and reads back a property, invokes
// an action and waits for an event. Used by node/gateway/nodewot_test.go.
//
//   node consume.js TD_URL [--property P] [--write JSON] [--action A]
//                   [--input JSON] [--event E] [--timeout MS]
//   node consume.js --explore ID DIRECTORY_URL [same options]
//   node consume.js TD_URL --token TOKEN [same options]
//
// With --explore the Thing's TD is not fetched from TD_URL: the script
// explores the directory whose TD is at DIRECTORY_URL (node-wot's
// WoT.exploreDirectory, e.g. http://127.0.0.1:5080/.well-known/wot) and
// consumes the TD of id ID that the directory lists.
//
// With --token the TD is fetched with "Authorization: Bearer TOKEN" and the
// token is given to node-wot as the Thing's credentials
// (servient.addCredentials), which node-wot sends as the TD's bearer
// security scheme says. "--event none" skips the event (node-wot 0.9.2's
// SSE subscriptions send no credentials).
//
// On success it prints one JSON line to standard output,
//   {"title", "read", "written", "readBack", "output", "event"},
// and exits 0; on any failure it prints "nodewot: <step>: <error>" to
// standard error and exits 1 (2 on a usage error).
"use strict";

const { Servient } = require("@node-wot/core");
const { HttpClientFactory } = require("@node-wot/binding-http");

function usage(msg) {
    process.stderr.write(`nodewot: ${msg}\nusage: node consume.js [--explore ID] TD_URL|DIRECTORY_URL [--property P] [--write JSON] [--action A] [--input JSON] [--event E] [--timeout MS] [--token TOKEN]\n`);
    process.exit(2);
}

const opts = { property: "target", write: "21.5", action: "add", input: '{"a":2,"b":40}', event: "alarm", timeout: "20000", explore: "", token: "" };
const argv = process.argv.slice(2);
let url;
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
        const k = a.slice(2);
        if (!(k in opts) || i + 1 >= argv.length) usage(`bad option ${a}`);
        opts[k] = argv[++i];
    } else if (url === undefined) {
        url = a;
    } else {
        usage(`unexpected argument ${a}`);
    }
}
if (url === undefined) usage("missing TD_URL");
let writeValue, input;
try {
    writeValue = JSON.parse(opts.write);
    input = JSON.parse(opts.input);
} catch (e) {
    usage(`--write/--input: ${e.message}`);
}
const timeoutMs = Number(opts.timeout);
if (!(timeoutMs > 0)) usage(`bad --timeout ${opts.timeout}`);

let step = "start";
function fail(err) {
    const msg = err instanceof Error ? err.message : typeof err === "string" ? err : require("util").inspect(err);
    process.stderr.write(`nodewot: ${step}: ${msg}\n`);
    process.exit(1);
}
process.on("unhandledRejection", fail);
const timer = setTimeout(() => fail(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);

async function main() {
    const servient = new Servient();
    servient.addClientFactory(new HttpClientFactory(null));
    const WoT = await servient.start();

    let td;
    if (opts.token !== "") {
        step = `fetch TD ${url} with the token`;
        const resp = await fetch(url, { headers: { Authorization: `Bearer ${opts.token}`, Accept: "application/td+json" } });
        if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
        td = await resp.json();
        servient.addCredentials({ [td.id]: { token: opts.token } });
    } else if (opts.explore === "") {
        step = `requestThingDescription ${url}`;
        td = await WoT.requestThingDescription(url);
    } else {
        step = `exploreDirectory ${url}`;
        const discovery = await WoT.exploreDirectory(url);
        const seen = [];
        for await (const found of discovery) {
            seen.push(found.id);
            if (found.id === opts.explore) {
                td = found;
                await discovery.stop();
                break;
            }
        }
        if (td === undefined) {
            const why = discovery.error ? ` (last error: ${discovery.error.message})` : "";
            throw new Error(`Thing ${opts.explore} not among the ${seen.length} valid TDs listed: ${JSON.stringify(seen)}${why}`);
        }
    }
    step = "consume";
    const thing = await WoT.consume(td);

    step = `subscribeEvent ${opts.event}`;
    let subscription;
    const firstEvent = opts.event === "none" ? Promise.resolve(null) : new Promise((resolve, reject) => {
        thing
            .subscribeEvent(
                opts.event,
                async (data) => {
                    try {
                        resolve(await data.value());
                    } catch (e) {
                        reject(e);
                    }
                },
                (e) => reject(e)
            )
            .then((sub) => (subscription = sub), reject);
    });

    step = `readProperty ${opts.property}`;
    const read = await (await thing.readProperty(opts.property)).value();
    step = `writeProperty ${opts.property}`;
    await thing.writeProperty(opts.property, writeValue);
    step = `readProperty ${opts.property} after write`;
    const readBack = await (await thing.readProperty(opts.property)).value();
    if (JSON.stringify(readBack) !== JSON.stringify(writeValue)) {
        throw new Error(`read back ${JSON.stringify(readBack)}, wrote ${JSON.stringify(writeValue)}`);
    }
    step = `invokeAction ${opts.action}`;
    const output = await (await thing.invokeAction(opts.action, input)).value();

    step = `waiting for event ${opts.event}`;
    const event = await firstEvent;
    step = `unsubscribe ${opts.event}`;
    if (subscription) await subscription.stop();
    await servient.shutdown();

    clearTimeout(timer);
    process.stdout.write(JSON.stringify({ title: td.title, read, written: writeValue, readBack, output, event }) + "\n");
    process.exit(0);
}

main().catch(fail);
