// App Check's configuration (src/app/appcheck.ts): which provider the
// app's variables ask for, and the local run's token endpoint as the
// CustomProvider reads it, against a local HTTP server.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { appCheckSetup, fetchLocalToken } from "../src/app/appcheck";

const servers: (() => void)[] = [];
afterEach(() => {
  for (const close of servers.splice(0)) close();
});

/** A server that answers every request with status and body; its URL. */
async function answering(status: number, body: string): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(status, { "Content-Type": "application/json" }).end(body));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(() => server.close());
  return `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/token`;
}

describe("appCheckSetup", () => {
  it.each([
    [{}, { provider: "off" }],
    [{ VITE_RECAPTCHA_SITE_KEY: " ", VITE_APPCHECK_TOKEN_URL: "" }, { provider: "off" }],
    [{ VITE_RECAPTCHA_SITE_KEY: "6Lc-site-key" }, { provider: "recaptcha-enterprise", siteKey: "6Lc-site-key" }],
    [{ VITE_APPCHECK_TOKEN_URL: "http://127.0.0.1:4000/token" }, { provider: "local", tokenURL: "http://127.0.0.1:4000/token" }],
    [{ VITE_RECAPTCHA_SITE_KEY: "6Lc-site-key", VITE_APPCHECK_TOKEN_URL: "http://127.0.0.1:4000/token" }, { provider: "local", tokenURL: "http://127.0.0.1:4000/token" }],
  ])("%j: %j", (env, want) => {
    expect(appCheckSetup(env)).toEqual(want);
  });
});

describe("fetchLocalToken", () => {
  it("reads the token and its expiry", async () => {
    const url = await answering(200, JSON.stringify({ token: "a.b.c", expireTimeMillis: 1_790_000_000_000 }));
    await expect(fetchLocalToken(url)).resolves.toEqual({ token: "a.b.c", expireTimeMillis: 1_790_000_000_000 });
  });

  it("fails on an error answer or one without a token, naming the endpoint", async () => {
    const down = await answering(500, "{}");
    await expect(fetchLocalToken(down)).rejects.toThrow(`${down}: HTTP 500`);
    const empty = await answering(200, JSON.stringify({ token: "", expireTimeMillis: 1 }));
    await expect(fetchLocalToken(empty)).rejects.toThrow("no token");
    const noExpiry = await answering(200, JSON.stringify({ token: "a.b.c" }));
    await expect(fetchLocalToken(noExpiry)).rejects.toThrow("no token");
  });
});
