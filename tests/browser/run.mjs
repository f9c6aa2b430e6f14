#!/usr/bin/env node
// Opens LeadGreen's pages in the system Chromium (playwright-core; no browser is downloaded)
// and checks what a person would see. Prints one JSON line; exits 0 only when every check held.
//
//   node run.mjs --graphiql http://127.0.0.1:8000/graphql --out DIR
//   node run.mjs --example http://127.0.0.1:5174/ --api http://127.0.0.1:8000 --out DIR
//   node run.mjs --planner 'http://127.0.0.1:5174/plan.html?task=...' --api URL --out DIR
//   (together they run in one browser)
//
// The planner check opens the plan explorer with the address's choices, then picks another
// task in the form (--then-task, --then-demand, --then-latency) and plans again.
//
// Options: --out DIR (screenshots; default ./out), --chromium PATH (default $CHROMIUM, else the
// first of chromium, chromium-browser, google-chrome-stable, google-chrome on PATH),
// --timeout MS (per page; default 60000).
//
// Only 127.0.0.1 is reachable: every request to another host is aborted (route interception)
// and counted, and the browser resolves no other name. Content-Security-Policy violations are
// counted from the pages' `securitypolicyviolation` events and the console.
import { access, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { constants } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const { values: opts } = parseArgs({
  options: {
    graphiql: { type: 'string' },
    example: { type: 'string' },
    planner: { type: 'string' },
    'then-task': { type: 'string', default: 'text-to-image' },
    'then-demand': { type: 'string', default: '2' },
    'then-latency': { type: 'string', default: '30' },
    api: { type: 'string' },
    out: { type: 'string', default: 'out' },
    chromium: { type: 'string', default: process.env.CHROMIUM || '' },
    timeout: { type: 'string', default: '60000' },
  },
  strict: true,
});

const LAUNCH_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-domain-reliability',
  // No name but 127.0.0.1 resolves, whatever asks (the page, a worker, the browser itself).
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];
const LOCAL = '127.0.0.1';
const EXPECTED_TABS = ['ModelPage', 'Leaderboard', 'ParetoFrontier', 'Timeline'];
const BROWSERS = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];
const timeout = Number(opts.timeout);

function usage(message) {
  console.error(`run.mjs: ${message}`);
  console.error('usage: node run.mjs [--graphiql URL] [--example URL] [--planner URL] [--api URL] [--out DIR]');
  process.exit(2);
}

async function findChromium() {
  if (opts.chromium) return opts.chromium;
  for (const dir of (process.env.PATH || '').split(path.delimiter).filter(Boolean)) {
    for (const name of BROWSERS) {
      const candidate = path.join(dir, name);
      try {
        await access(candidate, constants.X_OK);
        return candidate;
      } catch {
        /* not here */
      }
    }
  }
  usage(`no Chromium found (${BROWSERS.join(', ')} on PATH); give --chromium or $CHROMIUM`);
}

if (!opts.graphiql && !opts.example && !opts.planner) usage('give --graphiql, --example or --planner URL');
if ((opts.example || opts.planner) && !opts.api) usage('--example and --planner need --api URL');

// Watches one page: console errors, uncaught exceptions, CSP violations, failed local requests,
// and the requests to other hosts, which it aborts.
async function watch(context, page) {
  const seen = {
    consoleErrors: [],
    pageErrors: [],
    cspViolations: [],
    failedLocalRequests: [],
    nonLocalRequests: [],
    localRequests: 0,
  };
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.protocol !== 'data:' && url.protocol !== 'blob:' && url.hostname !== LOCAL) {
      seen.nonLocalRequests.push(url.origin + url.pathname);
      return route.abort('blockedbyclient');
    }
    seen.localRequests += 1;
    return route.continue();
  });
  const onConsole = (where) => (message) => {
    const text = `${where}${message.text()}`;
    if (/Content[- ]Security[- ]Policy/i.test(text)) seen.cspViolations.push(text);
    if (message.type() === 'error') seen.consoleErrors.push(text);
  };
  page.on('console', onConsole(''));
  page.on('worker', (worker) => worker.on?.('console', onConsole(`worker ${worker.url()}: `)));
  page.on('pageerror', (error) => seen.pageErrors.push(String(error?.stack || error)));
  page.on('requestfailed', (request) => {
    if (new URL(request.url()).hostname === LOCAL) {
      seen.failedLocalRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    }
  });
  page.on('response', (response) => {
    if (new URL(response.url()).hostname === LOCAL && response.status() >= 400) {
      seen.failedLocalRequests.push(`${response.request().method()} ${response.url()}: HTTP ${response.status()}`);
    }
  });
  return seen;
}

// What the page's own `securitypolicyviolation` events saw (recorded by the init script).
async function pageViolations(page, seen) {
  const events = await page.evaluate(() => globalThis.__cspViolations ?? []).catch(() => []);
  seen.cspViolations.push(...events);
}

