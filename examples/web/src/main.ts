import './style.css';

import { createClient, fetchModelCurves, type ModelCurves } from './api';
import { chart, format, legend, type Series } from './chart';

const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#0891b2', '#dc2626', '#4b5563', '#db2777'];
const FRONTIER_COLOR = '#111827';

const status = document.getElementById('status') as HTMLElement;
const charts = document.getElementById('charts') as HTMLElement;
const source = document.getElementById('source') as HTMLElement;

function setStatus(state: 'loading' | 'loaded' | 'error', text: string): void {
  status.dataset.state = state;
  status.textContent = text;
}

function draw(data: ModelCurves): void {
  const model = data.model!;
  const curves = model.curves.map((curve, i) => ({
    name: `${curve.gpuModel} × ${curve.numGpus}`,
    color: PALETTE[i % PALETTE.length],
    points: curve.points,
  }));
  const frontier = data.paretoFrontier[0];
  const onFrontier = [...(frontier?.configurations ?? [])].sort((a, b) => a.medianItlMs - b.medianItlMs);
  const frontierName = `Pareto frontier (${onFrontier.length} of ${frontier?.candidates ?? 0})`;

  const byConcurrency: Series[] = [
    ...curves.map((c) => ({
      name: c.name,
      color: c.color,
      line: true,
      points: c.points.map((p) => ({
        x: p.maxNumSeqs,
        y: p.energyPerTokenJoules,
        label: `max_num_seqs ${p.maxNumSeqs}: ${format(p.energyPerTokenJoules)} J/token`,
      })),
    })),
    {
      name: frontierName,
      color: FRONTIER_COLOR,
      emphasis: true,
      points: onFrontier.map((c) => ({
        x: c.maxNumSeqs,
        y: c.energyPerTokenJoules,
        label: `${c.gpuModel} × ${c.numGpus}, max_num_seqs ${c.maxNumSeqs}`,
      })),
    },
  ];
  const tradeOff: Series[] = [
    ...curves.map((c) => ({
      name: c.name,
      color: c.color,
      line: true,
      points: c.points.map((p) => ({
        x: p.medianItlMs,
        y: p.energyPerTokenJoules,
        label: `max_num_seqs ${p.maxNumSeqs}: ${format(p.medianItlMs)} ms, ${format(p.energyPerTokenJoules)} J/token`,
      })),
    })),
    {
      name: frontierName,
      color: FRONTIER_COLOR,
      emphasis: true,
      line: true,
      points: onFrontier.map((c) => ({
        x: c.medianItlMs,
        y: c.energyPerTokenJoules,
        label: `${c.gpuModel} × ${c.numGpus}, max_num_seqs ${c.maxNumSeqs}: ${format(c.medianItlMs)} ms`,
      })),
    },
  ];

  const figure = (svg: SVGSVGElement, caption: string) => {
    const fig = document.createElement('figure');
    const cap = document.createElement('figcaption');
    cap.textContent = caption;
    fig.append(svg, cap);
    return fig;
  };
  charts.replaceChildren(
    figure(
      chart({
        id: 'energy-by-concurrency',
        title: `${model.name}: energy per token by max_num_seqs`,
        x: { label: 'max_num_seqs (log scale)', scale: 'log2' },
        y: { label: 'energy per token, J (log scale)', scale: 'log10' },
        series: byConcurrency,
      }),
      'Each line is one concurrency curve (GPU type × GPU count); rings mark the configurations on the Pareto frontier.',
    ),
    figure(
      chart({
        id: 'time-energy',
        title: `${model.name}: median ITL against energy per token`,
        x: { label: 'median inter-token latency, ms (log scale)', scale: 'log10' },
        y: { label: 'energy per token, J (log scale)', scale: 'log10' },
        series: tradeOff,
      }),
      'The dashed line joins the frontier: no other configuration of the model is both faster and more frugal.',
    ),
    legend(byConcurrency),
  );
  const points = curves.reduce((n, c) => n + c.points.length, 0);
  source.textContent = `Data: ${data.source.name} (${data.source.release.lastUpdated}), ${data.source.licence}.`;
  setStatus(
    'loaded',
    `${model.name}: ${curves.length} curves, ${points} points; ${onFrontier.length} of ${frontier?.candidates ?? 0} configurations on the Pareto frontier.`,
  );
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.search);
  const api = params.get('api');
  const slug = params.get('slug') || 'qwen-3-8b';
  if (!api) {
    setStatus('error', 'Give the API base URL in the address: ?api=http://127.0.0.1:8000');
    return;
  }
  try {
    setStatus('loading', `Asking ${api} for ${slug}…`);
    draw(await fetchModelCurves(createClient(api), slug));
  } catch (error) {
    setStatus('error', `Could not load ${slug} from ${api}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

void main();
