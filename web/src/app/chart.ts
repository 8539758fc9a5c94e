/**
 * A small SVG chart of a sale's minutes (the console's charts, CONTRACT §8):
 * a line, bars, or stacked bars over the minutes, with a few marks on each
 * axis; and, drawn over them as the sale report draws them
 * (report/chart.go), a limit as a step line, paused stretches
 * shaded and configuration changes marked. Plain SVG, redrawn whole on each
 * change: a sale has hundreds of minutes at most.
 *
 * Every minute is labelled by its start (as minutes.csv is), in the
 * browser's zone, and its tooltip writes the zone out.
 *
 * The drawing is as wide, in SVG units, as its box is in CSS pixels, so
 * the axis text keeps its 13 px on a phone as on a laptop (a fixed viewBox
 * scaled into 320 px would shrink it to 7 px); a chart redraws when its box
 * changes width, with fewer time marks when narrow.
 */
import { zoneName } from "./when";
const NS = "http://www.w3.org/2000/svg";

/** A value in force from `from` (ms since the epoch) on: a limit's history is a list of them. */
export interface Step {
  from: number;
  value: number;
}

/** A stretch of time, ms since the epoch: a pause. */
export interface Span {
  from: number;
  to: number;
}

/** Something the operator did at `at` (ms): a configure, pause, resume or close. */
export interface Change {
  at: number;
  action: string;
  words: string;
}

export interface Series {
  /** What one unit is, for the tooltip: "admitted", "seats sold". */
  name: string;
  /** The class of its marks (colour): "s-sold". */
  cls: string;
  values: readonly number[];
}

export interface ChartSpec {
  /** The chart's accessible name. */
  label: string;
  kind: "line" | "bars" | "stacked";
  /** Each minute's start, ms since the epoch, oldest first. */
  starts: readonly number[];
  /** One series, or (stacked) several from the bottom up. */
  series: readonly Series[];
  /** A limit (`admitPerMinute`, `maxActive`) as it stood over time. */
  limit?: { name: string; steps: readonly Step[] };
  paused?: readonly Span[];
  changes?: readonly Change[];
}

/** A step of 1, 2 or 5 times a power of ten, at least raw (and 1). */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return Math.max(1, m * p);
  return 10 * p;
}

/** The browser's zone at d, by its short name (when.ts): "CET". */
export function zoneOf(d: Date): string {
  return zoneName(d.getTime());
}

