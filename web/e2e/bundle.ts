/**
 * The local bundle the browser tests run against, and what they need from
 * it besides the page: users in the Auth emulator, screenings written as an
 * admin would, and Firestore's state read back for invariants (REST, as the
 * emulator's owner, which bypasses the rules like the Admin SDK).
 */
import { createHash, randomUUID } from "node:crypto";
import { type Browser, type Page, expect, test as base } from "@playwright/test";

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the browser tests through \`make test\` (go run ./cmd/firelock-local -- ...)`);
  return v;
}

export const env = {
  get web() { return need("FIRELOCK_WEB_URL"); },
  get functions() { return need("FIRELOCK_FUNCTIONS_URL"); },
  get firestore() { return need("FIRESTORE_EMULATOR_HOST"); },
  get auth() { return need("FIREBASE_AUTH_EMULATOR_HOST"); },
  get project() { return need("GOOGLE_CLOUD_PROJECT"); },
  /** The bundle's App Check mode (CONTRACT §12): enforce, monitor or off (firelock-local -appcheck). */
  get appCheck() { return process.env.FIRELOCK_APPCHECK ?? "off"; },
  /** The bundle's App Check token endpoint (with App Check on). */
  get appCheckTokenURL() { return need("FIRELOCK_APPCHECK_TOKEN_URL"); },
};

export interface TestUser {
  email: string;
  password: string;
  uid: string;
  idToken: string;
}

/** Creates a user in the Auth emulator (with `displayName` in their Auth profile, if given). */
export async function createUser(name = "user", displayName?: string): Promise<TestUser> {
  const email = `${name}-${randomUUID().slice(0, 8)}@example.com`;
  const password = "correct-horse-9";
  const res = await fetch(`http://${env.auth}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=fake-api-key`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email, password, displayName, returnSecureToken: true }),
  });
  if (!res.ok) throw new Error(`signUp: ${String(res.status)} ${await res.text()}`);
  const body = (await res.json()) as { localId: string; idToken: string };
  return { email, password, uid: body.localId, idToken: body.idToken };
}

/** A fresh ID token of a user (one made after a custom claim changed carries it). */
export async function freshToken(user: TestUser): Promise<string> {
  const res = await fetch(`http://${env.auth}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=fake-api-key`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: user.email, password: user.password, returnSecureToken: true }),
  });
  if (!res.ok) throw new Error(`signIn: ${String(res.status)} ${await res.text()}`);
  return ((await res.json()) as { idToken: string }).idToken;
}

/**
 * Makes a user an operator of sales (the custom claim operator: true, as
 * `firelock operators grant` sets it), through the Auth emulator's admin
 * API. The claim is in the ID tokens issued after: sign in afterwards.
 */
export async function makeOperator(user: TestUser): Promise<void> {
  const res = await fetch(`http://${env.auth}/identitytoolkit.googleapis.com/v1/projects/${env.project}/accounts:update`, {
    method: "POST",
    headers: { Authorization: "Bearer owner", "Content-Type": "application/json" },
    body: JSON.stringify({ localId: user.uid, customAttributes: JSON.stringify({ operator: true }) }),
  });
  if (!res.ok) throw new Error(`make operator: ${String(res.status)} ${await res.text()}`);
}

