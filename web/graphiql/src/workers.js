// Monaco runs its language services in web workers. Under `script-src 'self'` a worker must be
// a same-origin script file (no blob: or data: URL): the build emits one file per worker and
// defines WORKER_FILES as their names; they are resolved against this bundle's own URL.

/* global WORKER_FILES */
const base = document.currentScript?.src || document.baseURI;

globalThis.MonacoEnvironment = {
  getWorkerUrl(_workerId, label) {
    const file = WORKER_FILES[label] || WORKER_FILES.editor;
    return new URL(file, base).href;
  },
  getWorker(workerId, label) {
    return new Worker(this.getWorkerUrl(workerId, label), { name: label });
  },
};
