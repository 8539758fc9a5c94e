/**
 * App Check (CONTRACT §12): the app proves it is the real app, so that a
 * sale's places go to people and not to scripts. `JoinQueue`, `HoldSeats`,
 * `BookSeats` and `CheckoutHold` get the token in `X-Firebase-AppCheck`
 * (see api.ts); the functions verify it.
 *
 * | variable                   | App Check |
 * |----------------------------|-----------|
 * | `VITE_RECAPTCHA_SITE_KEY`  | deployed: reCAPTCHA Enterprise with this site key |
 * | `VITE_APPCHECK_TOKEN_URL`  | local (`firelock-local -appcheck enforce\|monitor` sets it): a `CustomProvider` that fetches tokens from the run's endpoint; wins over the site key |
 * | neither                    | off: no App Check, no header |
 */
import type { FirebaseApp } from "firebase/app";

/** The App Check part of the app's configuration (config.ts's Env). */
export interface AppCheckEnv {
  VITE_RECAPTCHA_SITE_KEY?: string;
  VITE_APPCHECK_TOKEN_URL?: string;
}

/** How the app attests itself. */
export type AppCheckSetup = { provider: "off" } | { provider: "recaptcha-enterprise"; siteKey: string } | { provider: "local"; tokenURL: string };

/** The provider the configuration asks for. */
export function appCheckSetup(env: AppCheckEnv): AppCheckSetup {
  const tokenURL = env.VITE_APPCHECK_TOKEN_URL?.trim();
  if (tokenURL) return { provider: "local", tokenURL };
  const siteKey = env.VITE_RECAPTCHA_SITE_KEY?.trim();
  if (siteKey) return { provider: "recaptcha-enterprise", siteKey };
  return { provider: "off" };
}

/** A token of the local run's endpoint, in the shape `CustomProvider` wants. */
export interface LocalToken {
  token: string;
  expireTimeMillis: number;
}

/** Fetches a fresh token from firelock-local's token endpoint. */
export async function fetchLocalToken(tokenURL: string): Promise<LocalToken> {
  const res = await fetch(tokenURL, { cache: "no-store" });
  if (!res.ok) throw new Error(`App Check token endpoint ${tokenURL}: HTTP ${String(res.status)}`);
  const body = (await res.json()) as { token?: unknown; expireTimeMillis?: unknown };
  if (typeof body.token !== "string" || body.token === "" || typeof body.expireTimeMillis !== "number") {
    throw new Error(`App Check token endpoint ${tokenURL}: no token in its answer`);
  }
  return { token: body.token, expireTimeMillis: body.expireTimeMillis };
}

/**
 * Gets the App Check token for a call; `forceRefresh` asks for a new one
 * (after the functions refused the one the SDK kept).
 */
export type AppCheckTokens = (forceRefresh: boolean) => Promise<string>;

/**
 * Initializes App Check on the app as `setup` says, with automatic refresh,
 * and answers its token getter; undefined when off. The App Check SDK loads
 * apart (a dynamic import, started here): off, a page never loads it, and
 * on, its evaluation is a task of its own, not part of the page's start
 * (issue #50). The getter waits for it, so App Check is up before any call
 * to the functions. A token the SDK cannot get is still sent (the SDK's
 * placeholder): the functions refuse it with `app_check_failed` in
 * enforce, and count it in monitor.
 */
export function startAppCheck(app: FirebaseApp, setup: AppCheckSetup): AppCheckTokens | undefined {
  if (setup.provider === "off") return undefined;
  const appCheck = import("firebase/app-check").then(({ CustomProvider, ReCaptchaEnterpriseProvider, initializeAppCheck, getToken }) => {
    const provider =
      setup.provider === "local"
        ? new CustomProvider({ getToken: () => fetchLocalToken(setup.tokenURL) })
        : new ReCaptchaEnterpriseProvider(setup.siteKey);
    return { appCheck: initializeAppCheck(app, { provider, isTokenAutoRefreshEnabled: true }), getToken };
  });
  return async (forceRefresh) => {
    const { appCheck: ac, getToken } = await appCheck;
    return (await getToken(ac, forceRefresh)).token;
  };
}