/** Revokes uid's pass as a new operator would (OperateSale's revoke, CONTRACT §8). */
export async function revokePass(screeningId: string, uid: string): Promise<void> {
  const op = await createUser("operator");
  await makeOperator(op);
  const res = await fetch(`${env.functions}/OperateSale`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${await freshToken(op)}` },
    body: JSON.stringify({ screeningId, action: "revoke", uid, reason: "bought with a stolen card" }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

const docsURL = () => `http://${env.firestore}/v1/projects/${env.project}/databases/(default)/documents`;
const owner = { Authorization: "Bearer owner", "Content-Type": "application/json" };

/** A screening's sale (CONTRACT §7), as an admin writes it. */
export interface Sale {
  opensAt: Date;
  admitPerMinute: number;
  maxActive: number;
  passSeconds?: number;
  maxSeatsPerUser?: number;
  requireVerifiedEmail?: boolean;
}

function saleValue(sale: Sale): Value {
  const fields: Record<string, Value> = { opensAt: { timestampValue: sale.opensAt.toISOString() } };
  for (const k of ["admitPerMinute", "maxActive", "passSeconds", "maxSeatsPerUser"] as const) {
    const v = sale[k];
    if (v !== undefined) fields[k] = { integerValue: String(v) };
  }
  if (sale.requireVerifiedEmail !== undefined) fields.requireVerifiedEmail = { booleanValue: sale.requireVerifiedEmail };
  return { mapValue: { fields } };
}

/** A screening's price (CONTRACT §10), as an admin writes it: amounts in cents. */
export interface Price {
  amount: number;
  currency: string;
  rows?: Record<string, number>;
  payHoldSeconds?: number;
}

function priceValue(p: Price): Value {
  const fields: Record<string, Value> = { amount: { integerValue: String(p.amount) }, currency: { stringValue: p.currency } };
  if (p.rows) fields.rows = { mapValue: { fields: Object.fromEntries(Object.entries(p.rows).map(([r, a]) => [r, { integerValue: String(a) }])) } };
  if (p.payHoldSeconds !== undefined) fields.payHoldSeconds = { integerValue: String(p.payHoldSeconds) };
  return { mapValue: { fields } };
}

/**
 * The screenings the running test wrote (createScreening), and whether with
 * a sale: the test's fixture retires them when it ends (retireScreenings).
 * A worker runs one test at a time, so this worker's list is that test's.
 */
const written: { id: string; sale: boolean }[] = [];

/**
 * Retires screenings once their test is over: each now started two hours
 * ago, and a sale opened an hour before that (a sale's opening must come
 * before its screening's start). Nothing else changes. The admitter looks
 * after the sales of screenings that have not started or started within
 * the hour, each in every pass (about 70 ms a sale on the bundle's
 * emulator), and the bundle's admitters run for every test's sale: without
 * this, the 30 sales of a run pile up and every pass of every test's
 * admitter walks all of them.
 */
/**
 * A write as the owner, sent again while the emulator answers it 499
 * CANCELLED ("call already cancelled"): it fails a commit whose change it
 * cannot send to a listen stream a closed page left behind, and each such
 * commit rids it of one (internal/emulators.RetryCancelled does the same for
 * the Go tests; docs/testing.md, 2026-11-29 23:30). The writes sent this way
 * set fields to values, so one that landed before its 499 lands the same again.
 */
async function ownerWrite(url: string, init: RequestInit): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, init);
    if (res.status !== 499 || attempt >= 20) return res;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function retireScreenings(screenings: { id: string; sale: boolean }[]): Promise<void> {
  const startsAt = Date.now() - 2 * 3_600_000;
  await Promise.all(
    screenings.map(async ({ id, sale }) => {
      const fields: Record<string, Value> = { startsAt: { timestampValue: new Date(startsAt).toISOString() } };
      let mask = "updateMask.fieldPaths=startsAt";
      if (sale) {
        fields.sale = { mapValue: { fields: { opensAt: { timestampValue: new Date(startsAt - 3_600_000).toISOString() } } } };
        mask += "&updateMask.fieldPaths=sale.opensAt";
      }
      const res = await ownerWrite(`${docsURL()}/screenings/${id}?${mask}&currentDocument.exists=true`, { method: "PATCH", headers: owner, body: JSON.stringify({ fields }) });
      if (!res.ok) throw new Error(`retire screening ${id}: ${String(res.status)} ${await res.text()}`);
    }),
  );
}

/** Writes a screening that starts in a day (or at `startsAt`), with a sale and a price if given: its id. */
export async function createScreening(opts: { rows?: string[]; seatsPerRow?: number; title?: string; startsAt?: Date; sale?: Sale; price?: Price } = {}): Promise<string> {
  const id = `e2e-${randomUUID().slice(0, 8)}`;
  const rows = opts.rows ?? ["A", "B", "C", "D", "E", "F"];
  const fields: Record<string, Value> = {
    title: { stringValue: opts.title ?? "The Conversation" },
    startsAt: { timestampValue: (opts.startsAt ?? new Date(Date.now() + 86_400_000)).toISOString() },
    rows: { arrayValue: { values: rows.map((r) => ({ stringValue: r })) } },
    seatsPerRow: { integerValue: String(opts.seatsPerRow ?? 12) },
  };
  if (opts.sale) fields.sale = saleValue(opts.sale);
  if (opts.price) fields.price = priceValue(opts.price);
  const res = await ownerWrite(`${docsURL()}/screenings/${id}`, { method: "PATCH", headers: owner, body: JSON.stringify({ fields }) });
  if (!res.ok) throw new Error(`create screening: ${String(res.status)} ${await res.text()}`);
  written.push({ id, sale: opts.sale !== undefined });
  return id;
}

/** Replaces a screening's sale, as an admin would (say, to move its opening). */
export async function setSale(screeningId: string, sale: Sale): Promise<void> {
  const res = await ownerWrite(`${docsURL()}/screenings/${screeningId}?updateMask.fieldPaths=sale`, {
    method: "PATCH",
    headers: owner,
    body: JSON.stringify({ fields: { sale: saleValue(sale) } }),
  });
  if (!res.ok) throw new Error(`set sale: ${String(res.status)} ${await res.text()}`);
}

/** The id of a user's place in a sale: hex SHA-256 of screeningId/uid, as the server derives it. */
export const queueIdOf = (screeningId: string, uid: string) => createHash("sha256").update(`${screeningId}/${uid}`).digest("hex");

/**
 * Runs the admitter while the test needs it: the job `admitQueue` as one
 * pass at a time (a message without `schedule` or `seconds`), posted to
 * RunScheduledJob as Pub/Sub's push would, again as soon as the last pass
 * returns (and 300 ms later). The bundle runs with `-schedule ''`, so
 * nothing else admits; a pass admits within the contract's bounds as a long
 * run would, and whether a run keeps going (`seconds`) is not this test's
 * concern. Every pass looks after every sale of the bundle, under each
 * sale's own lease, so parallel tests' admitters stay out of each other's way.
 */
export function runAdmitter(): { stop: () => Promise<void> } {
  const stopped = new AbortController();
  const url = `${env.functions}/RunScheduledJob/projects/${env.project}/topics/scheduled-jobs~e2e-admitter`;
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      const message = {
        messageId: randomUUID(),
        publishTime: new Date().toISOString(),
        data: Buffer.from(JSON.stringify({ job: "admitQueue" })).toString("base64"),
        attributes: {},
      };
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ subscription: `projects/${env.project}/subscriptions/e2e-admitter`, message }),
        });
        // A pass that failed (say, contention with another test's admitter)
        // is simply followed by the next; said here for a failing test's log.
        if (!res.ok) console.log(`admitter: a pass answered ${String(res.status)}: ${await res.text()}`);
        else await res.arrayBuffer();
      } catch (err) {
        console.log(`admitter: a pass failed: ${String(err)}`);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  return {
    stop: async () => {
      stopped.abort();
      await loop;
    },
  };
}

