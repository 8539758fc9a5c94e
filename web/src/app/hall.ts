/**
 * The hall's layout: the seat buttons in rows, in blocks split at the
 * aisle. A hall of 12 seats a row or more has an aisle in the middle; its
 * two blocks stand side by side on a wide screen, as the hall is, and one
 * above the other on a narrow one (style.css), so that 20 seats a row fit
 * a 360-px phone at a size a finger can tap, with no sideways scrolling.
 */
import { type Screening, seatGrid } from "./seats";
import { h } from "./ui";

/** The seats a row of this many splits into, left block first. */
export function blocksOf(seatsPerRow: number): [number, number][] {
  if (seatsPerRow < 12) return [[0, seatsPerRow]];
  const mid = Math.floor(seatsPerRow / 2);
  return [
    [0, mid],
    [mid, seatsPerRow],
  ];
}

/**
 * Fills container with the hall's rows of seats, each made by seat(id,
 * number), and returns the buttons by seat id, in row and number order.
 */
export function buildHall(
  s: Pick<Screening, "rows" | "seatsPerRow">,
  seat: (id: string, number: number) => HTMLButtonElement,
  container: HTMLElement,
): Map<string, HTMLButtonElement> {
  const buttons = new Map<string, HTMLButtonElement>();
  const grid = seatGrid(s);
  const split = blocksOf(s.seatsPerRow);
  const blocks = split.map(([from, to], bi) => {
    const side = split.length === 1 ? "whole" : bi === 0 ? "left" : "right";
    const rows = grid.map((ids, r) => {
      const label = s.rows[r] ?? "";
      const name = split.length === 1 ? `Row ${label}` : `Row ${label}, seats ${String(from + 1)} to ${String(to)}`;
      const row = h("div", { class: "row", role: "group", "aria-label": name });
      const rowLabel = () => h("span", { class: "rowlabel", "aria-hidden": "true" }, label);
      if (side !== "right") row.append(rowLabel());
      for (let i = from; i < to; i++) {
        const id = ids[i] ?? "";
        const b = seat(id, i + 1);
        buttons.set(id, b);
        row.append(b);
      }
      if (side !== "left") row.append(rowLabel());
      return row;
    });
    return h("div", { class: `block ${side}` }, ...rows);
  });
  container.replaceChildren(...blocks);
  // In row, then number order (the blocks were built side by side).
  return new Map(grid.flat().map((id) => [id, buttons.get(id) as HTMLButtonElement]));
}
