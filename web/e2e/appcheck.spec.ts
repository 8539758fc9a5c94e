// App Check enforced (CONTRACT §12), in Chromium: a person joins a sale's
// queue through the app, whose CustomProvider fetched a token from the
// bundle's endpoint and sent it in X-Firebase-AppCheck; a script's
// JoinQueue with a valid ID token but without that header (from Node, or
// from a page of the app's own origin), or with a made-up token, is
// refused with 401 app_check_failed and gets no place. Runs in a bundle
// started with -appcheck enforce (`npm run e2e:appcheck` in `make test`).
import { createScreening, createUser, env, expect, listDocs, signIn, test } from "./bundle";

test.skip(env.appCheck !== "enforce", "needs a bundle with App Check enforced: firelock-local -appcheck enforce (npm run e2e:appcheck)");

interface Answer {
  status: number;
  code: string | undefined;
}

test("with App Check enforced a person joins the queue through the app, and a request without a token is refused", async ({ open, page: bare }) => {
  const screening = await createScreening({
    rows: ["A", "B"],
    seatsPerRow: 8,
    title: "Nosferatu",
    sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 },
  });
  const [person, script] = await Promise.all([createUser("person"), createUser("script")]);
  const places = async () => (await listDocs("queue")).filter((d) => d.fields.screeningId?.stringValue === screening);

  // The person, in the app.
  const page = await open();
  const tokenFetches: string[] = [];
  const joins: (string | undefined)[] = [];
  page.on("request", (req) => {
    if (req.url().startsWith(env.appCheckTokenURL)) tokenFetches.push(req.url());
    if (req.method() === "POST" && req.url() === `${env.functions}/JoinQueue`) joins.push(req.headers()["x-firebase-appcheck"]);
  });
  await page.goto(`/?screening=${screening}`);
  await signIn(page, person);
  await page.locator('[data-action="join"]').click();
  await expect(page.locator("[data-status]")).toHaveAttribute("data-code", "ok");
  await expect(page.locator("#queue")).toHaveAttribute("data-queue-state", "waiting");
  await page.screenshot({ path: "test-results/screenshots/appcheck-joined.png", fullPage: true });
  expect(tokenFetches.length, "the app fetched a token from the bundle's endpoint").toBeGreaterThan(0);
  expect(joins, "one JoinQueue, with an App Check token (a JWT)").toHaveLength(1);
  expect(joins[0]).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  const mine = await places();
  expect(mine.map((d) => d.fields.uid?.stringValue)).toEqual([person.uid]);

  // A script with a valid ID token: without the header, or with a made-up token.
  const join = async (headers: Record<string, string>): Promise<Answer> => {
    const res = await fetch(`${env.functions}/JoinQueue`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${script.idToken}`, ...headers },
      body: JSON.stringify({ screeningId: screening }),
    });
    const body = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: body.error?.code };
  };
  expect(await join({})).toEqual({ status: 401, code: "app_check_failed" });
  expect(await join({ "X-Firebase-AppCheck": "made-up" })).toEqual({ status: 401, code: "app_check_failed" });
  // And from a page of the app's own origin (through CORS), as a script in a browser would.
  await bare.goto(`/?screening=${screening}`);
  const fromPage = await bare.evaluate(
    async ({ url, idToken, screeningId }) => {
      const res = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${idToken}` },
        body: JSON.stringify({ screeningId }),
      });
      const body = (await res.json()) as { error?: { code?: string } };
      return { status: res.status, code: body.error?.code };
    },
    { url: `${env.functions}/JoinQueue`, idToken: script.idToken, screeningId: screening },
  );
  expect(fromPage).toEqual({ status: 401, code: "app_check_failed" });
  expect((await places()).map((d) => d.fields.uid?.stringValue), "the refused joins left no place").toEqual([person.uid]);
});

test("with App Check enforced a person books a seat through the app", async ({ open }) => {
  const screening = await createScreening({ rows: ["A"], seatsPerRow: 6, title: "The General" });
  const person = await createUser("booker");
  const page = await open();
  const books: (string | undefined)[] = [];
  page.on("request", (req) => {
    if (req.method() === "POST" && req.url() === `${env.functions}/BookSeats`) books.push(req.headers()["x-firebase-appcheck"]);
  });
  await page.goto(`/?screening=${screening}`);
  await signIn(page, person);
  await page.locator('[data-seat="A3"]').click();
  await page.locator('[data-action="book"]').click();
  await expect(page.locator('[data-seat="A3"]')).toHaveAttribute("data-state", "mine-booked");
  expect(books).toHaveLength(1);
  expect(books[0]).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
});

test("an app whose tokens App Check does not vouch for is refused, in words, and gets no place", async ({ page }) => {
  // Not a watched page: its refused calls are the point. The app's token
  // endpoint answers tokens no App Check key signed.
  const screening = await createScreening({
    rows: ["A"],
    seatsPerRow: 6,
    sale: { opensAt: new Date(Date.now() + 3_600_000), admitPerMinute: 60, maxActive: 5 },
  });
  const person = await createUser("forged");
  const forged = `${Buffer.from('{"alg":"RS256","kid":"forged"}').toString("base64url")}.${Buffer.from(`{"iat":${String(Math.floor(Date.now() / 1000))}}`).toString("base64url")}.c2ln`;
  await page.route(`${env.appCheckTokenURL}*`, (route) => route.fulfill({ json: { token: forged, expireTimeMillis: Date.now() + 600_000 } }));
  const joins: (string | undefined)[] = [];
  page.on("request", (req) => {
    if (req.method() === "POST" && req.url() === `${env.functions}/JoinQueue`) joins.push(req.headers()["x-firebase-appcheck"]);
  });
  await page.goto(`/?screening=${screening}`);
  await signIn(page, person);
  await page.locator('[data-action="join"]').click();
  const status = page.locator("[data-status]");
  await expect(status).toHaveAttribute("data-code", "app_check_failed");
  await expect(status).toContainText("could not prove it is the real app");
  await expect(page.locator("#queue")).toHaveAttribute("data-queue-state", "none");
  await page.screenshot({ path: "test-results/screenshots/appcheck-refused.png", fullPage: true });
  expect(joins, "the kept token, then one fresh one").toEqual([forged, forged]);
  expect((await listDocs("queue")).filter((d) => d.fields.screeningId?.stringValue === screening)).toHaveLength(0);
});
