import './style.css';

import type { Client } from '@urql/core';

import { createClient } from './api';
import { chart, format, legend, type Series } from './chart';
import {
  fetchChoices,
  fetchPlans,
  type DeploymentPlans,
  type Plan,
  type PlanChoices,
  type PlanVariables,
  WHOLE_TASK,
} from './planApi';

const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#0891b2', '#dc2626', '#4b5563', '#db2777'];
const PARETO_COLOR = '#111827';
// The ranked plans shown in the table (the chart draws every plan).
const TABLE_ROWS = 25;

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const form = byId<HTMLFormElement>('plan-form');
const status = byId<HTMLElement>('status');
const charts = byId<HTMLElement>('charts');
const results = byId<HTMLElement>('results');
const source = byId<HTMLElement>('source');
const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;
const taskSelect = field('task') as HTMLSelectElement;
const modelSelect = field('models') as HTMLSelectElement;

// The fields kept in the address (besides `api`), so that a plan can be linked to.
const PARAMS = ['task', 'models', 'demand', 'tokens', 'utilization', 'latency', 'percentile', 'pue', 'carbon', 'price', 'objective'];

function setStatus(state: 'loading' | 'loaded' | 'error', text: string): void {
  status.dataset.state = state;
  status.textContent = text;
}

type Kind = 'llm' | 'image' | 'video';

// LLM and MLLM tasks plan in requests per second under an ITL limit; diffusion tasks in images
// or videos per second under a batch-latency limit (DemandInput and LatencyInput say which).
function kindOf(choices: PlanChoices, task: string): Kind {
  const architecture = choices.tasks.find((t) => t.name === task)?.architecture;
  if (architecture !== 'diffusion') return 'llm';
  return task.includes('video') ? 'video' : 'image';
}

function showKind(kind: Kind): void {
  byId('demand-unit').textContent = kind === 'llm' ? 'requests per second' : `${kind}s per second`;
  byId('latency-unit').textContent = kind === 'llm' ? 'ITL, ms' : 'batch latency, s';
  for (const node of form.querySelectorAll<HTMLElement>('.llm-only')) node.hidden = kind !== 'llm';
}

function fillTasks(choices: PlanChoices, chosen: string): void {
  taskSelect.replaceChildren(
    ...choices.tasks.map((t) => new Option(`${t.displayName} (${t.name})`, t.name, false, t.name === chosen)),
  );
}

function fillModels(choices: PlanChoices, task: string, chosen: Set<string>): void {
  const models = choices.models.filter((m) => m.tasks.some((t) => t.task === task));
  modelSelect.replaceChildren(...models.map((m) => new Option(m.name, m.slug, false, chosen.has(m.slug))));
}

function number(name: string): number | null {
  const value = field(name).value.trim();
  return value === '' ? null : Number(value);
}

function variables(kind: Kind): PlanVariables {
  const task = taskSelect.value;
  const models = [...modelSelect.selectedOptions].map((o) => o.value);
  const rate = number('demand') ?? 0;
  const demand: Record<string, number> =
    kind === 'llm' ? { requestsPerSecond: rate } : { [kind === 'image' ? 'imagesPerSecond' : 'videosPerSecond']: rate };
  const tokens = number('tokens');
  if (kind === 'llm' && tokens !== null) demand.outputTokensPerRequest = tokens;
  const most = number('latency');
  const latency: PlanVariables['latency'] =
    most === null
      ? null
      : kind === 'llm'
        ? { maxItlMs: most, percentile: field('percentile').value }
        : { maxBatchLatencySeconds: most };
  const site: Record<string, number> = { pue: number('pue') ?? 1 };
  const carbon = number('carbon');
  const price = number('price');
  if (carbon !== null) site.carbonIntensityGramsPerKwh = carbon;
  if (price !== null) site.electricityPricePerKwh = price;
  return {
    task,
    models: models.length ? models : null,
    demand,
    latency,
    utilization: number('utilization') ?? 1,
    objective: field('objective').value,
    site,
    first: WHOLE_TASK,
  };
}

