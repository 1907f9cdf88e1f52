/**
 * The benchmarks' plots (the growth benchmark's: hub and agent RSS against each axis, one panel
 * per axis; the fleet benchmark's: `linesSvg`), drawn
 * as SVG here and photographed to PNG by headless Chromium (the same browser the dashboard
 * tests drive), so docs/ shows the curve without a plotting library.
 */
import { launchBrowser, screenshot } from '../support/browser.js';
import type { GrowthPoint } from './growth.js';

export interface Panel {
  title: string;
  xLabel: string;
  points: GrowthPoint[];
}

const W = 380;
const H = 270;
const PAD = { left: 52, right: 16, top: 34, bottom: 46 };
const COLORS = { hub: '#1f6feb', agent: '#d97706' };

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** A step of 1, 2 or 5 times a power of ten giving about `n` ticks up to `max`. */
function tickStep(max: number, n = 5): number {
  const raw = max / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? raw;
}

function fmt(x: number): string {
  return x >= 1000 ? `${x / 1000}k` : String(x);
}

/** One line of a panel: its points (x, y), drawn dashed when it is a fit, not a measurement. */
export interface Series {
  name: string;
  color: string;
  points: [number, number][];
  dashed?: boolean;
}

/** A panel of any series against one axis (`linesSvg`). */
export interface LinePanel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
}

/** One panel: both processes' RSS against the panel's axis, y from 0 to `yMax` MB. */
function panel(p: Panel, yMax: number, dx: number): string {
  const line = (who: 'hub' | 'agent'): Series => ({
    name: who,
    color: COLORS[who],
    points: p.points.map((q) => [q.at, q[`${who}Mb`]]),
  });
  return linePanel(
    { title: p.title, xLabel: p.xLabel, yLabel: 'RSS (MB)', series: [line('hub'), line('agent')] },
    yMax,
    dx,
  );
}

/** One panel: every series against the panel's axis, y from 0 to `yMax`. */
function linePanel(p: LinePanel, yMax: number, dx: number): string {
  const xs = p.series.flatMap((s) => s.points.map(([x]) => x));
  const xMax = Math.max(...xs, 1);
  const iw = W - PAD.left - PAD.right;
  const ih = H - PAD.top - PAD.bottom;
  const X = (x: number) => dx + PAD.left + (x / xMax) * iw;
  const Y = (y: number) => PAD.top + ih - (y / yMax) * ih;
  const out: string[] = [];
  out.push(
    `<text x="${dx + W / 2}" y="20" text-anchor="middle" font-weight="600">${esc(p.title)}</text>`,
  );
  for (let y = 0; y <= yMax; y += tickStep(yMax)) {
    out.push(
      `<line x1="${X(0)}" x2="${X(xMax)}" y1="${Y(y)}" y2="${Y(y)}" stroke="#e5e7eb"/>`,
      `<text x="${X(0) - 6}" y="${Y(y) + 4}" text-anchor="end" font-size="11">${y}</text>`,
    );
  }
  for (let x = 0; x <= xMax; x += tickStep(xMax, 4)) {
    out.push(
      `<text x="${X(x)}" y="${Y(0) + 16}" text-anchor="middle" font-size="11">${fmt(x)}</text>`,
    );
  }
  out.push(
    `<line x1="${X(0)}" x2="${X(xMax)}" y1="${Y(0)}" y2="${Y(0)}" stroke="#6b7280"/>`,
    `<text x="${dx + PAD.left + iw / 2}" y="${H - 8}" text-anchor="middle" font-size="12">${esc(p.xLabel)}</text>`,
    `<text transform="translate(${dx + 14},${PAD.top + ih / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(p.yLabel)}</text>`,
  );
  for (const s of p.series) {
    const pts = s.points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`);
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    out.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2"${dash} points="${pts.join(' ')}"/>`,
    );
    if (s.dashed) continue;
    for (const [x, y] of s.points) {
      out.push(`<circle cx="${X(x)}" cy="${Y(y)}" r="3" fill="${s.color}"/>`);
    }
  }
  return out.join('\n');
}

/**
 * Panels of any series side by side, each with its own y scale (they measure different things),
 * and one legend of every series name.
 */
export function linesSvg(panels: LinePanel[], caption: string): string {
  const width = W * panels.length;
  const names = new Map(panels.flatMap((p) => p.series.map((s) => [s.name, s] as const)));
  const legend = [...names.values()]
    .map(
      (s, i) =>
        `<rect x="${16 + i * 150}" y="${H + 8}" width="14" height="4" fill="${s.color}"/>` +
        `<text x="${36 + i * 150}" y="${H + 14}" font-size="12">${esc(s.name)}</text>`,
    )
    .join('');
  const body = panels.map((p, i) => {
    const all = p.series.flatMap((s) => s.points.map(([, y]) => y));
    const top = Math.max(...all, 1);
    const yMax = tickStep(top) * Math.ceil(top / tickStep(top));
    return linePanel(p, yMax, i * W);
  });
  // The caption (command and machine) in lines that fit the width, broken after a comma.
  const lines: string[] = [];
  for (const part of caption.split(/(?<=, )/)) {
    const last = lines.at(-1);
    if (last !== undefined && (last + part).length * 5.6 <= width - 24)
      lines[lines.length - 1] = last + part;
    else lines.push(part);
  }
  const captionSvg = lines.map(
    (l, i) =>
      `<text x="12" y="${H + 32 + i * 14}" font-size="10" fill="#6b7280">${esc(l.trimEnd())}</text>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 26 + lines.length * 14}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...body,
    legend,
    ...captionSvg,
    '</svg>',
  ].join('\n');
}

/** All panels side by side with one legend; y axes share one scale so panels compare. */
export function growthSvg(panels: Panel[], caption: string): string {
  const all = panels.flatMap((p) => p.points.flatMap((q) => [q.hubMb, q.agentMb]));
  const yMax = Math.ceil(Math.max(...all, 1) / 25) * 25;
  const width = W * panels.length;
  const legend = (['hub', 'agent'] as const)
    .map(
      (who, i) =>
        `<rect x="${16 + i * 90}" y="${H + 8}" width="14" height="4" fill="${COLORS[who]}"/>` +
        `<text x="${36 + i * 90}" y="${H + 14}" font-size="12">${who}</text>`,
    )
    .join('');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 28}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...panels.map((p, i) => panel(p, yMax, i * W)),
    legend,
    `<text x="${width - 12}" y="${H + 14}" text-anchor="end" font-size="11" fill="#6b7280">${esc(caption)}</text>`,
    '</svg>',
  ].join('\n');
}

/** Renders `svg` in headless Chromium and writes it to `file` as PNG. */
export async function writePng(svg: string, file: string): Promise<void> {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    const box = await page.locator('svg').boundingBox();
    await page.setViewportSize({ width: Math.ceil(box!.width), height: Math.ceil(box!.height) });
    await screenshot(page, file);
  } finally {
    await browser.close();
  }
}
