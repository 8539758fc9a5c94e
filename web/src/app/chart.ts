/**
 * A small SVG chart of a sale's minutes (the console's four, CONTRACT §8):
 * a line, or bars, over the minutes, with a few marks on each axis. Plain
 * SVG, redrawn whole on each change: a sale has hundreds of minutes at most.
 *
 * The drawing is as wide, in SVG units, as its box is in CSS pixels, so
 * the axis text keeps its 13 px on a phone as on a laptop (a fixed viewBox
 * scaled into 320 px would shrink it to 7 px); a chart redraws when its box
 * changes width, with fewer time marks when narrow.
 */
const NS = "http://www.w3.org/2000/svg";

export interface Point {
  /** ms since the epoch */
  at: number;
  value: number;
}

/** A step of 1, 2 or 5 times a power of ten, at least raw (and 1). */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return Math.max(1, m * p);
  return 10 * p;
}

function el<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

interface Drawn {
  points: readonly Point[];
  bars: boolean;
  label: string;
  width: number;
}
const drawn = new WeakMap<Element, Drawn>();
let resized: ResizeObserver | undefined;

/** The width to draw host at: its box's, within reason (560 while it has none, say hidden). */
function widthOf(host: Element): number {
  const w = Math.round(host.getBoundingClientRect().width);
  return w > 0 ? Math.min(1200, Math.max(240, w)) : 560;
}

/** Draws points into host (replacing what was there), and again whenever host changes width. */
export function drawChart(host: Element, points: readonly Point[], bars: boolean, label: string): void {
  const w = widthOf(host);
  drawn.set(host, { points, bars, label, width: w });
  if (typeof ResizeObserver !== "undefined") {
    resized ??= new ResizeObserver((entries) => {
      for (const e of entries) {
        const d = drawn.get(e.target);
        if (d && widthOf(e.target) !== d.width) drawChart(e.target, d.points, d.bars, d.label);
      }
    });
    resized.observe(host);
  }
  const h = 180;
  const [left, right, top, bottom] = [44, 8, 10, 22];
  const svg = el("svg", { viewBox: `0 0 ${String(w)} ${String(h)}`, role: "img", "aria-label": label });
  if (points.length === 0) {
    svg.append(el("text", { x: w / 2, y: h / 2, "text-anchor": "middle", class: "empty" }, w < 420 ? "No minutes yet." : "No minutes yet: the admitter writes one a minute."));
    host.replaceChildren(svg);
    return;
  }
  const step = niceStep(Math.max(...points.map((p) => p.value), 1) / 4);
  const ymax = Math.ceil(Math.max(...points.map((p) => p.value), 1) / step) * step;
  const slot = (w - left - right) / points.length;
  const x = (i: number) => left + (i + 0.5) * slot;
  const y = (v: number) => h - bottom - (v / ymax) * (h - bottom - top);
  for (let v = 0; v <= ymax + step / 2; v += step) {
    svg.append(el("line", { class: "grid", x1: left, x2: w - right, y1: y(v), y2: y(v) }));
    svg.append(el("text", { class: "axis", x: left - 6, y: y(v) + 4, "text-anchor": "end" }, String(v)));
  }
  // A time mark ("14:05") takes about 40 px: one every 70 px at most.
  const every = Math.max(1, Math.ceil(points.length / Math.max(2, Math.min(6, Math.floor((w - left - right) / 70)))));
  const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
  points.forEach((p, i) => {
    if (i % every === 0) svg.append(el("text", { class: "axis", x: x(i), y: h - 6, "text-anchor": "middle" }, hhmm(p.at)));
  });
  if (bars) {
    const bw = Math.max(1, Math.min(slot * 0.7, 28));
    points.forEach((p, i) => {
      const r = el("rect", { class: "bar", x: x(i) - bw / 2, y: y(p.value), width: bw, height: h - bottom - y(p.value) });
      r.append(el("title", {}, `${hhmm(p.at)} UTC: ${String(p.value)}`));
      svg.append(r);
    });
  } else {
    svg.append(el("polyline", { class: "line", points: points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ") }));
    points.forEach((p, i) => {
      const c = el("circle", { class: "dot", cx: x(i), cy: y(p.value), r: 2.5 });
      c.append(el("title", {}, `${hhmm(p.at)} UTC: ${String(p.value)}`));
      svg.append(c);
    });
  }
  host.replaceChildren(svg);
}
