// graphql-inspector diff --onComplete handler, for scripts/check-schema-diff: writes every change
// (path, type, level, message, reason) as JSON to the file named by LEADGREEN_SCHEMA_CHANGES,
// instead of inspector's own ending (exit 1 on any breaking change); the script decides.
const { writeFileSync } = require('node:fs');

module.exports = function onComplete({ breakingChanges, dangerousChanges, nonBreakingChanges }) {
  const out = process.env.LEADGREEN_SCHEMA_CHANGES;
  if (!out) throw new Error('LEADGREEN_SCHEMA_CHANGES is not set');
  const rows = (level, changes) => changes.map((c) => ({
    level,
    path: c.path ?? null,
    type: c.type,
    message: c.message,
    reason: c.criticality?.reason ?? null,
  }));
  writeFileSync(out, JSON.stringify([
    ...rows('BREAKING', breakingChanges),
    ...rows('DANGEROUS', dangerousChanges),
    ...rows('NON_BREAKING', nonBreakingChanges),
  ], null, 2));
};
