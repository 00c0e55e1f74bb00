/**
 * The scale curves as SVG: for one scenario, requests a second and p99 latency against
 * the number of Tessera workers (threads on SQLite, `--workers 1,2,4`) and of instances on one
 * PostgreSQL database (`--instances 1,2,4`), one line a series, oidc-provider (one process)
 * as a dashed level line. Plain SVG, no script, so that a Markdown page can show it as an image.
 */

/** One measured point: a series (`tessera/sqlite workers`), its count and its figures. */
export interface ScalePoint {
  readonly series: string;
  readonly count: number;
  readonly rps: number;
  readonly p99: number;
}

/**
 * A row's series and count from its label: `tessera/sqlite x4` is 4 workers,
 * `tessera/postgres x2 instances` 2 instances; a label without a count is one process.
 */
export function scalePointOf(label: string, rps: number, p99: number): ScalePoint {
  const match = /^(.*?) x(\d+)( instances)?$/.exec(label);
  if (!match) return { series: label, count: 1, rps, p99 };
  return { series: `${match[1]} ${match[3] ? 'instances' : 'workers'}`, count: Number(match[2]), rps, p99 };
}

const COLOURS = ['#1f6feb', '#d1242f', '#1a7f37', '#8250df', '#bf8700', '#57606a'];
const PANEL = { width: 360, height: 260, left: 56, right: 16, top: 36, bottom: 40 } as const;

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A round step for `max` over about four grid lines. */
function niceStep(max: number): number {
  const raw = max / 4;
  const magnitude = 10 ** Math.floor(Math.log10(raw || 1));
  const step = [1, 2, 2.5, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= raw);
  return step ?? 10 * magnitude;
}

function panel(
  title: string,
  points: readonly ScalePoint[],
  value: (point: ScalePoint) => number,
  levels: readonly ScalePoint[],
  series: readonly string[],
  x0: number,
): string {
  const counts = [...new Set(points.map((point) => point.count))].sort((a, b) => a - b);
  const maxCount = Math.max(...counts, 1);
  const maxValue = Math.max(...points.map(value), ...levels.map(value), 1);
  const step = niceStep(maxValue * 1.05);
  const top = step * Math.ceil((maxValue * 1.05) / step);
  const innerWidth = PANEL.width - PANEL.left - PANEL.right;
  const innerHeight = PANEL.height - PANEL.top - PANEL.bottom;
  // Counts on a log2 axis when they grow by doubling (1, 2, 4, 8), else linear.
  const logScale = counts.length > 2 && counts.every((count) => Number.isInteger(Math.log2(count)));
  const xOf = (count: number) => {
    if (counts.length === 1) return x0 + PANEL.left + innerWidth / 2;
    const share = logScale ? Math.log2(count) / Math.log2(maxCount) : (count - counts[0]!) / (maxCount - counts[0]!);
    return x0 + PANEL.left + share * innerWidth;
  };
  const yOf = (y: number) => PANEL.top + innerHeight - (y / top) * innerHeight;
  const parts: string[] = [`<text x="${x0 + PANEL.width / 2}" y="20" text-anchor="middle" font-weight="bold">${escapeXml(title)}</text>`];
  for (let y = 0; y <= top + step / 2; y += step) {
    parts.push(`<line x1="${x0 + PANEL.left}" x2="${x0 + PANEL.width - PANEL.right}" y1="${yOf(y)}" y2="${yOf(y)}" stroke="#d0d7de"/>`);
    parts.push(`<text x="${x0 + PANEL.left - 6}" y="${yOf(y) + 4}" text-anchor="end">${Math.round(y).toLocaleString('en')}</text>`);
  }
  for (const count of counts) {
    parts.push(`<text x="${xOf(count)}" y="${PANEL.top + innerHeight + 16}" text-anchor="middle">${count}</text>`);
  }
  parts.push(`<text x="${x0 + PANEL.left + innerWidth / 2}" y="${PANEL.height - 6}" text-anchor="middle">processes (workers or instances)</text>`);
  for (const level of levels) {
    const colour = COLOURS[series.indexOf(level.series) % COLOURS.length]!;
    parts.push(
      `<line x1="${x0 + PANEL.left}" x2="${x0 + PANEL.width - PANEL.right}" y1="${yOf(value(level))}" y2="${yOf(value(level))}" stroke="${colour}" stroke-dasharray="6 4"/>`,
    );
  }
  for (const name of series) {
    const line = points.filter((point) => point.series === name).sort((a, b) => a.count - b.count);
    if (line.length === 0) continue;
    const colour = COLOURS[series.indexOf(name) % COLOURS.length]!;
    parts.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${line.map((point) => `${xOf(point.count).toFixed(1)},${yOf(value(point)).toFixed(1)}`).join(' ')}"/>`,
    );
    for (const point of line)
      parts.push(
        `<circle cx="${xOf(point.count).toFixed(1)}" cy="${yOf(value(point)).toFixed(1)}" r="3.5" fill="${colour}"><title>${escapeXml(`${name}, ${point.count}: ${Math.round(value(point)).toLocaleString('en')}`)}</title></circle>`,
      );
  }
  return parts.join('\n');
}

/**
 * The SVG for one scenario's points, or null when there is no curve to draw (no series with
 * two counts or more). Series named `oidc-provider` are drawn as level lines.
 */
export function scaleChart(scenario: string, caption: string, points: readonly ScalePoint[]): string | null {
  const curves = points.filter((point) => !point.series.startsWith('oidc-provider'));
  const levels = points.filter((point) => point.series.startsWith('oidc-provider'));
  const series = [...new Set(points.map((point) => point.series))];
  if (!series.some((name) => curves.filter((point) => point.series === name).length >= 2)) return null;
  const width = PANEL.width * 2;
  const legendTop = PANEL.height + 8;
  const legend = series.map((name, index) => {
    const colour = COLOURS[index % COLOURS.length]!;
    const y = legendTop + 16 * index;
    const dash = levels.some((level) => level.series === name) ? ' stroke-dasharray="6 4"' : '';
    return `<line x1="${PANEL.left}" x2="${PANEL.left + 24}" y1="${y}" y2="${y}" stroke="${colour}" stroke-width="2"${dash}/><text x="${PANEL.left + 30}" y="${y + 4}">${escapeXml(name)}</text>`;
  });
  const height = legendTop + 16 * series.length + 24;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(`${scenario}: req/s and p99 against processes`)}</title>`,
    '<rect width="100%" height="100%" fill="#ffffff"/>',
    panel(`${scenario}: requests/s`, curves, (point) => point.rps, levels, series, 0),
    panel(`${scenario}: p99 latency, ms`, curves, (point) => point.p99, levels, series, PANEL.width),
    ...legend,
    `<text x="${PANEL.left}" y="${height - 8}" fill="#57606a">${escapeXml(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
