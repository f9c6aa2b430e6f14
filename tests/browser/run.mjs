#!/usr/bin/env node
// Opens LeadGreen's pages in the system Chromium (playwright-core; no browser is downloaded)
// and checks what a person would see. Prints one JSON line; exits 0 only when every check held.
//
//   node run.mjs --graphiql http://127.0.0.1:8000/graphql --out DIR
//   node run.mjs --example http://127.0.0.1:5174/ --api http://127.0.0.1:8000 --out DIR
//   (both together run both)
//
// Options: --out DIR (screenshots; default ./out), --chromium PATH (default $CHROMIUM or
// /usr/bin/chromium), --timeout MS (per page; default 60000).
//
// Every request to a host other than 127.0.0.1, localhost or [::1] is aborted and counted.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';

const { values: opts } = parseArgs({
  options: {
    graphiql: { type: 'string' },
    example: { type: 'string' },
    api: { type: 'string' },
    out: { type: 'string', default: 'out' },
    chromium: { type: 'string', default: process.env.CHROMIUM || '/usr/bin/chromium' },
    timeout: { type: 'string', default: '60000' },
  },
  strict: true,
});

const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const timeout = Number(opts.timeout);

function usage(message) {
  console.error(`run.mjs: ${message}`);
  console.error('usage: node run.mjs [--graphiql URL] [--example URL --api URL] [--out DIR]');
  process.exit(2);
}

if (!opts.graphiql && !opts.example) usage('give --graphiql URL and/or --example URL');
if (opts.example && !opts.api) usage('--example needs --api URL');

// Watches one page: console errors, uncaught exceptions, failed local requests, and the
// requests to other hosts, which it aborts.
async function watch(context, page) {
  const seen = {
    consoleErrors: [],
    pageErrors: [],
    failedLocalRequests: [],
    nonLocalRequests: [],
    localRequests: 0,
  };
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (/^(https?|wss?):$/.test(url.protocol) && !LOCAL_HOSTS.has(url.hostname)) {
      seen.nonLocalRequests.push(url.origin + url.pathname);
      return route.abort('blockedbyclient');
    }
    seen.localRequests += 1;
    return route.continue();
  });
  const onConsole = (where) => (message) => {
    if (message.type() === 'error') seen.consoleErrors.push(`${where}${message.text()}`);
  };
  page.on('console', onConsole(''));
  page.on('worker', (worker) => worker.on?.('console', onConsole(`worker ${worker.url()}: `)));
  page.on('pageerror', (error) => seen.pageErrors.push(String(error?.stack || error)));
  page.on('requestfailed', (request) => {
    const url = new URL(request.url());
    if (LOCAL_HOSTS.has(url.hostname)) {
      seen.failedLocalRequests.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    }
  });
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (LOCAL_HOSTS.has(url.hostname) && response.status() >= 400) {
      seen.failedLocalRequests.push(`${response.request().method()} ${response.url()}: HTTP ${response.status()}`);
    }
  });
  return seen;
}

function summary(seen) {
  return {
    consoleErrors: seen.consoleErrors,
    pageErrors: seen.pageErrors,
    failedLocalRequests: seen.failedLocalRequests,
    localRequests: seen.localRequests,
    nonLocalRequestsAborted: seen.nonLocalRequests.length,
    nonLocalRequests: [...new Set(seen.nonLocalRequests)].slice(0, 20),
  };
}

function clean(seen) {
  return !seen.consoleErrors.length && !seen.pageErrors.length && !seen.failedLocalRequests.length;
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
          variables: text('variables.json') ?? null,
          answerParsed: answer !== null,
          answerErrors: answer?.errors?.length ?? 0,
          answerModel: answer?.data?.model?.slug ?? null,
          answerConfigurations: answer?.data?.model?.configurations?.length ?? null,
        };
      }),
    );
    await page.waitForTimeout(300); // let the editors settle before the picture
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
        points: document.querySelectorAll('svg circle').length,
      })),
    );
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
    result.points > 0 &&
    clean(seen);
  await page.close();
  await context.unroute('**/*');
  return result;
}

const out = path.resolve(opts.out);
await mkdir(out, { recursive: true });
const profile = await mkdtemp(path.join(os.tmpdir(), 'leadgreen-chromium-'));
const results = { ok: false };
let context;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opts.chromium,
    headless: true,
    args: LAUNCH_ARGS,
    viewport: { width: 1440, height: 900 },
    serviceWorkers: 'block',
  });
  results.browser = context.browser()?.version() ?? null;
  if (opts.graphiql) results.graphiql = await checkGraphiql(context, opts.graphiql, out);
  if (opts.example) results.example = await checkExample(context, opts.example, opts.api, out);
  results.ok = [results.graphiql, results.example].every((r) => r === undefined || r.ok);
} catch (error) {
  results.error = String(error?.message || error).split('\n')[0];
} finally {
  await context?.close().catch(() => {});
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}
console.log(JSON.stringify(results));
process.exit(results.ok ? 0 : 1);