/**
 * The listeners a page opens on a screening's seat map, read off the
 * Firestore WebChannel as the SDK sends them: the target id of each
 * `addTarget` of `seatMaps/{id}` (a sale's one-document map) or of a query
 * on `screenings/{id}/seats` (the per-seat map: also in perSeat). Attach before the page
 * loads. (Closing is not seen here: when a pass ends the rules may end the
 * listener from the server's side, and the page then sends nothing.)
 */
export function watchSeatListeners(page: Page, screeningId: string): { opened: number[]; perSeat: number[] } {
  const seen = { opened: [] as number[], perSeat: [] as number[] };
  const parent = `/documents/screenings/${screeningId}`;
  const seatMap = `/documents/seatMaps/${screeningId}`;
  page.on("request", (req) => {
    if (!req.url().includes("/google.firestore.v1.Firestore/Listen/channel")) return;
    const body = req.postData();
    if (!body) return;
    for (const [key, value] of new URLSearchParams(body)) {
      if (!/^req\d+___data__$/.test(key)) continue;
      const msg = JSON.parse(value) as {
        addTarget?: { targetId?: number; documents?: { documents?: string[] }; query?: { parent?: string; structuredQuery?: { from?: { collectionId?: string }[] } } };
      };
      const target = msg.addTarget;
      const q = target?.query;
      if (q?.parent?.endsWith(parent) && q.structuredQuery?.from?.[0]?.collectionId === "seats") {
        seen.opened.push(target?.targetId ?? -1);
        seen.perSeat.push(target?.targetId ?? -1);
      }
      if (target?.documents?.documents?.some((d) => d.endsWith(seatMap))) seen.opened.push(target.targetId ?? -1);
    }
  });
  return seen;
}

