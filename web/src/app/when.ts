/**
 * Times as every page writes them (issue #50.4): one format, with its
 * zone's short name, in the screening's own zone when it names a valid
 * IANA one (`screenings/{id}.timeZone`), else the browser's. Always through
 * Intl.DateTimeFormat, never by hand:
 *
 *   whenWords   "Sat 28 Nov, 16:00 CET"      (a screening, an opening)
 *   whenExact   "Sat 28 Nov, 16:00:05 CET"   (a log line, a person's times)
 *   clockWords  "16:00 CET"                  (a time of day on the same day)
 *   zoneName    "CET"                        (a chart's axis)
 *
 * The report (report/, internal/when) writes the same with Go's time.
 */

/** The app's words are British English: "Sat 28 Nov, 16:00" whatever the browser's language. */
export const LOCALE = "en-GB";

const DAY: Intl.DateTimeFormatOptions = { weekday: "short", day: "numeric", month: "short" };
const HM: Intl.DateTimeFormatOptions = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" };

/** Each formatter made once (making one costs far more than formatting: a console's log formats hundreds). */
const formats = new Map<string, Intl.DateTimeFormat>();
function formatter(locale: string, opts: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const key = `${locale}|${JSON.stringify(opts)}`;
  let f = formats.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(locale, opts);
    formats.set(key, f);
  }
  return f;
}

function format(ms: number, opts: Intl.DateTimeFormatOptions, timeZone: string | undefined, locale: string): string {
  if (timeZone) {
    try {
      return formatter(locale, { ...opts, timeZone }).format(ms);
    } catch {
      // not a zone this browser knows: the browser's own, below
    }
  }
  return formatter(locale, opts).format(ms);
}

/** A day and a time with its zone: "Sat 28 Nov, 16:00 CET". */
export function whenWords(ms: number, timeZone?: string, locale = LOCALE): string {
  return format(ms, { ...DAY, ...HM, timeZoneName: "short" }, timeZone, locale);
}

/** As whenWords, to the second: "Sat 28 Nov, 16:00:05 CET". */
export function whenExact(ms: number, timeZone?: string, locale = LOCALE): string {
  return format(ms, { ...DAY, ...HM, second: "2-digit", timeZoneName: "short" }, timeZone, locale);
}

/** A time of day with its zone: "16:00 CET". */
export function clockWords(ms: number, timeZone?: string, locale = LOCALE): string {
  return format(ms, { ...HM, timeZoneName: "short" }, timeZone, locale);
}

/** The zone's short name at that instant: "CET" (or "GMT+5:30" where it has none). */
export function zoneName(ms: number, timeZone?: string, locale = LOCALE): string {
  const parts = new Intl.DateTimeFormat(locale, { timeZoneName: "short", ...(timeZone && validZone(timeZone) ? { timeZone } : {}) }).formatToParts(ms);
  return parts.find((p) => p.type === "timeZoneName")?.value ?? "";
}

function validZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat(LOCALE, { timeZone });
    return true;
  } catch {
    return false;
  }
}