function remember(api: string): void {
  const params = new URLSearchParams({ api });
  for (const name of PARAMS) {
    if (field(name).closest('label')?.hidden) continue; // not asked for this kind of task
    const value =
      name === 'models' ? [...modelSelect.selectedOptions].map((o) => o.value).join(',') : field(name).value.trim();
    if (value) params.set(name, value);
  }
  history.replaceState(null, '', `?${params}`);
}

function restore(params: URLSearchParams): void {
  for (const name of PARAMS) {
    const value = params.get(name);
    if (value !== null && name !== 'task' && name !== 'models') field(name).value = value;
  }
}

function setting(plan: Plan): string {
  const c = plan.configuration;
  if (c.maxNumSeqs !== undefined) return `max_num_seqs ${c.maxNumSeqs}`;
  return c.batchSize !== undefined ? `batch ${c.batchSize}` : '';
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

function describe(plan: Plan): string {
  const c = plan.configuration;
  return `#${plan.rank} ${c.model.name} on ${c.gpuModel} × ${c.numGpus}, ${setting(plan)}: ${count(plan.replicas, 'replica', 'replicas')}, ${count(plan.gpuCount, 'GPU', 'GPUs')}, ${format(plan.energyPerDayKwh.upper)} kWh a day`;
}

function drawChart(answer: DeploymentPlans['deploymentPlan']): void {
  const gpuTypes = [...new Set(answer.plans.map((p) => p.configuration.gpuModel))].sort();
  const point = (p: Plan) => ({ x: p.gpuCount, y: p.energyPerDayKwh.upper, label: describe(p) });
  const pareto = answer.plans.filter((p) => p.paretoOptimal).sort((a, b) => a.gpuCount - b.gpuCount);
  const series: Series[] = [
    ...gpuTypes.map((gpu, i) => ({
      name: `on ${gpu}`,
      color: PALETTE[i % PALETTE.length],
      points: answer.plans.filter((p) => p.configuration.gpuModel === gpu).map(point),
    })),
    { name: `Pareto-optimal (${pareto.length})`, color: PARETO_COLOR, emphasis: true, line: true, points: pareto.map(point) },
  ];
  const figure = document.createElement('figure');
  const caption = document.createElement('figcaption');
  caption.textContent =
    'Each point is one plan: a measured configuration sized to the demand. Rings mark the plans no other plan beats in both GPUs and energy a day (upper bound: every replica at its measured power).';
  figure.append(
    chart({
      id: 'energy-gpus',
      title: 'Energy a day against GPUs, every plan',
      x: { label: 'GPUs (log scale)', scale: 'log2' },
      y: { label: 'energy a day, kWh, upper bound (log scale)', scale: 'log10' },
      series,
      width: 720,
      height: 420,
    }),
    caption,
  );
  charts.replaceChildren(figure, legend(series));
}

function cell(row: HTMLTableRowElement, text: string, numeric = false): void {
  const td = row.insertCell();
  td.textContent = text;
  if (numeric) td.className = 'number';
}

const range = (b: { lower: number; upper: number } | null) => (b === null ? '—' : `${format(b.lower)}–${format(b.upper)}`);

function drawTable(answer: DeploymentPlans['deploymentPlan']): void {
  const table = document.createElement('table');
  table.id = 'plans';
  const head = table.createTHead().insertRow();
  for (const title of ['rank', 'model', 'GPU × count', 'setting', 'replicas', 'GPUs', 'power, W', 'energy a day, kWh', 'J per request', 'CO₂e a day, kg', 'cost a day', 'Pareto']) {
    const th = document.createElement('th');
    th.textContent = title;
    head.append(th);
  }
  const body = table.createTBody();
  for (const plan of answer.plans.slice(0, TABLE_ROWS)) {
    const row = body.insertRow();
    row.dataset.rank = String(plan.rank);
    if (plan.paretoOptimal) row.className = 'pareto';
    const c = plan.configuration;
    cell(row, String(plan.rank), true);
    cell(row, c.model.name);
    cell(row, `${c.gpuModel} × ${c.numGpus}`);
    cell(row, setting(plan));
    cell(row, String(plan.replicas), true);
    cell(row, String(plan.gpuCount), true);
    cell(row, range(plan.powerWatts), true);
    cell(row, range(plan.energyPerDayKwh), true);
    cell(row, format(plan.energyPerRequestJoules), true);
    cell(row, range(plan.carbonPerDayKg), true);
    cell(row, plan.costPerDay === null ? '—' : format(plan.costPerDay), true);
    cell(row, plan.paretoOptimal ? '✓' : '');
  }
  const caption = table.createCaption();
  caption.textContent = `The first ${Math.min(TABLE_ROWS, answer.plans.length)} of ${answer.totalCount} plans, ranked; ranges are the lower and upper bounds.`;
  const how = document.createElement('details');
  how.id = 'method';
  const summary = document.createElement('summary');
  summary.textContent = 'What the answer assumed, and how it computed each figure';
  const list = (items: string[]) => {
    const ul = document.createElement('ul');
    for (const text of items) ul.append(Object.assign(document.createElement('li'), { textContent: text }));
    return ul;
  };
  how.append(summary, list(answer.assumptions), list(answer.method));
  results.replaceChildren(table, how);
}

async function plan(client: Client, choices: PlanChoices, api: string): Promise<void> {
  const kind = kindOf(choices, taskSelect.value);
  remember(api);
  setStatus('loading', `Planning ${taskSelect.value}…`);
  const answer = await fetchPlans(client, variables(kind));
  if (!answer.plans.length) {
    charts.replaceChildren();
    results.replaceChildren();
    setStatus('loaded', `No plan: ${answer.reason ?? 'nothing meets the limits'}`);
    return;
  }
  drawChart(answer);
  drawTable(answer);
  const pareto = answer.plans.filter((p) => p.paretoOptimal).length;
  const excluded = answer.excluded.map((e) => `${e.configurations} over ${e.limit}`).join(', ');
  setStatus(
    'loaded',
    `${count(answer.totalCount, 'plan', 'plans')} of ${answer.candidates} configurations (${answer.demandUnit}); ${pareto} Pareto-optimal${excluded ? `; excluded: ${excluded}` : ''}. Best: ${describe(answer.plans[0])}.`,
  );
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const api = params.get('api');
  if (!api) {
    setStatus('error', 'Give the API base URL in the address: ?api=http://127.0.0.1:8000');
    return;
  }
  const client = createClient(api);
  const fail = (error: unknown) =>
    setStatus('error', `Could not plan from ${api}: ${error instanceof Error ? error.message : String(error)}`);
  try {
    const choices = await fetchChoices(client);
    const task = params.get('task') || 'lm-arena-chat';
    fillTasks(choices, task);
    fillModels(choices, taskSelect.value, new Set((params.get('models') || '').split(',').filter(Boolean)));
    restore(params);
    showKind(kindOf(choices, taskSelect.value));
    source.textContent = `Data: ${choices.source.name} (${choices.source.release.lastUpdated}), ${choices.source.licence}.`;
    let shown = kindOf(choices, taskSelect.value);
    taskSelect.addEventListener('change', () => {
      const kind = kindOf(choices, taskSelect.value);
      fillModels(choices, taskSelect.value, new Set());
      showKind(kind);
      // A limit in ms means nothing in seconds, nor a rate of requests in images.
      if (kind !== shown) field('latency').value = '';
      shown = kind;
    });
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      plan(client, choices, api).catch(fail);
    });
    await plan(client, choices, api);
  } catch (error) {
    fail(error);
  }
}

void main();