type Value = {
  stringValue?: string;
  booleanValue?: boolean;
  integerValue?: string;
  arrayValue?: { values?: Value[] };
  mapValue?: { fields?: Record<string, Value> };
  timestampValue?: string;
};
export interface StoredDoc {
  id: string;
  fields: Record<string, Value>;
}

/** Writes a document as the owner would (bypassing the rules), with REST fields. */
export async function putDoc(path: string, fields: Record<string, Value>): Promise<void> {
  const res = await ownerWrite(`${docsURL()}/${path}`, { method: "PATCH", headers: owner, body: JSON.stringify({ fields }) });
  if (!res.ok) throw new Error(`put ${path}: ${String(res.status)} ${await res.text()}`);
}

/** Changes some fields of a document as the owner would (bypassing the rules): only those fields. */
export async function patchDoc(path: string, fields: Record<string, Value>): Promise<void> {
  const mask = Object.keys(fields).map((f) => `updateMask.fieldPaths=${encodeURIComponent(f)}`).join("&");
  const res = await ownerWrite(`${docsURL()}/${path}?${mask}&currentDocument.exists=true`, { method: "PATCH", headers: owner, body: JSON.stringify({ fields }) });
  if (!res.ok) throw new Error(`patch ${path}: ${String(res.status)} ${await res.text()}`);
}

/** The documents of a collection as Firestore holds them (as the owner). */
export async function listDocs(path: string): Promise<StoredDoc[]> {
  const res = await fetch(`${docsURL()}/${path}?pageSize=300`, { headers: owner });
  if (!res.ok) throw new Error(`list ${path}: ${String(res.status)} ${await res.text()}`);
  const body = (await res.json()) as { documents?: { name: string; fields?: Record<string, Value> }[] };
  return (body.documents ?? []).map((d) => ({ id: d.name.split("/").pop() ?? "", fields: d.fields ?? {} }));
}

/** One document, or undefined. */
export async function getDoc(path: string): Promise<StoredDoc | undefined> {
  const res = await fetch(`${docsURL()}/${path}`, { headers: owner });
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`get ${path}: ${String(res.status)} ${await res.text()}`);
  const d = (await res.json()) as { name: string; fields?: Record<string, Value> };
  return { id: d.name.split("/").pop() ?? "", fields: d.fields ?? {} };
}

/** Confirmed bookings of a screening, by bookingId: their uid and seats. */
export async function confirmedBookings(screeningId: string): Promise<Map<string, { uid: string; seats: string[] }>> {
  const out = new Map<string, { uid: string; seats: string[] }>();
  for (const d of await listDocs("bookings")) {
    if (d.fields.screeningId?.stringValue !== screeningId || d.fields.status?.stringValue !== "confirmed") continue;
    out.set(d.id, { uid: d.fields.uid?.stringValue ?? "", seats: (d.fields.seats?.arrayValue?.values ?? []).map((v) => v.stringValue ?? "") });
  }
  return out;
}

