/**
 * The app's Firebase project and functions, from Vite's build-time variables
 * (`make run` and the tests set them to the local emulators), or else from
 * Firebase Hosting's reserved `/__/firebase/init.json` (a deployed app).
 *
 * | variable                        | meaning |
 * |---------------------------------|---------|
 * | `VITE_FIREBASE_PROJECT_ID`      | project id; unset: ask Hosting |
 * | `VITE_FIREBASE_API_KEY`         | web API key (any value for the Auth emulator) |
 * | `VITE_FIREBASE_AUTH_DOMAIN`     | optional |
 * | `VITE_FIREBASE_APP_ID`          | optional |
 * | `VITE_FUNCTIONS_URL`            | base URL of the HTTP functions, e.g. `https://europe-west1-P.cloudfunctions.net` |
 * | `VITE_FIRESTORE_EMULATOR_HOST`  | `host:port` of the Firestore emulator (local only) |
 * | `VITE_AUTH_EMULATOR_HOST`       | `host:port` of the Auth emulator (local only) |
 * | `VITE_RECAPTCHA_SITE_KEY`       | App Check with reCAPTCHA Enterprise (deployed; appcheck.ts) |
 * | `VITE_APPCHECK_TOKEN_URL`       | App Check with firelock-local's tokens (local; appcheck.ts) |
 */
import { type FirebaseApp, type FirebaseOptions, initializeApp } from "firebase/app";
import type { Auth } from "firebase/auth";
import { type Firestore, connectFirestoreEmulator, getFirestore, initializeFirestore, persistentLocalCache, persistentMultipleTabManager } from "firebase/firestore";
import type { AuthEnv } from "./account";
import { type AppCheckEnv, type AppCheckTokens, appCheckSetup, startAppCheck } from "./appcheck";

export interface Env extends AppCheckEnv, AuthEnv {
  VITE_FIREBASE_PROJECT_ID?: string;
  VITE_FIREBASE_API_KEY?: string;
  VITE_FIREBASE_AUTH_DOMAIN?: string;
  VITE_FIREBASE_APP_ID?: string;
  VITE_FUNCTIONS_URL?: string;
  VITE_FIRESTORE_EMULATOR_HOST?: string;
}

export interface Services {
  app: FirebaseApp;
  auth: Auth;
  db: Firestore;
  /** Base URL of the HTTP functions, without a trailing slash. */
  functionsURL: string;
  /** The App Check token for the sale's functions; undefined when App Check is off. */
  appCheckToken: AppCheckTokens | undefined;
}

/** Splits "host:port" (the emulators' variables) into its parts. */
export function hostPort(value: string): { host: string; port: number } {
  const i = value.lastIndexOf(":");
  const port = Number(value.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`"${value}" is not host:port`);
  }
  return { host: value.slice(0, i), port };
}

/** The Firebase options the env names, or undefined when it names no project. */
export function optionsFromEnv(env: Env): FirebaseOptions | undefined {
  if (!env.VITE_FIREBASE_PROJECT_ID) return undefined;
  const options: FirebaseOptions = { projectId: env.VITE_FIREBASE_PROJECT_ID, apiKey: env.VITE_FIREBASE_API_KEY ?? "fake-api-key" };
  if (env.VITE_FIREBASE_AUTH_DOMAIN) options.authDomain = env.VITE_FIREBASE_AUTH_DOMAIN;
  if (env.VITE_FIREBASE_APP_ID) options.appId = env.VITE_FIREBASE_APP_ID;
  return options;
}

/** The default functions URL of a project: us-central1, as `gcloud functions deploy` uses. */
export function functionsURLFor(projectId: string, env: Env): string {
  return (env.VITE_FUNCTIONS_URL ?? `https://us-central1-${projectId}.cloudfunctions.net`).replace(/\/+$/, "");
}

export interface ServiceOptions {
  /**
   * Firestore keeps its cache and its queue of writes in IndexedDB, shared
   * by the page's tabs: a page that must work offline (the door's scanner,
   * CONTRACT §13). Default: memory only, as the other pages have it.
   */
  persistentCache?: boolean;
}

/** What a page has before Auth: the app, Firestore, the functions and App Check. */
export type ServicesBeforeAuth = Omit<Services, "auth">;

/**
 * Initializes Firebase once for the page, without Auth: the seat map
 * starts its listener with these and loads Auth (account.ts's `startAuth`)
 * once it has drawn (issue #50). Firestore reads as nobody until then.
 */
export async function servicesBeforeAuth(env: Env = import.meta.env as Env, opts: ServiceOptions = {}): Promise<ServicesBeforeAuth> {
  let options = optionsFromEnv(env);
  if (!options) {
    const res = await fetch("/__/firebase/init.json");
    if (!res.ok) {
      throw new Error("no Firebase project configured: set VITE_FIREBASE_PROJECT_ID, or serve the app from Firebase Hosting");
    }
    options = (await res.json()) as FirebaseOptions;
  }
  const app = initializeApp(options);
  // First, so that App Check is ready before anything calls the functions.
  const appCheckToken = startAppCheck(app, appCheckSetup(env));
  const db = opts.persistentCache ? initializeFirestore(app, { localCache: persistentLocalCache({ tabManager: persistentMultipleTabManager() }) }) : getFirestore(app);
  if (env.VITE_FIRESTORE_EMULATOR_HOST) {
    const { host, port } = hostPort(env.VITE_FIRESTORE_EMULATOR_HOST);
    connectFirestoreEmulator(db, host, port);
  }
  return { app, db, functionsURL: functionsURLFor(options.projectId ?? "", env), appCheckToken };
}

/**
 * Initializes Firebase once for the page, Auth included (before the page's
 * first read, so Firestore starts as the signed-in user).
 */
export async function services(env: Env = import.meta.env as Env, opts: ServiceOptions = {}): Promise<Services> {
  const base = await servicesBeforeAuth(env, opts);
  const { startAuth } = await import("./account");
  return { ...base, auth: startAuth(base.app, env) };
}
