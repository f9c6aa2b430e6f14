// The GraphQL operations of the documentation, for scripts/check-codegen.
//
//   node docs-operations.mjs extract --base DIR --out DIR --manifest FILE [--strict-roots] [--] ROOT...
//       Every ```graphql fenced block of the Markdown ROOTs (a file, or a folder searched for
//       *.md, recursively) becomes one .graphql file in --out, named after its first operation
//       (or fragment); a block that repeats an earlier one exactly is noted and not repeated.
//       A block that does not parse or reuses a name already taken is reported (file, block
//       number, line) and left out; one with an anonymous operation is reported and written with
//       a name of ours (AnonymousBlockN), so that codegen still checks it against the schema.
//       Relative ROOTs
//       are resolved against --base. A missing ROOT is skipped with a note, or is an error with
//       --strict-roots. Exit 1 when anything was reported or no block was found.
//
//   node docs-operations.mjs map --manifest FILE < TEXT
//       Rewrites "OUT/Name.graphql:LINE:COL" in TEXT to the Markdown file, line and column the
//       block came from.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Kind, parse, print } from 'graphql';

function args(argv) {
  const opts = { roots: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      opts.roots.push(...argv.slice(i + 1));
      break;
    }
    if (a === '--base' || a === '--out' || a === '--manifest') opts[a.slice(2)] = argv[++i];
    else if (a === '--strict-roots') opts.strictRoots = true;
    else opts.roots.push(a);
  }
  return opts;
}

function markdownFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFiles(full));
    else if (entry.isFile() && /\.md$/i.test(entry.name)) found.push(full);
  }
  return found.sort();
}

// Fences as in CommonMark: ``` or ~~~ (3 or more), the info string's first word is the language,
// the closing fence uses the same character, at least as many; any indentation is accepted (a
// fence inside a nested list item is indented more than 3 spaces).
function graphqlBlocks(text) {
  const lines = text.split(/\r?\n/);
  const blocks = [];
  let open = null;
  lines.forEach((line, i) => {
    if (!open) {
      const m = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
      if (m) open = { indent: m[1].length, fence: m[2], lang: m[3].toLowerCase(), line: i + 1, body: [] };
      return;
    }
    const close = new RegExp(`^ *${open.fence[0] === '`' ? '`' : '~'}{${open.fence.length},}\\s*$`);
    if (close.test(line)) {
      if (open.lang === 'graphql') blocks.push(open);
      open = null;
      return;
    }
    // Content lines lose up to the fence's indentation.
    let strip = 0;
    while (strip < open.indent && line[strip] === ' ') strip++;
    open.body.push(line.slice(strip));
  });
  if (open && open.lang === 'graphql') blocks.push({ ...open, unclosed: true });
  return blocks;
}