function summary(seen) {
  return {
    consoleErrors: seen.consoleErrors,
    pageErrors: seen.pageErrors,
    cspViolations: seen.cspViolations,
    failedLocalRequests: seen.failedLocalRequests,
    localRequests: seen.localRequests,
    nonLocalRequestsAborted: seen.nonLocalRequests.length,
    nonLocalRequests: [...new Set(seen.nonLocalRequests)].slice(0, 20),
  };
}

function clean(seen) {
  return (
    !seen.consoleErrors.length &&
    !seen.pageErrors.length &&
    !seen.cspViolations.length &&
    !seen.failedLocalRequests.length &&
    !seen.nonLocalRequests.length
  );
}

async function checkGraphiql(context, url, out) {
  const page = await context.newPage();
  const seen = await watch(context, page);
  const started = Date.now();
  const result = { url };
  try {
    const response = await page.goto(url, { waitUntil: 'load', timeout });
    result.status = response?.status();
    result.contentSecurityPolicy = response?.headers()['content-security-policy'] ?? null;
    // The first tab runs on open: wait for its answer in the result pane (Monaco draws only the
    // visible lines, and the answer starts with {"data": {"model": ...).
    await page.waitForFunction(
      () => {
        const pane = document.querySelector('.graphiql-response .monaco-editor .view-lines');
        return pane && /"model"/.test(pane.textContent.replace(/\u00a0/g, ' '));
      },
      null,
      { timeout, polling: 250 },
    );
    result.msToAnswer = Date.now() - started;
    Object.assign(
      result,
      await page.evaluate(() => {
        const models = globalThis.__MONACO?.editor?.getModels() ?? [];
        const text = (name) => models.find((m) => m.uri.toString().endsWith(name))?.getValue();
        let answer = null;
        try {
          answer = JSON.parse(text('response.json') ?? 'null');
        } catch {
          /* reported below as answerParsed: false */
        }
        const tabs = [...document.querySelectorAll('.graphiql-tab-button')].map((tab) =>
          tab.textContent.trim(),
        );
        return {
          tabs,
          activeTab: document.querySelector('.graphiql-tab-active .graphiql-tab-button')?.textContent.trim() ?? null,
          explorerPlugin: Boolean(document.querySelector('[aria-label="Show GraphiQL Explorer"], [aria-label="Hide GraphiQL Explorer"]')),
          query: text('operation.graphql') ?? null,
          variables: text('variables.json') ?? null,
          answerParsed: answer !== null,
          answerErrors: answer?.errors?.length ?? 0,
          answerModel: answer?.data?.model?.slug ?? null,
          answerConfigurations: answer?.data?.model?.configurations?.length ?? null,
          answerCurves: answer?.data?.model?.curves?.length ?? null,
        };
      }),
    );
    await page.waitForTimeout(300); // let the editors settle before the picture
    await pageViolations(page, seen);
    result.screenshot = path.join(out, 'graphiql.png');
    await page.screenshot({ path: result.screenshot });
  } catch (error) {
    result.error = String(error?.message || error).split('\n')[0];
    result.screenshot = path.join(out, 'graphiql-failed.png');
    await page.screenshot({ path: result.screenshot }).catch(() => {});
  }
  Object.assign(result, summary(seen));
  result.ok =
    !result.error &&
    result.status === 200 &&
    result.answerParsed &&
    result.answerErrors === 0 &&
    Boolean(result.answerModel) &&
    result.explorerPlugin &&
    JSON.stringify(result.tabs) === JSON.stringify(EXPECTED_TABS) &&
    result.activeTab === EXPECTED_TABS[0] &&
    clean(seen);
  await page.close();
  await context.unroute('**/*');
  return result;
}

async function checkExample(context, pageUrl, api, out) {
  const page = await context.newPage();
  const seen = await watch(context, page);
  const url = new URL(pageUrl);
  url.searchParams.set('api', api);
  const result = { url: url.href, api, crossOrigin: url.origin !== new URL(api).origin };
  const started = Date.now();
  try {
    const response = await page.goto(url.href, { waitUntil: 'load', timeout });
    result.status = response?.status();
    const state = await page.waitForFunction(
      () => {
        const status = document.querySelector('[data-state]');
        const value = status?.getAttribute('data-state');
        return value === 'loaded' || value === 'error' ? { value, text: status.textContent } : null;
      },
      null,
      { timeout, polling: 100 },
    );
    const { value, text } = await state.jsonValue();
    result.state = value;
    result.statusText = text.trim();
    result.msToLoaded = Date.now() - started;
    Object.assign(
      result,
      await page.evaluate(() => ({
        charts: document.querySelectorAll('svg[data-chart]').length,
        curves: document.querySelectorAll('svg [data-series]').length,
        // Per chart: its drawn points (circles with coordinates inside the plot).
        points: [...document.querySelectorAll('svg[data-chart]')].map((svg) => ({
          chart: svg.getAttribute('data-chart'),
          drawn: [...svg.querySelectorAll('circle')].filter((c) =>
            ['cx', 'cy'].every((a) => Number.isFinite(Number(c.getAttribute(a)))),
          ).length,
          frontier: svg.querySelectorAll('g.emphasis circle').length,
        })),
      })),
    );
    await pageViolations(page, seen);
    result.screenshot = path.join(out, 'example.png');
    await page.screenshot({ path: result.screenshot, fullPage: true });
  } catch (error) {
    result.error = String(error?.message || error).split('\n')[0];
    result.screenshot = path.join(out, 'example-failed.png');
    await page.screenshot({ path: result.screenshot }).catch(() => {});
  }
  Object.assign(result, summary(seen));
  result.ok =
    !result.error &&
    result.status === 200 &&
    result.state === 'loaded' &&
    result.crossOrigin &&
    result.charts > 0 &&
    result.points.every((chart) => chart.drawn > 0) &&
    clean(seen);
  await page.close();
  await context.unroute('**/*');
  return result;
}

