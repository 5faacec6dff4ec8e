// Validates Attune's AsyncAPI document (crates/server/asyncapi.json, the one `GET /asyncapi.json`
// serves) with the official parser, @asyncapi/parser, as package-lock.json pins it.
//
// The parser checks the document against the AsyncAPI 3.0 schema, resolves every $ref and runs
// its rule set; any diagnostic of severity "error" fails the check. Warnings and hints are printed.
// It also checks that each of the three WebSocket channels is there with both directions.
// (Whether real events match the message schemas is checked in Rust, over events of real loopback
// sessions: crates/server/tests/server/asyncapi.rs.)
// Usage: node validate.mjs [path]. Exit status 0 when valid, 1 otherwise.

import { Parser } from '@asyncapi/parser';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const file = process.argv[2] || path.join(ROOT, 'crates/server/asyncapi.json');
const SEVERITY = ['error', 'warning', 'info', 'hint'];

const parser = new Parser();
const { document, diagnostics } = await parser.parse(fs.readFileSync(file, 'utf8'));
for (const d of diagnostics) {
  console.log(`${SEVERITY[d.severity] ?? d.severity}: ${d.code}: ${d.message} at ${d.path.join('.')}`);
}
const failures = [];
if (diagnostics.some((d) => d.severity === 0) || !document) {
  failures.push('the parser reported errors');
} else {
  const addresses = document.channels().all().map((c) => c.address());
  for (const address of ['/v1/stream/analyze', '/v2/stream/analyze', '/v0/realtime/analyze']) {
    if (!addresses.includes(address)) failures.push(`no channel at ${address}`);
    const operations = document.operations().all().filter((op) =>
      op.channels().all().some((c) => c.address() === address));
    for (const action of ['send', 'receive']) {
      if (!operations.some((op) => op.action() === action && op.messages().length > 0)) {
        failures.push(`${address}: no ${action} operation with messages`);
      }
    }
  }
  console.log(`${file}: AsyncAPI ${document.version()}, ${addresses.length} channels, ` +
    `${document.allMessages().length} messages`);
}
if (failures.length > 0) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log('ok');
