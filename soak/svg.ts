import type { FaultMark } from './figures';
import { memoryMb, type Sample } from './sampler';

/**
 * The soak's picture, hand-written SVG (no plotting dependency): turn latency p50/p99 over time above,
 * the memory of every process below, the faults as labelled vertical lines across both.
 */
const W = 960;
const PANEL = 260;
const LEFT = 60;
const RIGHT = 200;
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#393b79', '#637939'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceMax(v: number): number {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}

interface Series {
  label: string;
  points: Array<[number, number]>;
}

function panel(top: number, title: string, unit: string, series: Series[], start: number, end: number, faults: FaultMark[]): string {
  const plotW = W - LEFT - RIGHT;
  const max = niceMax(Math.max(0, ...series.flatMap((s) => s.points.map((p) => p[1]))));
  const x = (t: number) => LEFT + ((t - start) / Math.max(1, end - start)) * plotW;
  const y = (v: number) => top + PANEL - (v / max) * PANEL;
  const out: string[] = [`<text x="${LEFT}" y="${top - 8}" font-weight="bold">${esc(title)}</text>`];
  out.push(`<rect x="${LEFT}" y="${top}" width="${plotW}" height="${PANEL}" fill="none" stroke="#999"/>`);
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    out.push(`<line x1="${LEFT}" x2="${LEFT + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    out.push(`<text x="${LEFT - 6}" y="${y(v) + 4}" text-anchor="end" font-size="11">${v.toLocaleString('en', { maximumFractionDigits: 1 })}</text>`);
  }
  out.push(`<text x="14" y="${top + PANEL / 2}" font-size="11" transform="rotate(-90 14 ${top + PANEL / 2})" text-anchor="middle">${esc(unit)}</text>`);
  for (const f of faults) out.push(`<line x1="${x(f.at)}" x2="${x(f.at)}" y1="${top}" y2="${top + PANEL}" stroke="#c00" stroke-dasharray="4 3" opacity="0.6"/>`);
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] ?? '#000';
    const d = s.points.map(([t, v], j) => `${j === 0 ? 'M' : 'L'}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    if (d) out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.5"/>`);
    out.push(`<rect x="${LEFT + plotW + 12}" y="${top + i * 16}" width="10" height="10" fill="${color}"/>`);
    out.push(`<text x="${LEFT + plotW + 28}" y="${top + i * 16 + 9}" font-size="11">${esc(s.label)}</text>`);
  });
  return out.join('\n');
}

export function soakSvg(opts: {
  title: string;
  start: number;
  end: number;
  latency: Array<{ t: number; p50: number; p99: number }>;
  samples: Sample[];
  faults: FaultMark[];
}): string {
  const { start, end, faults } = opts;
  const lat: Series[] = [
    { label: 'turn p50', points: opts.latency.map((b) => [b.t, b.p50 / 1000]) },
    { label: 'turn p99', points: opts.latency.map((b) => [b.t, b.p99 / 1000]) },
  ];
  const names = [...new Set(opts.samples.map((s) => s.name))];
  const memory: Series[] = names.map((name) => ({ label: name, points: opts.samples.filter((s) => s.name === name).map((s) => [s.t, memoryMb(s)]) }));
  const top1 = 50;
  const top2 = top1 + PANEL + 60;
  const height = top2 + PANEL + 60;
  const plotW = W - LEFT - RIGHT;
  const minutes = (end - start) / 60_000;
  const ticks = Array.from({ length: 11 }, (_, i) => i / 10).map((f) => {
    const tx = LEFT + f * plotW;
    return `<text x="${tx}" y="${height - 30}" text-anchor="middle" font-size="11">${(f * minutes).toFixed(minutes < 5 ? 1 : 0)}</text>`;
  });
  const labels = faults.map((f, i) => {
    const tx = LEFT + ((f.at - start) / Math.max(1, end - start)) * plotW;
    return `<text x="${tx + 2}" y="${top1 + 12 + (i % 6) * 12}" font-size="10" fill="#c00">${esc(f.name)}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${LEFT}" y="22" font-size="15" font-weight="bold">${esc(opts.title)}</text>`,
    panel(top1, 'Turn latency (submission to end), per window of the run', 'seconds', lat, start, end, faults),
    panel(top2, 'Memory of every process (RSS; for a process tree, the sum of its PSS)', 'MB', memory, start, end, faults),
    ...labels,
    ...ticks,
    `<text x="${LEFT + plotW / 2}" y="${height - 10}" text-anchor="middle" font-size="11">minutes into the run (red dashes: faults)</text>`,
    '</svg>',
  ].join('\n');
}