/** Signs a page in through the form, as a person would. */
export async function signIn(page: Page, user: TestUser): Promise<void> {
  await page.locator('[data-field="email"]').fill(user.email);
  await page.locator('[data-field="password"]').fill(user.password);
  await page.locator('[data-action="sign-in"]').click();
  await expect(page.locator('[data-action="sign-out"]')).toBeVisible();
  // On the seat map, until the user's own lists have answered on the stream
  // that sign-in restarted: the emulator can lose a write that lands while
  // the map's listener is set up again on it (the CI run of 2026-11-30 02:29).
  if (/^\/(index\.html)?$/.test(new URL(page.url()).pathname)) await expect(page.locator("html")).toHaveAttribute("data-mine-live", "");
}

/**
 * Whether a failed HTTP answer is one the page expects:
 * - `409`/`410` from the functions: refusals the page explains in words;
 * - a `400` from OperateSale: a value the console shows the problem of beside its field;
 * - a `400` to the Firestore WebChannel's `TYPE=terminate`: the SDK closing a
 *   stream the server already ended (it ends the write stream on every
 *   refused write, such as a mutex that someone else holds).
 */
export function expectedFailure(status: number, url: string): boolean {
  if ((status === 409 || status === 410) && url.startsWith(env.functions)) return true;
  // A join a sale for verified emails refuses (CONTRACT §12): the page says why and helps.
  if (status === 403 && url.startsWith(`${env.functions}/JoinQueue`)) return true;
  // A code that is not a ticket (CONTRACT §13: 400 invalid_ticket): the scanner shows it red.
  if (status === 400 && url.startsWith(`${env.functions}/CheckIn`)) return true;
  // A transfer to an email with no account (CONTRACT §13): the tickets page says so.
  if (status === 404 && url.startsWith(`${env.functions}/TransferTicket`)) return true;
  // The console's configure, refused with the field's problem shown beside it.
  if (status === 400 && url.startsWith(`${env.functions}/OperateSale`)) return true;
  return status === 400 && /\/channel\?.*TYPE=terminate/.test(url);
}

/**
 * Errors of a page: uncaught exceptions, console errors, and failed HTTP
 * answers other than the expected ones. A page is expected to have none.
 */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(`uncaught: ${err.message}`));
  page.on("console", (msg) => {
    // A failed resource is judged by its answer (below), which names the URL.
    // Firestore's SDK logs an error when it loses the server: the door's scanner goes offline on purpose.
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource") && !msg.text().includes("Could not reach Cloud Firestore backend")) {
      errors.push(`console: ${msg.text()}`);
    }
  });
  page.on("response", (res) => {
    if (res.status() >= 400 && !expectedFailure(res.status(), res.url())) {
      errors.push(`HTTP ${String(res.status())} ${res.request().method()} ${res.url()}`);
    }
  });
  return errors;
}

/** Two users, each signed in on their own page at `path`. */
export async function twoUsers(open: () => Promise<Page>, path: string): Promise<{ a: Page; b: Page; alice: TestUser; bob: TestUser }> {
  const [alice, bob] = await Promise.all([createUser("alice"), createUser("bob")]);
  const [a, b] = await Promise.all([open(), open()]);
  await Promise.all([a.goto(path), b.goto(path)]);
  await Promise.all([signIn(a, alice), signIn(b, bob)]);
  return { a, b, alice, bob };
}

/**
 * `test` with a second-browser helper: `open()` gives a page in a fresh
 * context (its own storage, so its own signed-in user), watched for errors;
 * every watched page must end the test without uncaught errors. Every test
 * retires the screenings it wrote when it ends, its pages closed
 * (retireScreenings).
 */
export const test = base.extend<{ open: () => Promise<Page>; retire: undefined }>({
  retire: [
    // eslint-disable-next-line no-empty-pattern -- Playwright wants a pattern, and this fixture needs no other
    async ({}, use) => {
      written.length = 0;
      await use(undefined);
      await retireScreenings(written.splice(0));
    },
    { auto: true },
  ],
  open: async ({ browser }: { browser: Browser }, use) => {
    const watched: { page: Page; errors: string[] }[] = [];
    await use(async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      watched.push({ page, errors: watchErrors(page) });
      return page;
    });
    for (const w of watched) {
      await w.page.context().close();
    }
    expect(watched.flatMap((w) => w.errors), "errors on the page").toEqual([]);
  },
});
export { expect };

// ---- the door (CONTRACT §13) ----

