/**
 * Best available seats (CONTRACT §11): the moviegoer says how many seats,
 * and the server chooses the best ones together. The card's view and its
 * pure logic; `main.ts` wires it to the functions and the map.
 *
 * During a sale the card comes first, above the map (most buyers in a hot
 * sale want "two good seats", not to race a hundred others for one), and
 * the map stays below it for those who want to pick. Without a sale it sits
 * in the side panel, under the selection.
 */

/** The most seats one best-available request takes (CONTRACT §11: count 1 to 10). */
export const MAX_COUNT = 10;

/** The counts to offer: 1 to MAX_COUNT, or to the sale's seat cap if lower. */
export function countChoices(maxSeatsPerUser?: number): number[] {
  const max = Math.max(1, Math.min(MAX_COUNT, maxSeatsPerUser ?? MAX_COUNT));
  return Array.from({ length: max }, (_, i) => i + 1);
}

/** The card: a count picker (`data-field="count"`) and its button (`data-action="best"`). */
export class BestCard {
  private readonly select: HTMLSelectElement;
  private readonly button: HTMLButtonElement;
  private readonly text: HTMLElement;
  private offered = "";

  constructor(
    private readonly card: HTMLElement,
    onBest: (count: number) => void,
  ) {
    const select = card.querySelector('[data-field="count"]');
    const button = card.querySelector('[data-action="best"]');
    const text = card.querySelector(".best-text");
    if (!(select instanceof HTMLSelectElement) || !(button instanceof HTMLButtonElement) || !(text instanceof HTMLElement)) {
      throw new Error("the best-available card lacks its count picker, button or text");
    }
    [this.select, this.button, this.text] = [select, button, text];
    button.addEventListener("click", () => {
      onBest(this.count);
    });
  }

  /** The count chosen. */
  get count(): number {
    return Number(this.select.value) || 1;
  }

  /**
   * Shows the card (or hides it), before the map during a sale (`first`) or
   * in the panel otherwise, offering 1 to `max` seats; the button waits
   * while an action runs.
   */
  update(opts: { shown: boolean; first: boolean; stage: HTMLElement; beforeInStage: HTMLElement; panel: HTMLElement; beforeInPanel: HTMLElement; max: number | undefined; busy: boolean }): void {
    this.card.hidden = !opts.shown;
    const [parent, before] = opts.first ? [opts.stage, opts.beforeInStage] : [opts.panel, opts.beforeInPanel];
    if (this.card.parentElement !== parent || this.card.nextElementSibling !== before) parent.insertBefore(this.card, before);
    this.card.classList.toggle("first", opts.first);
    const choices = countChoices(opts.max);
    const key = choices.join();
    if (key !== this.offered) {
      // Two seats at first (the most asked for), then whatever was chosen.
      const keep = this.offered === "" ? 2 : this.count;
      this.select.replaceChildren(...choices.map((n) => new Option(`${String(n)} seat${n === 1 ? "" : "s"}`, String(n))));
      this.select.value = String(Math.min(keep, choices.length));
      this.offered = key;
    }
    const text = opts.first
      ? "Say how many seats, and we find you the best ones together. Or pick your own on the map below."
      : "Say how many seats, and we find you the best ones together.";
    if (this.text.textContent !== text) this.text.textContent = text;
    this.button.disabled = opts.busy;
  }
}

/** How long chosen seats flash on the map. */
export const FLASH_MS = 2400;

/** Makes seat buttons flash (CSS `.chosen`) for a moment: the seats the server just chose. */
export function flash(buttons: readonly HTMLElement[]): void {
  for (const b of buttons) {
    b.classList.remove("chosen");
    b.getBoundingClientRect(); // a layout in between restarts the animation
    b.classList.add("chosen");
  }
  setTimeout(() => {
    for (const b of buttons) b.classList.remove("chosen");
  }, FLASH_MS);
}

/**
 * The hall's rows, best first, as the server ranks them (booking.RowOrder,
 * CONTRACT §11): the rows the screening's `preference` names, in its order
 * (labels the hall lacks and repeats ignored), then the default order: the
 * row about two thirds back from the screen, then outward, the row behind
 * before the row in front.
 */
export function rowOrder(rows: readonly string[], preference: readonly unknown[] = []): string[] {
  const order: string[] = [];
  for (const label of preference) if (typeof label === "string" && rows.includes(label) && !order.includes(label)) order.push(label);
  const n = rows.length;
  const target = Math.floor((2 * (n - 1) + 1) / 3);
  for (let d = 0; order.length < n && d < n; d++) {
    for (const r of [target + d, target - d]) {
      const label = rows[r];
      if (label !== undefined && !order.includes(label)) order.push(label);
    }
  }
  return order;
}

/**
 * Why best available chose these seats (issue #50.7), in words: "the best
 * block of 3 left: row D is the preferred row". The order is the server's
 * (rowOrder); a later row was chosen because the rows before it had no
 * block of that many left (or only ones that strand a single seat).
 */
export function bestWhy(rows: readonly string[], preference: readonly unknown[] | undefined, seats: readonly string[]): string {
  const n = seats.length;
  const chosen = [...new Set(seats.map((s) => s.replace(/\d+$/, "")))];
  const order = rowOrder(rows, Array.isArray(preference) ? preference : []);
  const named = Array.isArray(preference) && preference.some((p) => typeof p === "string" && rows.includes(p));
  const block = n === 1 ? "the best seat left" : `the best block of ${String(n)} left`;
  const first = order[0] ?? "";
  const row = chosen[0] ?? "";
  if (chosen.length !== 1) return `${block}: no row has ${String(n)} free seats together, so these are the best seats apart`;
  const rank = order.indexOf(row);
  const whose = named ? "this screening's preferred row" : "the preferred row (about two thirds back)";
  if (rank <= 0) return `${block}: row ${row} is ${whose}`;
  const before = order.slice(0, rank);
  const list = before.length <= 3 ? `row${before.length === 1 ? "" : "s"} ${listWords(before)}` : `the ${String(before.length)} rows ranked before it`;
  return `${block}: row ${first} is ${whose}, and ${list} had no ${n === 1 ? "free seat" : `${String(n)} free seats together without stranding a single seat`}`;
}

function listWords(xs: readonly string[]): string {
  return xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} and ${xs[xs.length - 1] ?? ""}`;
}