/** "14:05" in the browser's zone. */
export function clock(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A minute by its start, as a tooltip gives it: "14:05–14:06 UTC+01:00". */
export function minuteWords(start: number): string {
  return `${clock(start)}–${clock(start + 60_000)} ${zoneOf(new Date(start))}`;
}

/** A minute document's id (`YYYYMMDDHHmm`, UTC: the minute's start) as ms, or undefined. */
export function minuteStart(key: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(key);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = m.slice(1).map(Number) as [number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi);
}

/** The value of steps in force at t: the last step from at or before t, else the first. */
export function stepAt(steps: readonly Step[], t: number): number | undefined {
  let v = steps[0]?.value;
  for (const s of steps) if (s.from <= t) v = s.value;
  return v;
}

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const drawn = new WeakMap<Element, { spec: ChartSpec; width: number }>();
let resized: ResizeObserver | undefined;

/** The width to draw host at: its box's, within reason (560 while it has none, say hidden). */
function widthOf(host: Element): number {
  const w = Math.round(host.getBoundingClientRect().width);
  return w > 0 ? Math.min(1200, Math.max(240, w)) : 560;
}

/** Draws spec into host (replacing what was there), and again whenever host changes width. */
export function drawChart(host: Element, spec: ChartSpec): void {
  const w = widthOf(host);
  drawn.set(host, { spec, width: w });
  if (typeof ResizeObserver !== "undefined") {
    resized ??= new ResizeObserver((entries) => {
      for (const e of entries) {
        const d = drawn.get(e.target);
        if (d && widthOf(e.target) !== d.width) drawChart(e.target, d.spec);
      }
    });
    resized.observe(host);
  }
  const h = 180;
  const [left, right, top, bottom] = [44, 8, 10, 22];
  const svg = el("svg", { viewBox: `0 0 ${String(w)} ${String(h)}`, role: "img", "aria-label": spec.label });
  const n = spec.starts.length;
  if (n === 0) {
    svg.append(el("text", { x: w / 2, y: h / 2, "text-anchor": "middle", class: "empty" }, w < 420 ? "No minutes yet." : "No minutes yet: the admitter writes one a minute."));
    host.replaceChildren(svg);
    return;
  }
  const t0 = spec.starts[0] ?? 0;
  const t1 = (spec.starts[n - 1] ?? 0) + 60_000;
  const plotW = w - left - right;
  const xAt = (t: number) => left + Math.max(0, Math.min(1, (t - t0) / (t1 - t0))) * plotW;
  const slot = plotW / n;
  const x = (i: number) => left + (i + 0.5) * slot;

  // The top: the tallest minute (stacks summed), and the limit wherever it was in force.
  let most = 1;
  for (let i = 0; i < n; i++) {
    const vs = spec.series.map((s) => s.values[i] ?? 0);
    most = Math.max(most, spec.kind === "stacked" ? vs.reduce((a, b) => a + b, 0) : Math.max(...vs));
  }
  const steps = spec.limit?.steps ?? [];
  const inForce = steps.filter((s, k) => s.from < t1 && (steps[k + 1]?.from ?? Number.POSITIVE_INFINITY) > t0);
  for (const s of inForce) most = Math.max(most, s.value);
  const step = niceStep(most / 4);
  const ymax = Math.ceil(most / step) * step;
  const y = (v: number) => h - bottom - (v / ymax) * (h - bottom - top);

  for (const p of spec.paused ?? []) {
    if (p.to <= t0 || p.from >= t1) continue;
    const [x0, x1] = [xAt(p.from), xAt(p.to)];
    const r = el("rect", { class: "paused", "data-paused-span": `${new Date(p.from).toISOString()}/${new Date(p.to).toISOString()}`, x: x0, y: top, width: Math.max(2, x1 - x0), height: h - bottom - top });
    r.append(el("title", {}, `paused ${clock(p.from)} to ${clock(p.to)} ${zoneOf(new Date(p.from))}`));
    svg.append(r);
  }
  for (let v = 0; v <= ymax + step / 2; v += step) {
    svg.append(el("line", { class: "grid", x1: left, x2: w - right, y1: y(v), y2: y(v) }));
    svg.append(el("text", { class: "axis", x: left - 6, y: y(v) + 4, "text-anchor": "end" }, String(v)));
  }
  // A time mark ("14:05") takes about 40 px: one every 70 px at most.
  const every = Math.max(1, Math.ceil(n / Math.max(2, Math.min(6, Math.floor(plotW / 70)))));
  spec.starts.forEach((t, i) => {
    if (i % every === 0) svg.append(el("text", { class: "axis", x: x(i), y: h - 6, "text-anchor": "middle" }, clock(t)));
  });

  const tip = (i: number, parts: string) => el("title", {}, `${minuteWords(spec.starts[i] ?? 0)}: ${parts}`);
  if (spec.kind === "line") {
    const s = spec.series[0];
    if (s) {
      svg.append(el("polyline", { class: `line ${s.cls}`, points: s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
      s.values.forEach((v, i) => {
        const c = el("circle", { class: `dot ${s.cls}`, cx: x(i), cy: y(v), r: 2.5 });
        c.append(tip(i, `${String(v)} ${s.name}`));
        svg.append(c);
      });
    }
  } else {
    const bw = Math.max(1, Math.min(slot * (spec.kind === "stacked" ? 0.8 : 0.7), 28));
    for (let i = 0; i < n; i++) {
      const all = spec.series.map((s) => `${String(s.values[i] ?? 0)} ${s.name}`).join(", ");
      let base = 0;
      for (const s of spec.series) {
        const v = s.values[i] ?? 0;
        const r = el("rect", { class: `bar ${s.cls}`, x: x(i) - bw / 2, y: y(base + v), width: bw, height: y(base) - y(base + v) });
        r.append(tip(i, all));
        svg.append(r);
        base += v;
      }
    }
  }

  if (spec.limit && inForce.length > 0) {
    // A step line: level while a value is in force, straight up or down where it changed.
    const pts: string[] = [];
    let v = stepAt(steps, t0) ?? 0;
    pts.push(`${xAt(t0).toFixed(1)},${y(v).toFixed(1)}`);
    for (const s of steps) {
      if (s.from <= t0 || s.from >= t1 || s.value === v) continue;
      pts.push(`${xAt(s.from).toFixed(1)},${y(v).toFixed(1)}`, `${xAt(s.from).toFixed(1)},${y(s.value).toFixed(1)}`);
      v = s.value;
    }
    pts.push(`${xAt(t1).toFixed(1)},${y(v).toFixed(1)}`);
    const line = el("polyline", { class: "limit", "data-limit": spec.limit.name, "data-limit-now": v, points: pts.join(" ") });
    line.append(el("title", {}, `${spec.limit.name}: ${inForce.map((s) => String(s.value)).join(" → ")}`));
    svg.append(line);
  }

  for (const c of spec.changes ?? []) {
    if (c.at < t0 || c.at > t1) continue;
    const g = el("g", { class: `change ${c.action}`, "data-change-mark": c.action });
    g.append(el("line", { x1: xAt(c.at), x2: xAt(c.at), y1: top, y2: h - bottom }));
    // A wider, invisible line under the pointer: a 1.5 px mark is hard to hover.
    g.append(el("line", { class: "hit", x1: xAt(c.at), x2: xAt(c.at), y1: top, y2: h - bottom }));
    g.append(el("title", {}, `${c.action} at ${clock(c.at)} ${zoneOf(new Date(c.at))}${c.words ? `: ${c.words}` : ""}`));
    svg.append(g);
  }
  host.replaceChildren(svg);
}