// The page's status once it says loaded or error, and not `before` (the text of the last one).
async function settled(page, before = null) {
  const state = await page.waitForFunction(
    (previous) => {
      const status = document.querySelector('#status');
      const value = status?.getAttribute('data-state');
      const text = status?.textContent ?? '';
      return (value === 'loaded' || value === 'error') && text !== previous ? { value, text } : null;
    },
    before,
    { timeout, polling: 100 },
  );
  const { value, text } = await state.jsonValue();
  return { state: value, statusText: text.trim() };
}

// What the plan explorer shows: the chart's points (and its rings), the table's rows, the
// address the form wrote.
async function plannerView(page) {
  return page.evaluate(() => {
    const svg = document.querySelector('svg[data-chart="energy-gpus"]');
    const circles = svg ? [...svg.querySelectorAll('circle')] : [];
    return {
      task: document.querySelector('#task')?.value ?? null,
      models: [...(document.querySelector('#models')?.selectedOptions ?? [])].map((o) => o.value),
      charts: document.querySelectorAll('svg[data-chart]').length,
      drawn: circles.filter((c) => ['cx', 'cy'].every((a) => Number.isFinite(Number(c.getAttribute(a))))).length,
      pareto: svg ? svg.querySelectorAll('g.emphasis circle').length : 0,
      rows: document.querySelectorAll('#plans tbody tr').length,
      paretoRows: document.querySelectorAll('#plans tbody tr.pareto').length,
      ranks: [...document.querySelectorAll('#plans tbody tr')].map((r) => Number(r.dataset.rank)),
      search: location.search,
    };
  });
}

async function checkPlanner(context, pageUrl, api, out) {
  const page = await context.newPage();
  const seen = await watch(context, page);
  const url = new URL(pageUrl);
  url.searchParams.set('api', api);
  const result = { url: url.href, api, crossOrigin: url.origin !== new URL(api).origin };
  try {
    const response = await page.goto(url.href, { waitUntil: 'load', timeout });
    result.status = response?.status();
    result.first = { ...(await settled(page)), ...(await plannerView(page)) };
    result.screenshot = path.join(out, 'planner.png');
    await page.screenshot({ path: result.screenshot, fullPage: true });
    // Another task, chosen in the form as a person would.
    await page.selectOption('#task', opts['then-task']);
    await page.fill('#demand', opts['then-demand']);
    await page.fill('#latency', opts['then-latency']);
    await page.click('#plan');
    result.then = { ...(await settled(page, result.first.statusText)), ...(await plannerView(page)) };
    await pageViolations(page, seen);
  } catch (error) {
    result.error = String(error?.message || error).split('\n')[0];
    result.screenshot = path.join(out, 'planner-failed.png');
    await page.screenshot({ path: result.screenshot }).catch(() => {});
  }
  Object.assign(result, summary(seen));
  result.ok =
    !result.error &&
    result.status === 200 &&
    result.crossOrigin &&
    [result.first, result.then].every((view) => view?.state === 'loaded' && view.charts === 1 && view.drawn > 0) &&
    clean(seen);
  await page.close();
  await context.unroute('**/*');
  return result;
}

const out = path.resolve(opts.out);
await mkdir(out, { recursive: true });
const executablePath = await findChromium();
const profile = await mkdtemp(path.join(os.tmpdir(), 'leadgreen-chromium-'));
const results = { ok: false, chromium: executablePath };
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: LAUNCH_ARGS,
    viewport: { width: 1440, height: 900 },
    serviceWorkers: 'block',
  });
  await context.addInitScript(() => {
    globalThis.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      globalThis.__cspViolations.push(`${event.effectiveDirective}: ${event.blockedURI || 'inline'}`);
    });
  });
  const blank = context.pages()[0] ?? (await context.newPage());
  results.browser = await blank.evaluate(() => navigator.userAgent);
  if (opts.graphiql) results.graphiql = await checkGraphiql(context, opts.graphiql, out);
  if (opts.example) results.example = await checkExample(context, opts.example, opts.api, out);
  if (opts.planner) results.planner = await checkPlanner(context, opts.planner, opts.api, out);
  results.ok = [results.graphiql, results.example, results.planner].every((r) => r === undefined || r.ok);
} catch (error) {
  results.error = String(error?.message || error).split('\n')[0];
} finally {
  await context?.close().catch(() => {});
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}
console.log(JSON.stringify(results));
process.exit(results.ok ? 0 : 1);
