/**
 * What the sale's log (`saleLog/{id}/entries`, CONTRACT §8) tells the
 * console's charts: when admissions were paused, how a limit stood over
 * time, and which changes to mark. Pure: entries in, chart parts out.
 */
import type { Change, Span, Step } from "./chart";

/** A log entry as the charts need it: `at` in ms, `before` and `after` the sale's fields. */
export interface StoryEntry {
  at: number;
  action: string;
  before?: Record<string, unknown> | undefined;
  after?: Record<string, unknown> | undefined;
}

const byTime = (entries: readonly StoryEntry[]) => [...entries].sort((a, b) => a.at - b.at);

/**
 * The paused stretches: each pause to the resume or close after it, or to
 * `now` while it lasts. A second pause while paused changes nothing (the
 * function answers it without effect, but logs it).
 */
export function pausedSpans(entries: readonly StoryEntry[], now: number): Span[] {
  const out: Span[] = [];
  let from: number | undefined;
  for (const e of byTime(entries)) {
    if (e.action === "pause" && from === undefined) from = e.at;
    if ((e.action === "resume" || e.action === "close") && from !== undefined) {
      out.push({ from, to: e.at });
      from = undefined;
    }
  }
  if (from !== undefined) out.push({ from, to: Math.max(from, now) });
  return out;
}

/**
 * A limit's history: the value before the first logged change (from the
 * entry's `before`), then each configure that changed it. Without any
 * logged change it is `current` (the sale as stored) throughout.
 */
export function limitSteps(entries: readonly StoryEntry[], field: string, current: number | undefined): Step[] {
  const steps: Step[] = [];
  for (const e of byTime(entries)) {
    if (e.action !== "configure") continue;
    const was = e.before?.[field];
    const now = e.after?.[field];
    if (typeof now !== "number") continue;
    if (steps.length === 0 && typeof was === "number") steps.push({ from: Number.NEGATIVE_INFINITY, value: was });
    if (steps.at(-1)?.value !== now) steps.push({ from: steps.length === 0 ? Number.NEGATIVE_INFINITY : e.at, value: now });
  }
  if (steps.length === 0 && current !== undefined) steps.push({ from: Number.NEGATIVE_INFINITY, value: current });
  return steps;
}

/** The changes to mark: configure (after the sale's creation), pause, resume and close. */
export function changeMarks(entries: readonly StoryEntry[], words: (e: StoryEntry) => string): Change[] {
  return byTime(entries)
    .filter((e) => e.action === "pause" || e.action === "resume" || e.action === "close" || (e.action === "configure" && e.before !== undefined))
    .map((e) => ({ at: e.at, action: e.action, words: words(e) }));
}
