// Validates an agents.json with independent tools: ajv against the
// official agentsJson.schema.json, and each source's OpenAPI document
// (the embedded one and the one at the source's path) with
// @apidevtools/swagger-parser.
//
//   node validate.mjs SCHEMA-FILE AGENTS-JSON-URL
//
// Prints {"sources": N, "flows": M, "operations": K} and exits 0 when all
// is valid; prints the errors and exits 1 otherwise.
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import SwaggerParser from "@apidevtools/swagger-parser";

const [schemaFile, docURL] = process.argv.slice(2);
const schema = JSON.parse(readFileSync(schemaFile, "utf8"));
const res = await fetch(docURL);
if (!res.ok) {
  console.error(`GET ${docURL}: HTTP ${res.status}`);
  process.exit(1);
}
const doc = await res.json();

const ajv = new Ajv({ allErrors: true, strict: false });
const validate = ajv.compile(schema);
if (!validate(doc)) {
  console.error(JSON.stringify(validate.errors, null, 2));
  process.exit(1);
}

let operations = 0;
for (const src of doc.sources) {
  const embedded = await SwaggerParser.validate(structuredClone(src.openapi));
  // The test's node listens on loopback, which the resolver refuses by
  // default (safeUrlResolver).
  const served = await SwaggerParser.validate(src.path, { resolve: { http: { safeUrlResolver: false } } });
  if (JSON.stringify(Object.keys(served.paths).sort()) !== JSON.stringify(Object.keys(embedded.paths).sort())) {
    console.error(`source ${src.id}: the document at ${src.path} differs from the embedded one`);
    process.exit(1);
  }
  for (const item of Object.values(embedded.paths)) operations += Object.keys(item).length;
}
for (const flow of doc.flows) {
  for (const action of flow.actions) {
    if (!doc.sources.some((s) => s.id === action.sourceId)) {
      console.error(`flow ${flow.id}: action ${action.id} names no source ${action.sourceId}`);
      process.exit(1);
    }
  }
}
console.log(JSON.stringify({ sources: doc.sources.length, flows: doc.flows.length, operations }));
