// Opens a self-contained page (a file) in Chromium through Playwright at
// phone and laptop width, and prints what a person would see wrong: how far
// it scrolls sideways, and how large its smallest chart text is drawn.
// Saves a full-page screenshot of each. Used by Go tests of pages that Go
// writes (the sale report: report).
//
//   node web/scripts/page-fit.mjs PAGE.html SCREENSHOT-PREFIX
//
// prints {"360": {"overflow": px, "smallestAxisPx": px}, "1280": {...}}
import { chromium } from "@playwright/test";
import { pathToFileURL } from "node:url";

const [page, prefix] = process.argv.slice(2);
if (!page || !prefix) {
  console.error("usage: node page-fit.mjs PAGE.html SCREENSHOT-PREFIX");
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
});
const out = {};
try {
  for (const width of [360, 1280]) {
    const ctx = await browser.newContext({ viewport: { width, height: 800 } });
    const p = await ctx.newPage();
    await p.goto(pathToFileURL(page).href);
    out[width] = await p.evaluate(() => {
      // The size a chart's axis text is drawn at: its font size scaled as its SVG is.
      const sizes = [...document.querySelectorAll("svg text.axis")].map((t) => {
        const svg = t.ownerSVGElement;
        const scale = svg && svg.viewBox.baseVal.width > 0 ? svg.getBoundingClientRect().width / svg.viewBox.baseVal.width : 1;
        return parseFloat(getComputedStyle(t).fontSize) * scale;
      });
      return {
        overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        smallestAxisPx: sizes.length ? Math.min(...sizes) : null,
      };
    });
    await p.screenshot({ path: `${prefix}-${String(width)}.png`, fullPage: true });
    // The same in parts a screen or two high, easier to look at.
    const height = await p.evaluate(() => document.documentElement.scrollHeight);
    const part = width < 800 ? 1400 : 1000;
    for (let y = 0, i = 1; y < height; y += part, i++) {
      await p.screenshot({ path: `${prefix}-${String(width)}-part${String(i)}.png`, fullPage: true, clip: { x: 0, y, width, height: Math.min(part, height - y) } });
    }
    await ctx.close();
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
