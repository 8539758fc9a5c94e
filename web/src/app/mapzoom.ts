/**
 * The seat map's pan and zoom (issue #50.2). The hall is drawn at a seat
 * size (`--seat-px` on the box, so its scroll snapping follows it too):
 * every length in it follows that size, so
 * zooming is a relayout, not a transform, and the seat a finger lands on
 * is the seat drawn there. A hall wider than its box pans by scrolling the
 * box (one finger, natural scroll); it zooms with + and −, a double tap, or
 * a pinch (two fingers: the box's `touch-action` leaves pinches to the page).
 *
 * At the first zoom seats are at least MIN_TAP px (WCAG 2.2 SC 2.5.8 asks
 * for 24). Zoomed out further, to see the whole hall, a tap on the map
 * zooms in on that spot instead of choosing a seat, so a tapped seat is
 * never a neighbour's.
 */

/** The smallest seat a finger chooses (CSS px); smaller, a tap zooms in first. */
export const MIN_TAP = 24;
/** The seat size at the first zoom, when the hall does not fit the box at a larger one. */
export const FIRST = 26;
/** The largest seat at the first zoom (a wide screen). */
export const ROOMY = 32;
/** The largest seat zooming in reaches. */
export const MAX = 56;
/** One press of + or −. */
export const STEP = 1.25;

/** The first zoom: the largest seat at which the hall fits its box, between FIRST and ROOMY. */
export function firstSize(fit: number): number {
  return Math.min(ROOMY, Math.max(FIRST, Math.floor(fit)));
}

/** The sizes zooming moves between: down to the whole hall (or MIN_TAP, if that is less), up to MAX. */
export function clampSize(size: number, fit: number): number {
  return Math.min(MAX, Math.max(Math.min(fit, MIN_TAP), size));
}

/** Where to scroll so that the point `at` px into the box stays on the same spot of the map after a zoom by `ratio`. */
export function anchoredScroll(scroll: number, at: number, ratio: number): number {
  return Math.max(0, (scroll + at) * ratio - at);
}

export class MapZoom {
  private size = ROOMY;
  private first = ROOMY;
  private fit = ROOMY;
  private pinch: { distance: number; size: number } | undefined;

  /**
   * view: the box that scrolls; map: the hall inside it; zoomIn, zoomOut:
   * the buttons; controls: shown while the hall is wider than the box.
   */
  constructor(
    private readonly view: HTMLElement,
    private readonly map: HTMLElement,
    private readonly controls: HTMLElement,
    private readonly zoomIn: HTMLButtonElement,
    private readonly zoomOut: HTMLButtonElement,
  ) {
    zoomIn.addEventListener("click", () => {
      this.zoomTo(this.size * STEP);
    });
    zoomOut.addEventListener("click", () => {
      this.zoomTo(this.size / STEP);
    });
    view.addEventListener("dblclick", (ev) => {
      // Double tap: in by two steps; at the most, back to the first zoom.
      this.zoomTo(this.size >= MAX ? this.first : this.size * STEP * STEP, ev);
    });
    // Too small to choose from: the tap zooms in on its spot first (a
    // keyboard's Enter or Space, detail 0, chooses: it has no spot).
    view.addEventListener(
      "click",
      (ev) => {
        if (ev.detail === 0 || this.size >= MIN_TAP || !(ev.target instanceof Element) || !ev.target.closest("[data-seat]")) return;
        ev.stopPropagation();
        ev.preventDefault();
        this.zoomTo(this.first, ev);
      },
      true,
    );
    view.addEventListener(
      "touchstart",
      (ev) => {
        if (ev.touches.length === 2) this.pinch = { distance: spread(ev.touches), size: this.size };
      },
      { passive: true },
    );
    view.addEventListener(
      "touchmove",
      (ev) => {
        if (ev.touches.length !== 2) return;
        ev.preventDefault();
        // The second finger may land outside the box (its touchstart goes
        // there): the pinch starts at the first move seen here.
        if (!this.pinch) {
          this.pinch = { distance: spread(ev.touches), size: this.size };
          return;
        }
        const [a, b] = [ev.touches[0], ev.touches[1]];
        if (!a || !b) return;
        const mid = { clientX: (a.clientX + b.clientX) / 2, clientY: (a.clientY + b.clientY) / 2 };
        this.zoomTo((this.pinch.size * spread(ev.touches)) / this.pinch.distance, mid);
      },
      { passive: false },
    );
    const end = (ev: TouchEvent) => {
      if (ev.touches.length < 2) this.pinch = undefined;
    };
    view.addEventListener("touchend", end);
    view.addEventListener("touchcancel", end);
    new ResizeObserver(() => {
      this.measure(false);
    }).observe(view);
  }

  /** The seat size now, in CSS px. */
  get seatSize(): number {
    return this.size;
  }

  /**
   * Before the hall is (re)built, its rows `seats` seats wide (hall.ts's
   * rowWidthInSeats): draws it at the first zoom it will likely have, so
   * that reset() measures it at that size and the 200-odd seats are laid out
   * once, not twice (a long task on a phone: Lighthouse's Total Blocking
   * Time, issue #50). Only a guess: reset() measures.
   */
  expect(seats: number): void {
    const box = this.view.clientWidth;
    if (box > 0 && seats > 0) this.apply(firstSize((box - 8) / seats));
  }

  /** After the hall is (re)built: the first zoom for this box, scrolled to the middle of the hall. */
  reset(): void {
    this.measure(true);
    this.view.scrollLeft = (this.view.scrollWidth - this.view.clientWidth) / 2;
  }

  /** Measures what fits; at a reset (or while at the first zoom) goes to the new first zoom. */
  private measure(reset: boolean): void {
    const width = this.map.scrollWidth;
    if (width === 0 || this.view.clientWidth === 0) return;
    this.fit = (this.size * this.view.clientWidth) / width;
    const atFirst = this.size === this.first;
    this.first = firstSize(this.fit);
    if (reset || atFirst) this.apply(this.first);
    else this.apply(clampSize(this.size, this.fit));
  }

  /** Zooms to a seat size, keeping the spot under the pointer (or the box's middle) where it is. */
  zoomTo(size: number, at?: { clientX: number; clientY: number }): void {
    const next = clampSize(size, this.fit);
    if (Math.abs(next - this.size) < 0.01) return;
    const box = this.view.getBoundingClientRect();
    const mapTop = this.map.getBoundingClientRect().top;
    const x = at ? at.clientX - box.left : this.view.clientWidth / 2;
    const y = at ? at.clientY - mapTop : 0;
    const ratio = next / this.size;
    const left = anchoredScroll(this.view.scrollLeft, x, ratio);
    this.apply(next);
    this.view.scrollLeft = left;
    if (at) window.scrollBy(0, y * ratio - y);
  }

  private apply(size: number): void {
    this.size = size;
    // Set only when it changes: a new value restyles every seat.
    const px = `${size.toFixed(2)}px`;
    if (this.view.style.getPropertyValue("--seat-px") !== px) this.view.style.setProperty("--seat-px", px);
    const wide = this.fit < this.first - 0.5;
    this.controls.hidden = !wide && size <= this.first;
    this.zoomIn.disabled = size >= MAX;
    this.zoomOut.disabled = size <= Math.min(this.fit, MIN_TAP) + 0.01;
    this.view.classList.toggle("zoomed-out", size < MIN_TAP);
  }
}

function spread(touches: TouchList): number {
  const [a, b] = [touches[0], touches[1]];
  return a && b ? Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY) || 1 : 1;
}
