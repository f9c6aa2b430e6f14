// Bundles GraphiQL, its Monaco workers and the explorer plugin into the server's static folder
// (graph/server/static/graphiql/, a build output): content-hashed graphiql-*.js, graphiql-*.css
// and *.worker-*.js, the page template with those names filled in (index.html), the default
// configuration built from tabs/ (config.json) and the name map (manifest.json); the scripts
// and styles also precompressed (NAME.br, NAME.gz), which the server sends to clients that take them.
// Usage: node build.mjs [OUTDIR]   (default ../../graph/server/static/graphiql)
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import * as esbuild from 'esbuild';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.resolve(
  process.argv[2] || path.join(here, '../../graph/server/static/graphiql'),
);
// Built in a staging folder, then copied over: a running server never sees a half-built folder.
const outdir = path.join(here, 'node_modules/.leadgreen-graphiql-build');
// Where the page finds the assets, relative to the page (served at /graphql): /static/graphiql/.
const TEMPLATE_BASE = 'static/graphiql/';
const KEEP = new Set(['.gitignore', '.build-stamp']);

const common = {
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  charset: 'utf8',
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
  define: { 'process.env.NODE_ENV': '"production"' },
  outdir,
};

// Monaco's modules import their own CSS; graphiql/style.css already holds all of it (and the
// fonts, as data: URLs), so those imports bundle to nothing instead of twice.
const monacoCssOnce = {
  name: 'monaco-css-once',
  setup(build) {
    build.onResolve({ filter: /\.css$/ }, (args) =>
      /[\\/]monaco-editor[\\/]/.test(args.importer)
        ? { path: args.path, namespace: 'monaco-css-once' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'monaco-css-once' }, () => ({
      contents: '',
      loader: 'css',
    }));
  },
};

// graphql-ws is an optional import of @graphiql/toolkit for WebSocket subscriptions: stubbed.
const noSubscriptions = {
  name: 'no-subscriptions',
  setup(build) {
    build.onResolve({ filter: /^graphql-ws$/ }, () => ({
      path: path.join(here, 'src/graphql-ws-stub.js'),
    }));
  },
};

async function defaultConfig() {
  const tabs = JSON.parse(await readFile(path.join(here, 'tabs/tabs.json'), 'utf8'));
  return {
    endpoint: '/graphql',
    tabs: await Promise.all(
      tabs.map(async (tab) => ({
        name: tab.name,
        query: await readFile(path.join(here, 'tabs', tab.file), 'utf8'),
        variables: tab.variables ? JSON.stringify(tab.variables, null, 2) : '',
      })),
    ),
    runFirstTab: true,
  };
}

// Every reference to a resource in the output must be local: no http(s) URL where the browser
// would load it (the page runs with connect-src/script-src/style-src/font-src 'self').
const REMOTE = [
  /url\(\s*['"]?(?:https?:)?\/\//i,
  /@import\s+(?:url\()?\s*['"]?(?:https?:)?\/\//i,
  /(?:importScripts|import|new Worker|fetch)\(\s*['"`](?:https?:)?\/\//,
  /\s(?:src|href)\s*=\s*['"](?:https?:)?\/\//i,
];

async function checkLocal(files) {
  for (const file of files) {
    const text = await readFile(path.join(outdir, file), 'utf8');
    for (const pattern of REMOTE) {
      const match = text.match(pattern);
      if (match) throw new Error(`${file} refers to a remote resource: ${match[0]}`);
    }
  }
}

// Brotli at quality 7: within 2 % of quality 11's size on the bundle, in a fortieth of the time.
const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);
async function precompress(files) {
  const written = [];
  for (const file of files.filter((f) => /\.(js|css)$/.test(f))) {
    const bytes = await readFile(path.join(outdir, file));
    const br = await brotli(bytes, {
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: 7,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
      },
    });
    await writeFile(path.join(outdir, `${file}.br`), br);
    await writeFile(path.join(outdir, `${file}.gz`), await gzip(bytes, { level: 9 }));
    written.push(`${file}.br`, `${file}.gz`);
  }
  return written;
}

const started = Date.now();
await rm(outdir, { recursive: true, force: true });
await mkdir(outdir, { recursive: true });

const workers = await esbuild.build({
  ...common,
  entryPoints: {
    editor: 'monaco-editor/esm/vs/editor/editor.worker.js',
    json: 'monaco-editor/esm/vs/language/json/json.worker.js',
    graphql: 'monaco-graphql/esm/graphql.worker.js',
  },
  entryNames: '[name].worker-[hash]',
  plugins: [monacoCssOnce],
});
const workerFiles = {};
for (const [file, meta] of Object.entries(workers.metafile.outputs)) {
  const label = path.basename(file).split('.worker-')[0];
  if (meta.entryPoint) workerFiles[label] = path.basename(file);
}

const main = await esbuild.build({
  ...common,
  entryPoints: { graphiql: path.join(here, 'src/main.jsx') },
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  jsx: 'automatic',
  loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file', '.svg': 'dataurl', '.png': 'dataurl' },
  define: { ...common.define, WORKER_FILES: JSON.stringify(workerFiles) },
  plugins: [monacoCssOnce, noSubscriptions],
});
const [jsPath, jsMeta] = Object.entries(main.metafile.outputs).find(([, meta]) => meta.entryPoint);
const js = path.basename(jsPath);
const css = path.basename(jsMeta.cssBundle);
const fonts = Object.keys(main.metafile.outputs)
  .map((f) => path.basename(f))
  .filter((f) => /\.(ttf|woff2?)$/.test(f));

const template = await readFile(path.join(here, 'index.html'), 'utf8');
const page = template
  .replace(`${TEMPLATE_BASE}graphiql.js`, TEMPLATE_BASE + js)
  .replace(`${TEMPLATE_BASE}graphiql.css`, TEMPLATE_BASE + css);
if (!page.includes(TEMPLATE_BASE + js) || !page.includes(TEMPLATE_BASE + css)) {
  throw new Error(`index.html must load ${TEMPLATE_BASE}graphiql.js and ${TEMPLATE_BASE}graphiql.css`);
}
if (!page.includes('__GRAPHIQL_CONFIG__')) throw new Error('index.html has no __GRAPHIQL_CONFIG__');
await writeFile(path.join(outdir, 'index.html'), page);
await writeFile(path.join(outdir, 'config.json'), JSON.stringify(await defaultConfig(), null, 2) + '\n');

const files = [js, css, ...Object.values(workerFiles), ...fonts];
const manifest = { 'graphiql.js': js, 'graphiql.css': css, workers: workerFiles, fonts };
await writeFile(path.join(outdir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
await checkLocal([...files, 'index.html']);
const compressed = await precompress(files);

// Into place: the assets first, then the page and the maps that name them, then away with the
// assets of earlier builds.
await mkdir(target, { recursive: true });
const fresh = [...files, ...compressed, 'config.json', 'index.html', 'manifest.json'];
for (const file of fresh) await copyFile(path.join(outdir, file), path.join(target, file));
for (const entry of await readdir(target)) {
  if (!KEEP.has(entry) && !fresh.includes(entry)) {
    await rm(path.join(target, entry), { recursive: true, force: true });
  }
}
await rm(outdir, { recursive: true, force: true });
console.log(`graphiql: built ${files.join(', ')} in ${Date.now() - started} ms`);
