// GraphiQL keeps its tabs, history and settings in a Storage. Browsers that block site data
// throw on the mere access of `window.localStorage` (and some throw on every setItem): use
// localStorage when it works, memory otherwise, and let no storage error but a failed write
// (which GraphiQL reports itself) reach GraphiQL.
//
// The open tabs (and the editors' last contents) are kept per tab configuration: when the server
// configures other tabs, the page opens on those instead of the tabs stored for the old ones.
// History, favourites and settings are kept across configurations.

const ROOT = 'leadgreen:';
// GraphiQL's keys (StorageAPI prefixes them with "graphiql:") that belong to the open tabs.
const SESSION_KEYS = new Set(['tabState', 'query', 'variables', 'headers', 'operationName']);

function probeLocalStorage() {
  try {
    const storage = window.localStorage;
    const key = `${ROOT}probe`;
    storage.setItem(key, key);
    storage.removeItem(key);
    return storage;
  } catch {
    return null;
  }
}

function memoryBackend() {
  const items = new Map();
  return {
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => void items.set(key, String(value)),
    removeItem: (key) => void items.delete(key),
    keys: () => [...items.keys()],
  };
}

function localBackend(local) {
  return {
    getItem: (key) => local.getItem(key),
    setItem: (key, value) => local.setItem(key, value),
    removeItem: (key) => local.removeItem(key),
    keys: () => Object.keys(local),
  };
}

function safely(fn, fallback) {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

// A Storage (getItem, setItem, removeItem, clear, length) for GraphiQL's `storage` prop.
// `session` names the tab configuration (a hash of it).
export function createStorage(session) {
  const local = probeLocalStorage();
  const backend = local ? localBackend(local) : memoryBackend();
  const sessionRoot = `${ROOT}tabs-`;
  const sessionPrefix = `${sessionRoot}${session}:`;
  const own = () => safely(() => backend.keys().filter((key) => key.startsWith(ROOT)), []);
  const keyFor = (key) => {
    const name = key.slice(key.indexOf(':') + 1);
    return SESSION_KEYS.has(name) ? sessionPrefix + key : ROOT + key;
  };

  // Tabs stored for other configurations will not be opened again.
  for (const key of own()) {
    if (key.startsWith(sessionRoot) && !key.startsWith(sessionPrefix)) {
      safely(() => backend.removeItem(key));
    }
  }

  return {
    persistent: Boolean(local),
    getItem: (key) => safely(() => backend.getItem(keyFor(key)), null),
    setItem: (key, value) => backend.setItem(keyFor(key), value),
    removeItem: (key) => safely(() => backend.removeItem(keyFor(key))),
    clear: () => own().forEach((key) => safely(() => backend.removeItem(key))),
    get length() {
      return own().length;
    },
  };
}