function extract(opts) {
  const base = path.resolve(opts.base || '.');
  const out = path.resolve(opts.out);
  mkdirSync(out, { recursive: true });
  const show = (file) => {
    const rel = path.relative(base, file);
    return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : file;
  };
  const problems = [];
  const notes = [];
  const files = [];
  for (const root of opts.roots) {
    const full = path.resolve(base, root);
    if (!existsSync(full)) {
      if (opts.strictRoots) problems.push(`${root}: no such file or folder`);
      else notes.push(`${root}: absent, skipped`);
      continue;
    }
    if (statSync(full).isDirectory()) files.push(...markdownFiles(full));
    else files.push(full);
  }
  const manifest = { out, blocks: [] };
  const taken = new Map(); // operation or fragment name -> where it is defined
  const printed = new Map(); // a block's document, printed -> where it was first seen
  const fileNames = new Set();
  let count = 0;
  for (const file of [...new Set(files)]) {
    const blocks = graphqlBlocks(readFileSync(file, 'utf8'));
    blocks.forEach((block, index) => {
      count++;
      const where = `${show(file)}:${block.line} (graphql block ${index + 1})`;
      const entry = { source: show(file), line: block.line, block: index + 1, indent: block.indent };
      manifest.blocks.push(entry);
      if (block.unclosed) {
        problems.push(`${where}: the fence is never closed`);
        return;
      }
      const body = block.body.join('\n') + '\n';
      let doc;
      try {
        doc = parse(body, { noLocation: false });
      } catch (error) {
        const loc = error.locations?.[0];
        const at = loc ? ` at ${show(file)}:${block.line + loc.line}:${loc.column + block.indent}` : '';
        problems.push(`${where}: does not parse${at}: ${error.message.replace(/^Syntax Error: /, '')}`);
        return;
      }
      // The same document shown again (README and docs) is the same operation: generated once.
      const same = printed.get(print(doc));
      if (same) {
        entry.sameAs = same;
        return;
      }
      let bad = false;
      const names = [];
      const insertions = []; // names given to anonymous operations, so that the schema is checked too
      for (const def of doc.definitions) {
        if (def.kind === Kind.OPERATION_DEFINITION && !def.name) {
          const token = def.loc.startToken;
          problems.push(`${where}: anonymous ${def.operation} at line ${block.line + token.line} — ` +
            `graphql-codegen needs a name for every operation: write \`${def.operation} SomeName` +
            `${def.variableDefinitions?.length ? '(...)' : ''} { … }\``);
          const name = `AnonymousBlock${count}${names.length ? `_${names.length + 1}` : ''}`;
          // `{ … }` becomes `query Name { … }`; `query { … }` or `query($x: T) { … }`, `query Name…`.
          if (token.kind === '{') insertions.push({ at: token.start, text: `query ${name} ` });
          else insertions.push({ at: token.end, text: ` ${name}` });
          names.push({ name, kind: def.operation });
          entry.anonymous = true;
        } else if (def.kind === Kind.OPERATION_DEFINITION || def.kind === Kind.FRAGMENT_DEFINITION) {
          const name = def.name.value;
          const kind = def.kind === Kind.FRAGMENT_DEFINITION ? 'fragment' : def.operation;
          if (taken.has(name)) {
            problems.push(`${where}: ${kind} ${name} is already defined at ${taken.get(name)} — ` +
              'operation and fragment names must be unique across the documentation');
            bad = true;
          } else {
            names.push({ name, kind });
          }
        } else {
          problems.push(`${where}: a ${def.kind} is not an operation or a fragment`);
          bad = true;
        }
      }
      if (bad) return;
      printed.set(print(doc), where);
      for (const { name } of names) taken.set(name, where);
      const first = names.find((n) => n.kind !== 'fragment') || names[0];
      entry.operations = names.map((n) => `${n.kind} ${n.name}`);
      let fileName = `${first.name}.graphql`;
      for (let k = 2; fileNames.has(fileName.toLowerCase()); k++) fileName = `${first.name}_${k}.graphql`;
      fileNames.add(fileName.toLowerCase());
      entry.file = fileName;
      let text = body;
      for (const { at, text: add } of insertions.sort((a, b) => b.at - a.at)) {
        text = text.slice(0, at) + add + text.slice(at);
      }
      writeFileSync(path.join(out, fileName), text);
    });
  }
  writeFileSync(opts.manifest, JSON.stringify(manifest, null, 2));
  for (const note of notes) console.log(`  note: ${note}`);
  console.log(`  ${count} graphql block(s) in ${files.length} Markdown file(s)`);
  for (const entry of manifest.blocks) {
    if (entry.file) {
      console.log(`  ${entry.source}:${entry.line} (block ${entry.block}) -> ${entry.file}: ` +
        `${entry.operations.join(', ')}${entry.anonymous ? ' (a name given here: the block has none)' : ''}`);
    }
    else if (entry.sameAs) console.log(`  ${entry.source}:${entry.line} (block ${entry.block}): the same document as ${entry.sameAs}`);
  }
  if (count === 0) problems.push(`no \`\`\`graphql block in ${opts.roots.join(', ') || '(no root)'}`);
  for (const problem of problems) console.log(`  FAIL: ${problem}`);
  return problems.length ? 1 : 0;
}

function map(opts) {
  const manifest = JSON.parse(readFileSync(opts.manifest, 'utf8'));
  const byFile = new Map(manifest.blocks.filter((b) => b.file).map((b) => [b.file, b]));
  const escaped = manifest.out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`${escaped}[/\\\\]([^\\s:/\\\\]+\\.graphql)(?::(\\d+):(\\d+))?`, 'g');
  const text = readFileSync(0, 'utf8');
  process.stdout.write(text.replace(pattern, (all, file, line, column) => {
    const b = byFile.get(file);
    if (!b) return all;
    if (!line) return `${b.source}:${b.line} (block ${b.block}, ${file})`;
    return `${b.source}:${b.line + Number(line)}:${Number(column) + b.indent} (block ${b.block}, ${file})`;
  }));
  return 0;
}

const [command, ...rest] = process.argv.slice(2);
const opts = args(rest);
if (command === 'extract' && opts.out && opts.manifest) process.exitCode = extract(opts);
else if (command === 'map' && opts.manifest) process.exitCode = map(opts);
else {
  console.error('usage: docs-operations.mjs extract --base DIR --out DIR --manifest FILE [--strict-roots] ROOT...\n' +
    '       docs-operations.mjs map --manifest FILE < TEXT');
  process.exitCode = 2;
}
