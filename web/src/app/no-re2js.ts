/**
 * Stands in for the re2js package in the built app (vite.config.ts): the
 * Firestore SDK imports it for one thing, matching regular expressions when
 * it evaluates a pipeline's `like`, `regexContains` and `regexMatch` on the
 * client. This app runs no pipelines; re2js is 150 kB of the seat map's
 * script and its evaluation a good part of the time before the page answers
 * (Lighthouse's blocking time, issue #50). Should the SDK ever compile a
 * pattern here, it is refused loudly (the SDK catches it and answers that
 * pipeline stage with an error), never matched wrongly.
 */
export const RE2JS = {
  compile(pattern: string): never {
    throw new Error(`firelock's build leaves re2js out (web/src/app/no-re2js.ts): no pattern is compiled, not even ${pattern}`);
  },
};
