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