/**
 * Makes a user a scanner (the custom claim scanner: true, as `firelock
 * scanners grant` sets it). The claim is in the ID tokens issued after.
 */
export async function makeScanner(user: TestUser): Promise<void> {
  const res = await fetch(`http://${env.auth}/identitytoolkit.googleapis.com/v1/projects/${env.project}/accounts:update`, {
    method: "POST",
    headers: { Authorization: "Bearer owner", "Content-Type": "application/json" },
    body: JSON.stringify({ localId: user.uid, customAttributes: JSON.stringify({ scanner: true }) }),
  });
  if (!res.ok) throw new Error(`make scanner: ${String(res.status)} ${await res.text()}`);
}

/** Sets a screening's door as an operator's configure-door stores it: gates, open since `opensAt`. */
export async function setDoor(screeningId: string, door: { opensAt: Date; gates: string[]; reentry?: boolean }): Promise<void> {
  await patchDoc(`screenings/${screeningId}`, {
    door: {
      mapValue: {
        fields: {
          opensAt: { timestampValue: door.opensAt.toISOString() },
          gates: { arrayValue: { values: door.gates.map((g) => ({ stringValue: g })) } },
          reentry: { booleanValue: door.reentry ?? false },
        },
      },
    },
  });
}

/** Calls a function as the user, from Node: the answer's status and JSON body. */
export async function callAs(user: TestUser, fn: string, body: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${env.functions}/${fn}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${user.idToken}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * The user joins the sale's line from Node and waits to be let in (a 503 says
 * try again, as a client would): a buyer in the way of the one a test drives.
 */
export async function joinAndBeAdmitted(user: TestUser, screening: string): Promise<void> {
  await expect.poll(async () => (await callAs(user, "JoinQueue", { screeningId: screening })).status, { timeout: 30_000 }).toBeLessThan(300);
  await expect.poll(async () => (await getDoc(`queue/${queueIdOf(screening, user.uid)}`))?.fields.status?.stringValue, { timeout: 30_000 }).toBe("admitted");
}

/**
 * A sale on a hall of two seats (A1, A2): admitPerMinute 60, maxActive 2,
 * passes of 300 s, 2 seats a buyer, opening 2 s from now; `sale` changes
 * any of these. Its screening's id.
 */
export async function twoSeatSale(title: string, sale: Partial<Sale> = {}): Promise<string> {
  return createScreening({ rows: ["A"], seatsPerRow: 2, title, sale: { opensAt: new Date(Date.now() + 2_000), admitPerMinute: 60, maxActive: 2, passSeconds: 300, maxSeatsPerUser: 2, ...sale } });
}

/** A new buyer, let in from Node (the admitter must run), holds both seats of a twoSeatSale: the map shows nothing free. */
export async function holdTheHouse(screening: string): Promise<{ holder: TestUser; holdId: string }> {
  const holder = await createUser("holder");
  await joinAndBeAdmitted(holder, screening);
  return { holder, holdId: await holdAs(holder, screening, ["A1", "A2"]) };
}

/** A new operator (an `operator` claim), with a token that carries the claim. */
export async function createOperator(): Promise<TestUser> {
  const op = await createUser("operator");
  await makeOperator(op);
  return { ...op, idToken: await freshToken(op) };
}

/** The user, let in, holds seats for 300 s from Node (asked again past a 503); the hold's id. */
export async function holdAs(user: TestUser, screening: string, seats: string[]): Promise<string> {
  const req = { screeningId: screening, seats, requestId: randomUUID(), holdSeconds: 300 };
  let held: { status: number; body: Record<string, unknown> } = { status: 0, body: {} };
  await expect.poll(async () => (held = await callAs(user, "HoldSeats", req)).status, { message: `${user.email} holds ${seats.join(", ")}`, timeout: 30_000 }).toBeLessThan(300);
  return String(held.body.holdId);
}

/** A ticket as Firestore holds it. */
export interface StoredTicket {
  ticketId: string;
  uid: string;
  seatId: string;
  bookingId: string;
  status: string;
  version: number;
  code: string;
}

