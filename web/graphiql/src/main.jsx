// LeadGreen's GraphiQL: configured by the page's <script type="application/json"
// id="graphiql-config"> (no inline script, so it runs under a strict CSP).
import './workers.js';
import 'graphiql/style.css';
import '@graphiql/plugin-explorer/style.css';
import './page.css';

import { explorerPlugin } from '@graphiql/plugin-explorer';
import { pick, useGraphiQL, useGraphiQLActions } from '@graphiql/react';
import { createGraphiQLFetcher } from '@graphiql/toolkit';
import { GraphiQL, HISTORY_PLUGIN } from 'graphiql';
import { useEffect, useRef } from 'react';
import { createRoot } from 'react-dom/client';

import { createStorage } from './storage.js';

function readConfig() {
  const element = document.getElementById('graphiql-config');
  if (!element) throw new Error('no <script id="graphiql-config"> element in the page');
  let config;
  try {
    config = JSON.parse(element.textContent);
  } catch (error) {
    throw new Error(`the GraphiQL configuration is not JSON: ${error.message}`);
  }
  if (!config || typeof config !== 'object' || typeof config.endpoint !== 'string') {
    throw new Error('the GraphiQL configuration has no "endpoint"');
  }
  const tabs = Array.isArray(config.tabs) ? config.tabs : [];
  return {
    endpoint: config.endpoint,
    runFirstTab: config.runFirstTab === true && tabs.length > 0,
    tabs: tabs.map((tab) => ({
      name: typeof tab.name === 'string' ? tab.name : null,
      query: typeof tab.query === 'string' ? tab.query : '',
      variables: typeof tab.variables === 'string' ? tab.variables : null,
      headers: null,
    })),
  };
}

// A short stable hash of the configured tabs: stored tab state belongs to one configuration.
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(36);
}

// GraphiQL opens on the stored tab whose contents equal the stored editor contents, and fills
// its editors from those (the variables editor only from them). Point both at the first tab
// before GraphiQL starts: the configured first tab in a new session, the stored first tab when
// it is to run on open.
function prepareSession(storage, config) {
  let first = config.tabs[0];
  const stored = storage.getItem('graphiql:tabState');
  if (stored) {
    if (!config.runFirstTab) return;
    try {
      const state = JSON.parse(stored);
      if (!Array.isArray(state?.tabs) || !state.tabs.length) return;
      first = state.tabs[0];
      storage.setItem('graphiql:tabState', JSON.stringify({ ...state, activeTabIndex: 0 }));
    } catch {
      return; // GraphiQL discards what it cannot read and opens the configured tabs
    }
  }
  if (!first) return;
  for (const key of ['query', 'variables']) {
    try {
      if (first[key]) storage.setItem(`graphiql:${key}`, first[key]);
      else storage.removeItem(`graphiql:${key}`);
    } catch {
      /* a full or failing storage: GraphiQL opens without it */
    }
  }
}

// Runs the open tab once, as soon as its editors exist (GraphiQL runs what the editors hold).
function RunOnOpen() {
  const { queryEditor, variableEditor, responseEditor } = useGraphiQL(
    pick('queryEditor', 'variableEditor', 'responseEditor'),
  );
  const { run } = useGraphiQLActions();
  const done = useRef(false);
  useEffect(() => {
    if (done.current || !queryEditor || !variableEditor || !responseEditor) return;
    done.current = true;
    run();
  }, [queryEditor, variableEditor, responseEditor, run]);
  return null;
}

function showError(root, message) {
  root.textContent = '';
  const pre = document.createElement('pre');
  pre.className = 'graphiql-config-error';
  pre.textContent = `GraphiQL could not start: ${message}`;
  root.append(pre);
}

function start() {
  const element = document.getElementById('graphiql');
  let config;
  try {
    config = readConfig();
  } catch (error) {
    console.error(error);
    showError(element, error.message);
    return;
  }
  const fetcher = createGraphiQLFetcher({
    url: config.endpoint,
    enableIncrementalDelivery: false, // plain POST, one JSON answer; no subscriptions
  });
  const storage = createStorage(hash(JSON.stringify(config.tabs)));
  prepareSession(storage, config);
  const explorer = explorerPlugin();
  const defaultTabs = config.tabs.map(({ query, variables, headers }) => ({
    query,
    variables,
    headers,
  }));
  createRoot(element).render(
    <GraphiQL
      fetcher={fetcher}
      storage={storage}
      plugins={[HISTORY_PLUGIN, explorer]}
      defaultTabs={defaultTabs.length ? defaultTabs : undefined}
      defaultEditorToolsVisibility={config.tabs[0]?.variables ? 'variables' : undefined}
      shouldPersistHeaders={false}
    >
      {config.runFirstTab ? <RunOnOpen /> : null}
    </GraphiQL>,
  );
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start, { once: true });
} else {
  start();
}
