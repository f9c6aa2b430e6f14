// The GraphQL-over-HTTP audit of graphql-http (its auditServer) against a running server.
// Usage: node audit/audit.mjs URL. Prints every result; exits 1 on any error, warning or notice.
// It starts nothing itself: scripts/audit starts `leadgreen serve` and runs it.
import { auditServer } from 'graphql-http';

const url = process.argv[2];
if (!url) {
  console.error('usage: node audit/audit.mjs http://127.0.0.1:PORT/graphql');
  process.exit(2);
}

const results = await auditServer({ url });
const counts = { ok: 0, notice: 0, warn: 0, error: 0 };
for (const result of results) {
  counts[result.status] += 1;
  console.log(`${result.status.padEnd(6)} ${result.id} ${result.name}`);
  if (result.status === 'ok') continue;
  console.log(`       reason: ${result.reason}`);
  const response = result.response;
  if (response) {
    let body = '';
    try {
      body = await response.text();
    } catch {
      body = '(body already read by the audit)';
    }
    console.log(`       response: ${response.status} ${response.headers.get('content-type')} ${body}`);
  }
}
console.log(
  `graphql-http audit of ${url}: ${results.length} audits, ${counts.ok} ok, ` +
    `${counts.notice} notices, ${counts.warn} warnings, ${counts.error} errors`,
);
process.exit(counts.ok === results.length ? 0 : 1);
