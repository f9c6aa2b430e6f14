// A scatter/line chart as inline SVG: log or linear axes, one group per series, a tooltip
// (<title>) on every point. No chart library.

const SVG = 'http://www.w3.org/2000/svg';

export type Scale = 'linear' | 'log10' | 'log2';

export interface Point {
  x: number;
  y: number;
  label: string;
}

export interface Series {
  name: string;
  color: string;
  points: Point[];
  line?: boolean;
  /** Drawn on top, larger, with a ring: the Pareto frontier. */
  emphasis?: boolean;
}

export interface ChartSpec {
  id: string;
  title: string;
  x: { label: string; scale: Scale };
  y: { label: string; scale: Scale };
  series: Series[];
  width?: number;
  height?: number;
}

const MARGIN = { top: 36, right: 20, bottom: 48, left: 68 };

function el<K extends keyof SVGElementTagNameMap>(
  name: K,
  attrs: Record<string, string | number> = {},
  text?: string,
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function transform(scale: Scale): (v: number) => number {
  if (scale === 'log10') return Math.log10;
  if (scale === 'log2') return Math.log2;
  return (v) => v;
}

function extent(values: number[], scale: Scale): [number, number] {
  const usable = scale === 'linear' ? values : values.filter((v) => v > 0);
  let lo = Math.min(...usable);
  let hi = Math.max(...usable);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return scale === 'linear' ? [0, 1] : [1, 10];
  if (lo === hi) {
    lo = scale === 'linear' ? lo - 1 : lo / 2;
    hi = scale === 'linear' ? hi + 1 : hi * 2;
  }
  if (scale === 'linear') {
    const pad = (hi - lo) * 0.05;
    return [Math.max(0, lo - pad), hi + pad];
  }
  return [lo / 1.15, hi * 1.15];
}

function ticks([lo, hi]: [number, number], scale: Scale): number[] {
  if (scale === 'log2') {
    const out: number[] = [];
    for (let p = Math.ceil(Math.log2(lo)); p <= Math.floor(Math.log2(hi)); p++) out.push(2 ** p);
    return out.length > 9 ? out.filter((_, i) => i % 2 === 0) : out;
  }
  if (scale === 'log10') {
    const out: number[] = [];
    for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
      for (const m of [1, 2, 5]) {
        const v = m * 10 ** p;
        if (v >= lo && v <= hi) out.push(v);
      }
    }
    return out;
  }
  const step = niceStep((hi - lo) / 6);
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(v);
  return out;
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

export function format(v: number): string {
  if (v === 0) return '0';
  const abs = Math.abs(v);
  if (abs >= 1000) return v.toLocaleString('en', { maximumFractionDigits: 0 });
  if (abs >= 1) return String(Number(v.toPrecision(3)));
  return String(Number(v.toPrecision(2)));
}

export function chart(spec: ChartSpec): SVGSVGElement {
  const width = spec.width ?? 560;
  const height = spec.height ?? 380;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const all = spec.series.flatMap((s) => s.points);
  const xDomain = extent(all.map((p) => p.x), spec.x.scale);
  const yDomain = extent(all.map((p) => p.y), spec.y.scale);
  const tx = transform(spec.x.scale);
  const ty = transform(spec.y.scale);
  const sx = (v: number) =>
    MARGIN.left + ((tx(v) - tx(xDomain[0])) / (tx(xDomain[1]) - tx(xDomain[0]))) * plotW;
  const sy = (v: number) =>
    MARGIN.top + plotH - ((ty(v) - ty(yDomain[0])) / (ty(yDomain[1]) - ty(yDomain[0]))) * plotH;

  const svg = el('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: 'img',
    'aria-labelledby': `${spec.id}-title`,
    'data-chart': spec.id,
    class: 'chart',
  });
  svg.append(el('title', { id: `${spec.id}-title` }, spec.title));
  svg.append(el('text', { x: MARGIN.left, y: 20, class: 'chart-title' }, spec.title));

  const grid = el('g', { class: 'grid' });
  for (const v of ticks(xDomain, spec.x.scale)) {
    const x = sx(v);
    grid.append(el('line', { x1: x, x2: x, y1: MARGIN.top, y2: MARGIN.top + plotH }));
    grid.append(el('text', { x, y: MARGIN.top + plotH + 16, 'text-anchor': 'middle' }, format(v)));
  }
  for (const v of ticks(yDomain, spec.y.scale)) {
    const y = sy(v);
    grid.append(el('line', { x1: MARGIN.left, x2: MARGIN.left + plotW, y1: y, y2: y }));
    grid.append(el('text', { x: MARGIN.left - 6, y: y + 4, 'text-anchor': 'end' }, format(v)));
  }
  svg.append(grid);
  svg.append(
    el('rect', { x: MARGIN.left, y: MARGIN.top, width: plotW, height: plotH, class: 'frame' }),
  );
  svg.append(
    el(
      'text',
      { x: MARGIN.left + plotW / 2, y: height - 8, 'text-anchor': 'middle', class: 'axis-label' },
      spec.x.label,
    ),
  );
  svg.append(
    el(
      'text',
      {
        x: -(MARGIN.top + plotH / 2),
        y: 16,
        transform: 'rotate(-90)',
        'text-anchor': 'middle',
        class: 'axis-label',
      },
      spec.y.label,
    ),
  );

  const ordered = [...spec.series].sort((a, b) => Number(a.emphasis ?? 0) - Number(b.emphasis ?? 0));
  for (const series of ordered) {
    const group = el('g', { 'data-series': series.name, class: series.emphasis ? 'emphasis' : '' });
    const points = series.points.filter(
      (p) => (spec.x.scale === 'linear' || p.x > 0) && (spec.y.scale === 'linear' || p.y > 0),
    );
    if (series.line && points.length > 1) {
      const d = points.map((p, i) => `${i ? 'L' : 'M'}${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`);
      group.append(
        el('path', {
          d: d.join(''),
          fill: 'none',
          stroke: series.color,
          'stroke-width': series.emphasis ? 2.5 : 1.8,
          'stroke-dasharray': series.emphasis ? '6 4' : 'none',
        }),
      );
    }
    for (const p of points) {
      const dot = el('circle', {
        cx: sx(p.x).toFixed(1),
        cy: sy(p.y).toFixed(1),
        r: series.emphasis ? 6 : 3.5,
        fill: series.emphasis ? 'none' : series.color,
        stroke: series.color,
        'stroke-width': series.emphasis ? 2.5 : 1,
      });
      dot.append(el('title', {}, `${series.name}: ${p.label}`));
      group.append(dot);
    }
    svg.append(group);
  }
  return svg;
}

export function legend(series: Series[]): HTMLUListElement {
  const list = document.createElement('ul');
  list.className = 'legend';
  for (const s of series) {
    const item = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = s.emphasis ? 'swatch ring' : 'swatch';
    swatch.style.setProperty('--color', s.color);
    item.append(swatch, s.name);
    list.append(item);
  }
  return list;
}
