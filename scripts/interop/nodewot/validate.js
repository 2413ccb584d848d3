#!/usr/bin/env node
// Checks Thing Descriptions with node-wot's own TD validator (the one
// WoT.requestThingDescription and exploreDirectory apply; pinned in
// package.json). Used by node/gateway/nodewot_test.go on the consumer
// views of node/gateway/testdata.
//
//   node validate.js FILE...
//
// Prints "FILE: ok" or "FILE: invalid: <errors>" per file; exits 0 if
// every file is a valid TD, 1 if not, 2 on a usage error.
"use strict";

const fs = require("fs");
const { default: Helpers } = require("@node-wot/core/dist/helpers");

const files = process.argv.slice(2);
if (files.length === 0) {
    process.stderr.write("usage: node validate.js FILE...\n");
    process.exit(2);
}
let bad = 0;
for (const f of files) {
    let td;
    try {
        td = JSON.parse(fs.readFileSync(f, "utf8"));
    } catch (e) {
        process.stdout.write(`${f}: invalid: ${e.message}\n`);
        bad++;
        continue;
    }
    if (Helpers.tsSchemaValidator(td)) {
        process.stdout.write(`${f}: ok\n`);
    } else {
        const errs = (Helpers.tsSchemaValidator.errors ?? []).map((e) => `${e.instancePath} ${e.message}`).join("; ");
        process.stdout.write(`${f}: invalid: ${errs}\n`);
        bad++;
    }
}
process.exit(bad === 0 ? 0 : 1);
