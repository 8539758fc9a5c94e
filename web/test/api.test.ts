// The functions client's retry policy (src/app/api.ts), against a local HTTP
// server that answers as scripted: which answers are retried, with the same
// requestId, and which are not. (The real functions are exercised by the
// browser tests; this pins what those cannot force, a 503 or a lost answer.)
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { User } from "firebase/auth";
import { afterEach, describe, expect, it } from "vitest";
import { APP_CHECK_HEADER, Api, ApiError } from "../src/app/api";

type Answer = { status: number; body?: unknown; text?: string; headers?: Record<string, string> } | "drop";

const user = { getIdToken: () => Promise.resolve("token") } as unknown as User;
const servers: (() => void)[] = [];
afterEach(() => {
  for (const close of servers.splice(0)) close();
});

/** A server that gives the scripted answers in order; its received bodies. */
async function serve(answers: Answer[]): Promise<{ url: string; bodies: Record<string, unknown>[]; appCheck: (string | undefined)[] }> {
  const bodies: Record<string, unknown>[] = [];
  const appCheck: (string | undefined)[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const h = req.headers[APP_CHECK_HEADER.toLowerCase()];
    appCheck.push(Array.isArray(h) ? h.join(",") : h);
    let data = "";
    req.on("data", (c: Buffer) => (data += c.toString()));
    req.on("end", () => {
      bodies.push(JSON.parse(data) as Record<string, unknown>);
      const a = answers.shift() ?? { status: 500 };
      if (a === "drop") {
        req.socket.destroy(); // the answer is lost
        return;
      }
      if (a.text !== undefined) {
        res.writeHead(a.status, { "Content-Type": "text/plain", ...a.headers }).end(a.text);
        return;
      }
      res.writeHead(a.status, { "Content-Type": "application/json", ...a.headers }).end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(() => server.close());
  return { url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`, bodies, appCheck };
}

const booking = { bookingId: "b1", screeningId: "s", seats: ["A1"], status: "confirmed" };
const busy = { error: { code: "seat_busy", message: "busy", seats: ["A1"] } };

describe("Api retries", () => {
  it("retries a lost answer, a 503 and a seat_busy with the same requestId", async () => {
    const srv = await serve(["drop", { status: 503, body: { error: { code: "unavailable", message: "later" } } }, { status: 201, body: booking }]);
    const api = new Api(srv.url, () => user, { backoffMs: 10 });
    await expect(api.bookSeats("s", ["A1"], "req-1")).resolves.toEqual(booking);
    expect(srv.bodies.map((b) => b.requestId)).toEqual(["req-1", "req-1", "req-1"]);

    const srv2 = await serve([{ status: 409, body: busy }, { status: 201, body: booking }]);
    await expect(new Api(srv2.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"], "req-2")).resolves.toEqual(booking);
    expect(srv2.bodies).toHaveLength(2);
  });

  it("retries a front end's plain-text 429 after its Retry-After, with the same requestId", async () => {
    const tooMany = { status: 429, text: "Rate exceeded.", headers: { "Retry-After": "1" } };
    const srv = await serve([tooMany, { status: 201, body: booking }]);
    const started = Date.now();
    await expect(new Api(srv.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"], "req-429")).resolves.toEqual(booking);
    expect(srv.bodies.map((b) => b.requestId)).toEqual(["req-429", "req-429"]);
    expect(Date.now() - started, "waited its Retry-After of 1 s, not the 10-ms backoff").toBeGreaterThanOrEqual(900);

    const srv2 = await serve([tooMany, tooMany, tooMany]);
    const err = await new Api(srv2.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"]).catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(429);
    expect((err as ApiError).code).toBe("unavailable");
    expect(srv2.bodies).toHaveLength(3);
  });

  it("does not retry a 429 whose JSON body names another code (the functions' own refusal, not a front end's)", async () => {
    const srv = await serve([{ status: 429, body: { error: { code: "rate_limited", message: "slow down" } } }, { status: 201, body: booking }]);
    const err = await new Api(srv.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"]).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe("rate_limited");
    expect(srv.bodies).toHaveLength(1);
  });

  it("does not retry a refusal, and gives up after its attempts with the last code", async () => {
    const srv = await serve([{ status: 409, body: { error: { code: "seat_taken", message: "taken", seats: ["A1"] } } }]);
    const err = await new Api(srv.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe("seat_taken");
    expect((err as ApiError).seats).toEqual(["A1"]);
    expect(srv.bodies).toHaveLength(1);

    const srv2 = await serve([{ status: 409, body: busy }, { status: 409, body: busy }, { status: 409, body: busy }, { status: 201, body: booking }]);
    const err2 = await new Api(srv2.url, () => user, { backoffMs: 10 }).bookSeats("s", ["A1"]).catch((e: unknown) => e);
    expect((err2 as ApiError).code).toBe("seat_busy");
    expect(srv2.bodies).toHaveLength(3);
  });

  it("asks a signed-out caller to sign in, sending nothing", async () => {
    const srv = await serve([]);
    await expect(new Api(srv.url, () => null).bookSeats("s", ["A1"])).rejects.toMatchObject({ code: "unauthenticated" });
    expect(srv.bodies).toHaveLength(0);
  });

  it("asks for best available with count, together only when false, and reads seatsLeft from a no_seats_together", async () => {
    const hold = { holdId: "h1", screeningId: "s", seats: ["G10", "G11"], status: "held", heldUntil: "2026-11-25T10:07:00Z" };
    const srv = await serve([{ status: 201, body: hold }, { status: 201, body: hold }, { status: 409, body: { error: { code: "no_seats_together", message: "none", seatsLeft: 3 } } }]);
    const api = new Api(srv.url, () => user, { backoffMs: 10 });
    await expect(api.holdBest("s", 2, { holdSeconds: 60 }, "req-b")).resolves.toEqual(hold);
    await expect(api.holdBest("s", 4, { together: false }, "req-c")).resolves.toEqual(hold);
    expect(srv.bodies).toEqual([
      { screeningId: "s", count: 2, requestId: "req-b", holdSeconds: 60 },
      { screeningId: "s", count: 4, requestId: "req-c", together: false },
    ]);
    const err = await api.holdBest("s", 5).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe("no_seats_together");
    expect((err as ApiError).seatsLeft).toBe(3);
    expect(srv.bodies, "a refusal is not retried").toHaveLength(3);
  });
});

describe("Api with App Check", () => {
  const place = { screeningId: "s", queueId: "q", status: "waiting" };
  const hold = { holdId: "h1", screeningId: "s", seats: ["A1"], status: "held", heldUntil: "2026-11-25T10:07:00Z" };
  const refused = { status: 401, body: { error: { code: "app_check_failed", message: "no" } } };

  it("sends the token to the sale's four functions only", async () => {
    const asked: boolean[] = [];
    const appCheckToken = (force: boolean) => {
      asked.push(force);
      return Promise.resolve("ac-token");
    };
    const checkout = { holdId: "h1", checkoutUrl: "http://pay", heldUntil: "2026-11-25T10:07:00Z", amount: 900, currency: "eur" };
    const srv = await serve([
      { status: 201, body: place },
      { status: 201, body: hold },
      { status: 201, body: booking },
      { status: 200, body: checkout },
      { status: 200, body: hold },
      { status: 200, body: booking },
    ]);
    const api = new Api(srv.url, () => user, { backoffMs: 10, appCheckToken });
    await api.joinQueue("s");
    await api.holdSeats("s", ["A1"]);
    await api.bookSeats("s", ["A2"]);
    await api.checkoutHold("h1", "http://back");
    await api.extendHold("h1", 60);
    await api.cancelBooking("b1");
    expect(srv.appCheck).toEqual(["ac-token", "ac-token", "ac-token", "ac-token", undefined, undefined]);
    expect(asked).toEqual([false, false, false, false]);
  });

  it("sends no header when App Check is off", async () => {
    const srv = await serve([{ status: 201, body: place }]);
    await new Api(srv.url, () => user, { backoffMs: 10 }).joinQueue("s");
    expect(srv.appCheck).toEqual([undefined]);
  });

  it("after an app_check_failed tries once more with a fresh token, and then gives up", async () => {
    const asked: boolean[] = [];
    const appCheckToken = (force: boolean) => {
      asked.push(force);
      return Promise.resolve(force ? "fresh" : "kept");
    };
    const srv = await serve([refused, { status: 201, body: hold }]);
    const api = new Api(srv.url, () => user, { backoffMs: 10, appCheckToken });
    await expect(api.holdSeats("s", ["A1"], undefined, "req-ac")).resolves.toEqual(hold);
    expect(srv.appCheck).toEqual(["kept", "fresh"]);
    expect(srv.bodies.map((b) => b.requestId)).toEqual(["req-ac", "req-ac"]);

    const srv2 = await serve([refused, refused, { status: 201, body: place }]);
    const err = await new Api(srv2.url, () => user, { backoffMs: 10, appCheckToken }).joinQueue("s").catch((e: unknown) => e);
    expect((err as ApiError).code).toBe("app_check_failed");
    expect(srv2.bodies, "one fresh try, no more").toHaveLength(2);
    expect(asked).toEqual([false, true, false, true]);
  });
});
