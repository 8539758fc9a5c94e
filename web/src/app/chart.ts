/**
 * A small SVG chart of a sale's minutes (the console's four, CONTRACT §8):
 * a line, or bars, over the minutes, with a few marks on each axis. Plain
 * SVG, redrawn whole on each change: a sale has hundreds of minutes at most.
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

/** Draws points into host (replacing what was there). */
export function drawChart(host: Element, points: readonly Point[], bars: boolean, label: string): void {
  const w = 560;
  const h = 180;
  const [left, right, top, bottom] = [40, 8, 10, 22];
  const svg = el("svg", { viewBox: `0 0 ${String(w)} ${String(h)}`, role: "img", "aria-label": label });
  if (points.length === 0) {
    svg.append(el("text", { x: w / 2, y: h / 2, "text-anchor": "middle", class: "empty" }, "No minutes yet: the admitter writes one a minute."));
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
  const every = Math.max(1, Math.ceil(points.length / 6));
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