/** Books seats for the user through BookSeats: the booking's tickets, by seat. */
export async function bookTickets(user: TestUser, screeningId: string, seats: string[]): Promise<Map<string, StoredTicket>> {
  const r = await callAs(user, "BookSeats", { screeningId, seats, requestId: randomUUID() });
  if (r.status !== 201 && r.status !== 200) throw new Error(`BookSeats: ${String(r.status)} ${JSON.stringify(r.body)}`);
  const bookingId = String(r.body.bookingId);
  const out = new Map<string, StoredTicket>();
  for (const t of await ticketsOf(screeningId)) if (t.bookingId === bookingId) out.set(t.seatId, t);
  if (out.size !== seats.length) throw new Error(`booking ${bookingId}: ${String(out.size)} tickets for ${String(seats.length)} seats`);
  return out;
}

/** The documents of a collection (or of a collection group under `parent`) whose `field` equals `value` (as the owner). */
export async function queryDocs(collectionId: string, field: string, value: string, parent = ""): Promise<StoredDoc[]> {
  const res = await fetch(`${docsURL()}${parent ? `/${parent}` : ""}:runQuery`, {
    method: "POST",
    headers: owner,
    body: JSON.stringify({
      structuredQuery: { from: [{ collectionId }], where: { fieldFilter: { field: { fieldPath: field }, op: "EQUAL", value: { stringValue: value } } } },
    }),
  });
  if (!res.ok) throw new Error(`query ${collectionId}: ${String(res.status)} ${await res.text()}`);
  const rows = (await res.json()) as { document?: { name: string; fields?: Record<string, Value> } }[];
  return rows.flatMap((r) => (r.document ? [{ id: r.document.name.split("/").pop() ?? "", fields: r.document.fields ?? {} }] : []));
}

/** The tickets of a screening, as Firestore holds them. */
export async function ticketsOf(screeningId: string): Promise<StoredTicket[]> {
  const out: StoredTicket[] = [];
  for (const d of await queryDocs("tickets", "screeningId", screeningId)) {
    const f = d.fields;
    out.push({
      ticketId: d.id,
      uid: f.uid?.stringValue ?? "",
      seatId: f.seatId?.stringValue ?? "",
      bookingId: f.bookingId?.stringValue ?? "",
      status: f.status?.stringValue ?? "",
      version: Number(f.version?.integerValue ?? "0"),
      code: f.code?.stringValue ?? "",
    });
  }
  return out;
}

/** A new scanner (CONTRACT §13), with an ID token that carries the claim. */
export async function createScanner(): Promise<TestUser> {
  const u = await createUser("scanner");
  await makeScanner(u);
  return { ...u, idToken: await freshToken(u) };
}

/**
 * Opens the scanner at a gate, signed in as the scanner, at a phone's
 * size; its verdicts stay until the next scan (verdictMs=0).
 */
export async function openScanner(page: Page, screeningId: string, gate: string, scanner: TestUser): Promise<void> {
  await page.setViewportSize({ width: 360, height: 740 });
  await page.goto(`/scan.html?screening=${screeningId}&gate=${gate}&verdictMs=0`);
  await signIn(page, scanner);
  await expect(page.locator("#scanner")).toBeVisible();
  // The door as the server has it, and the keys fetched and kept: the gate can decide offline from now on.
  await expect(page.locator("#when")).toHaveAttribute("data-door-state", /^(open|closed|none|not-here)$/);
  await expect.poll(() => page.evaluate(() => localStorage.getItem("firelock.ticketKeys") !== null)).toBe(true);
}

/** Types a code at the scanner and presses Check: the verdict's `data-verdict`. */
export async function scanTyped(page: Page, code: string): Promise<string> {
  const verdict = page.locator("#verdict");
  if (await verdict.isVisible()) await page.locator('[data-action="next"]').click();
  await expect(verdict).toBeHidden();
  await page.locator('[data-field="code"]').fill(code);
  await page.locator('[data-action="scan"]').click();
  await expect(verdict).toBeVisible();
  return (await verdict.getAttribute("data-verdict")) ?? "";
}
