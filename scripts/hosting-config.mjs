// The Firebase Hosting config of a deploy (deploy.sh): firebase.json with
// the project's Hosting site, and every rewrite to a function pinned to the
// region the functions are deployed in (a rewrite without a region would
// leave it to the Firebase CLI's lookup of the function, and to
// us-central1 when that lookup fails).
//
//   node scripts/hosting-config.mjs --site=SITE --region=REGION --functions=A,B,... (--out=FILE | --check)
//
// A rewrite to a function that is not in --functions (the ones this deploy
// deploys) is refused: exit 1, saying which. --check writes nothing.
import { readFileSync, writeFileSync } from "node:fs";

function fail(msg) {
  process.stderr.write(`hosting-config: ${msg}\n`);
  process.exit(1);
}

const args = {};
for (const a of process.argv.slice(2)) {
  const m = /^--(site|region|functions|out)=(.*)$/.exec(a);
  if (m) args[m[1]] = m[2];
  else if (a === "--check") args.check = true;
  else fail(`unknown argument ${a}`);
}
for (const k of ["site", "region", "functions"]) if (!args[k]) fail(`--${k} is needed`);
if (!args.check && !args.out) fail("--out=FILE or --check is needed");

const config = JSON.parse(readFileSync("firebase.json", "utf8"));
const hosting = config.hosting;
if (!hosting || Array.isArray(hosting)) fail("firebase.json has no single hosting section");
const deployed = new Set(args.functions.split(","));
hosting.site = args.site;
for (const r of hosting.rewrites ?? []) {
  if (!("function" in r)) continue;
  const fn = typeof r.function === "string" ? { functionId: r.function } : { ...r.function };
  if (!deployed.has(fn.functionId)) {
    fail(`firebase.json rewrites ${r.source ?? r.glob ?? r.regex} to the function ${fn.functionId}, which this deploy does not deploy`);
  }
  fn.region = args.region;
  r.function = fn;
}
if (!args.check) writeFileSync(args.out, JSON.stringify(config, null, 2) + "\n");
