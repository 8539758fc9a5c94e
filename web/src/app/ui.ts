/**
 * What the pages share: elements, the `data-status` line and running an
 * action. No Firebase here: the seat map draws before the SDK has loaded
 * (issue #50); the sign-in panel is account.ts.
 */

/** Creates an element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/** The element of a selector, or an error naming it. */
export function $(selector: string, root: ParentNode = document): HTMLElement {
  return $as(HTMLElement, selector, root);
}

/** The element of a selector, checked to be a `kind` (HTMLButtonElement, say). */
export function $as<T extends Element>(kind: abstract new () => T, selector: string, root: ParentNode = document): T {
  const el = root.querySelector(selector);
  if (!(el instanceof kind)) throw new Error(`page has no ${kind.name} ${selector}`);
  return el;
}

/**
 * The `data-status` element (CONTRACT §6): `data-code` is `ok` or the §3
 * error code of the last action; while an action runs it has no `data-code`.
 */
export class Status {
  constructor(private readonly el: HTMLElement) {}

  pending(text: string): void {
    this.el.removeAttribute("data-code");
    this.el.className = "status pending";
    this.el.textContent = text;
  }

  ok(text: string): void {
    this.show("ok", text);
  }

  error(code: string, text: string): void {
    this.show(code, text);
  }

  private show(code: string, text: string): void {
    this.el.dataset.code = code;
    this.el.className = code === "ok" ? "status ok" : "status error";
    this.el.textContent = text;
  }
}

/** An error, for the status line: its code (§3's where there is one) and words. */
export type Explain = (err: unknown) => { code: string; message: string };

/**
 * Runs one user action: `busy(true)` while it runs, the pending text, then
 * the status `ok` with the words `fn` returns, or the code and words that
 * `explain` gives its error.
 */
export async function runAction(status: Status, busy: (on: boolean) => void, pending: string, fn: () => Promise<string>, explain: Explain): Promise<void> {
  busy(true);
  status.pending(pending);
  try {
    status.ok(await fn());
  } catch (err) {
    const e = explain(err);
    status.error(e.code, e.message);
  } finally {
    busy(false);
  }
}
