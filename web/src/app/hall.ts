/**
 * The hall's layout: the seat buttons row by row, each row drawn as one row,
 * as the hall is, with the aisle in the middle of a row of 12 seats or more.
 * A hall wider than the screen pans and zooms in its own box (mapzoom.ts)
 * rather than folding its rows (issue #50.2).
 */
import { type Screening, seatGrid } from "./seats";
import { h } from "./ui";

/** The seats a row of this many splits into at the aisle, left block first. */
export function blocksOf(seatsPerRow: number): [number, number][] {
  if (seatsPerRow < 12) return [[0, seatsPerRow]];
  const mid = Math.floor(seatsPerRow / 2);
  return [
    [0, mid],
    [mid, seatsPerRow],
  ];
}

/**
 * A row's width in seats, its gaps, aisle and two letters counted (as
 * style.css draws them: a letter 0.65 of a seat, the aisle 0.5, gaps 0.15),
 * without the map's 8 px of padding. mapzoom.ts's `expect` guesses the first
 * zoom from it, so that the hall is laid out once at that size (issue #50);
 * the zoom itself is measured.
 */
export function rowWidthInSeats(seatsPerRow: number): number {
  const aisles = blocksOf(seatsPerRow).length - 1;
  const items = seatsPerRow + aisles + 2;
  return seatsPerRow + 0.5 * aisles + 2 * 0.65 + 0.15 * (items - 1);
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
  const split = blocksOf(s.seatsPerRow);
  const rows = seatGrid(s).map((ids, r) => {
    const label = s.rows[r] ?? "";
    const row = h("div", { class: "row", role: "group", "aria-label": `Row ${label}` });
    const rowLabel = () => h("span", { class: "rowlabel", "aria-hidden": "true" }, label);
    row.append(rowLabel());
    split.forEach(([from, to], bi) => {
      if (bi > 0) row.append(h("span", { class: "aisle", "aria-hidden": "true" }));
      for (let i = from; i < to; i++) {
        const id = ids[i] ?? "";
        const b = seat(id, i + 1);
        buttons.set(id, b);
        row.append(b);
      }
    });
    row.append(rowLabel());
    return row;
  });
  container.replaceChildren(...rows);
  return buttons;
}
