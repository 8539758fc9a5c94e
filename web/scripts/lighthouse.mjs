// Lighthouse's mobile audit of the built app's seat map (issue #50), run
// inside the local bundle by `make lighthouse`: it writes a screening of
// 10 rows of 20 seats with a price by row, audits `/?screening=ID` with
// Lighthouse's default mobile settings (a Moto G Power's screen, slow 4G
// and a 4× slower CPU, simulated) in Debian's Chromium (CHROME_PATH, else
// /usr/bin/chromium), writes test-results/lighthouse.json and .html, and
// exits 1 when a category is under its bar: accessibility and best
// practices 95, performance 90.
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import * as chromeLauncher from "chrome-launcher";
import lighthouse from "lighthouse";

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this inside the local bundle (make lighthouse)`);
  return v;
};
const web = need("FIRELOCK_WEB_URL");
const firestore = need("FIRESTORE_EMULATOR_HOST");
const project = need("GOOGLE_CLOUD_PROJECT");
const bars = { accessibility: 95, "best-practices": 95, performance: 90 };

const id = `lighthouse-${randomUUID().slice(0, 8)}`;
const rows = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];
const fields = {
  title: { stringValue: "Metropolis" },
  startsAt: { timestampValue: new Date(Date.now() + 86_400_000).toISOString() },
  rows: { arrayValue: { values: rows.map((r) => ({ stringValue: r })) } },
  seatsPerRow: { integerValue: "20" },
  price: {
    mapValue: {
      fields: {
        amount: { integerValue: "900" },
        currency: { stringValue: "eur" },
        rows: { mapValue: { fields: { A: { integerValue: "1500" }, B: { integerValue: "1500" } } } },
      },
    },
  },
};
const res = await fetch(`http://${firestore}/v1/projects/${project}/databases/(default)/documents/screenings/${id}`, {
  method: "PATCH",
  headers: { Authorization: "Bearer owner", "Content-Type": "application/json" },
  body: JSON.stringify({ fields }),
});
if (!res.ok) throw new Error(`create screening: ${String(res.status)} ${await res.text()}`);

const url = `${web}/?screening=${id}`;
const chrome = await chromeLauncher.launch({
  chromePath: process.env.CHROME_PATH ?? "/usr/bin/chromium",
  chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu"],
});
let failed = false;
try {
  const result = await lighthouse(url, { port: chrome.port, output: ["json", "html"], logLevel: "error", onlyCategories: Object.keys(bars) });
  if (!result) throw new Error("lighthouse gave no result");
  mkdirSync("test-results", { recursive: true });
  const [json, html] = result.report;
  writeFileSync("test-results/lighthouse.json", json);
  writeFileSync("test-results/lighthouse.html", html);
  const lhr = result.lhr;
  console.log(`Lighthouse ${lhr.lighthouseVersion}, ${lhr.configSettings.formFactor}, ${lhr.environment.hostUserAgent}`);
  console.log(`the seat map, ${url}:`);
  for (const [key, bar] of Object.entries(bars)) {
    const score = Math.round((lhr.categories[key]?.score ?? 0) * 100);
    const ok = score >= bar;
    if (!ok) failed = true;
    console.log(`  ${key}: ${String(score)} (bar ${String(bar)})${ok ? "" : "  UNDER THE BAR"}`);
    for (const ref of lhr.categories[key]?.auditRefs ?? []) {
      const a = lhr.audits[ref.id];
      if (a && a.score !== null && a.score < 1 && ref.weight > 0) console.log(`    ${a.id}: ${String(a.score)} ${a.displayValue ?? ""} ${a.title}`);
    }
  }
  for (const m of ["first-contentful-paint", "largest-contentful-paint", "total-blocking-time", "cumulative-layout-shift", "speed-index"]) {
    console.log(`  ${m}: ${lhr.audits[m]?.displayValue ?? "?"}`);
  }
} finally {
  await chrome.kill();
}
process.exit(failed ? 1 : 0);
