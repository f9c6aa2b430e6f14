// Are the schema's breaking changes in the changelog? For scripts/check-schema-diff.
//
//   node changelog-breaking.mjs --changes FILE --changelog FILE [--name SHOWN]
//
// FILE of --changes: the JSON that inspector-on-complete.cjs wrote. Exit 1 when a BREAKING change
// is not listed, or the changelog has no "[Unreleased]" section with a "Schema changes" part.
//
// "Listed", exactly:
//   - the section is the one whose heading starts with "## [Unreleased]" (up to the next "## "),
//     and in it the part whose heading starts with "### Schema changes" (up to the next "### "
//     or "## ");
//   - an entry of that part is a line that starts with "- BREAKING", with the lines that follow
//     it indented (a Markdown bullet wrapped over several lines), up to a blank or unindented line;
//   - a breaking change is listed when an entry names its coordinate, the `path` graphql-inspector
//     gives it (Release.id, Query.model.slug, Enum.VALUE, @directive.arg, a type name), as a whole
//     word: not part of a longer name (Release.id does not name Release, nor Release.identity,
//     nor Release.id(…)); an argument may also be written Type.field(arg:) and a directive's
//     argument @directive(arg:). A change inspector gives no path (a root type changed) is named
//     by its change type (e.g. SCHEMA_QUERY_TYPE_CHANGED).
import { readFileSync } from 'node:fs';

function args(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) opts[argv[i].replace(/^--/, '')] = argv[i + 1];
  return opts;
}

function breakingEntries(text) {
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => /^## \[Unreleased\]/i.test(l));
  if (start < 0) return { error: 'no "## [Unreleased]" section' };
  let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (end < 0) end = lines.length;
  const part = lines.findIndex((l, i) => i > start && i < end && /^### Schema changes/i.test(l));
  if (part < 0) return { error: 'no "### Schema changes" part in the "[Unreleased]" section' };
  let partEnd = lines.findIndex((l, i) => i > part && i < end && /^##/.test(l));
  if (partEnd < 0) partEnd = end;
  const entries = [];
  let current = null;
  for (let i = part + 1; i < partEnd; i++) {
    const line = lines[i];
    if (/^- BREAKING/.test(line)) {
      current = { line: i + 1, text: line };
      entries.push(current);
    } else if (current && /^\s+\S/.test(line)) {
      current.text += `\n${line}`;
    } else {
      current = null;
    }
  }
  return { entries };
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function spellings(change) {
  if (!change.path) return [change.type];
  const forms = [change.path];
  const parts = change.path.split('.');
  if (parts.length === 3 && !parts[0].startsWith('@') && !parts[2].startsWith('@')) {
    forms.push(`${parts[0]}.${parts[1]}(${parts[2]}:)`);
  } else if (parts.length === 2 && parts[0].startsWith('@')) {
    forms.push(`${parts[0]}(${parts[1]}:)`);
  }
  return forms;
}

function names(text, form) {
  const tail = form.endsWith(')') ? '' : '(?![A-Za-z0-9_(]|\\.[A-Za-z_@])';
  return new RegExp(`(?<![A-Za-z0-9_.@])${escape(form)}${tail}`).test(text);
}

function main() {
  const opts = args(process.argv.slice(2));
  const shown = opts.name || opts.changelog;
  const changes = JSON.parse(readFileSync(opts.changes, 'utf8'));
  const breaking = changes.filter((c) => c.level === 'BREAKING');
  const { entries, error } = breakingEntries(readFileSync(opts.changelog, 'utf8'));
  if (error) {
    console.log(`  FAIL: ${shown}: ${error}`);
    for (const c of breaking) console.log(`  not listed: ${c.path ?? c.type}: ${c.message}`);
    return 1;
  }
  console.log(`  ${shown}: ${entries.length} "- BREAKING" entr${entries.length === 1 ? 'y' : 'ies'} ` +
    `under [Unreleased] / Schema changes${entries.map((e) => ` (line ${e.line})`).join('')}`);
  let missing = 0;
  for (const c of breaking) {
    const forms = spellings(c);
    const entry = entries.find((e) => forms.some((f) => names(e.text, f)));
    if (entry) {
      console.log(`  listed: ${forms[0]} (${c.type}): ${c.message} — ${shown}:${entry.line}`);
    } else {
      missing++;
      console.log(`  FAIL: not listed: ${forms[0]} (${c.type}): ${c.message}`);
      console.log(`        add to [Unreleased] / Schema changes of ${shown} a line "- BREAKING: \`${forms[0]}\` …"`);
    }
  }
  if (missing) {
    console.log(`  ${missing} of ${breaking.length} breaking change(s) not in ${shown}`);
    return 1;
  }
  console.log(`  every breaking change (${breaking.length}) is listed`);
  return 0;
}

process.exitCode = main();
