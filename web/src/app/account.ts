/**
 * Firebase Auth for the pages: its start on the app, and the sign-in panel.
 * A module of its own so that the seat map can load it after it has drawn
 * (issue #50: the Auth SDK's evaluation and start are a long task of their
 * own); the other pages get it through config.ts's `services`.
 */
import type { FirebaseApp } from "firebase/app";
import {
  type Auth,
  type User,
  browserLocalPersistence,
  browserSessionPersistence,
  connectAuthEmulator,
  createUserWithEmailAndPassword,
  indexedDBLocalPersistence,
  initializeAuth,
  onAuthStateChanged,
  signInWithEmailAndPassword,
  signOut,
} from "firebase/auth";
import { type Status, h, runAction } from "./ui";

export { sendEmailVerification } from "firebase/auth";

/** The Auth part of the app's configuration (config.ts's Env). */
export interface AuthEnv {
  VITE_AUTH_EMULATOR_HOST?: string;
}

/**
 * Initializes Auth on the app (once). Firestore takes an Auth that comes
 * after it: it restarts its streams with the user's token.
 */
export function startAuth(app: FirebaseApp, env: AuthEnv): Auth {
  // getAuth's persistence without its popup and redirect resolver: the app
  // signs in by email, and the resolver loads apis.google.com's script on
  // every page (Lighthouse's best practices, issue #50).
  const auth = initializeAuth(app, { persistence: [indexedDBLocalPersistence, browserLocalPersistence, browserSessionPersistence] });
  if (env.VITE_AUTH_EMULATOR_HOST) {
    connectAuthEmulator(auth, `http://${env.VITE_AUTH_EMULATOR_HOST}`, { disableWarnings: true });
  }
  return auth;
}

/** Words for the Auth SDK's sign-in errors, with a §3-style code. */
export function authError(err: unknown): { code: string; message: string } {
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  switch (code) {
    case "auth/invalid-credential":
    case "auth/wrong-password":
    case "auth/user-not-found":
    case "auth/invalid-login-credentials":
      return { code: "unauthenticated", message: "That email and password do not match an account." };
    case "auth/invalid-email":
      return { code: "invalid_argument", message: "Please enter a valid email address." };
    case "auth/missing-password":
      return { code: "invalid_argument", message: "Please enter your password." };
    case "auth/weak-password":
      return { code: "invalid_argument", message: "Choose a password of at least 6 characters." };
    case "auth/email-already-in-use":
      return { code: "invalid_argument", message: "There is already an account with that email: sign in instead." };
    case "auth/too-many-requests":
      return { code: "unavailable", message: "Too many attempts. Please wait a minute and try again." };
    case "auth/network-request-failed":
      return { code: "unavailable", message: "We could not reach the sign-in service. Check your connection." };
    default:
      return { code: "unauthenticated", message: `Sign-in failed (${code || String(err)}).` };
  }
}

/**
 * The sign-in panel: email and password with sign-in and create-account
 * buttons while signed out; who is signed in and sign-out while signed in.
 * `welcome` is the status line once signed in (a function: its words as of
 * then).
 */
export function mountAccount(
  el: HTMLElement,
  auth: Auth,
  status: Status,
  onUser: (user: User | null) => void,
  welcome: string | (() => string) = "Signed in.",
): void {
  const welcomeText = (): string => (typeof welcome === "function" ? welcome() : welcome);
  const email = h("input", { type: "email", "data-field": "email", autocomplete: "username", placeholder: "Email", "aria-label": "Email", required: "" });
  const password = h("input", {
    type: "password",
    "data-field": "password",
    autocomplete: "current-password",
    placeholder: "Password",
    "aria-label": "Password",
    required: "",
  });
  const signIn = h("button", { type: "submit", class: "primary", "data-action": "sign-in" }, "Sign in");
  const signUp = h("button", { type: "button", "data-action": "sign-up" }, "Create account");
  const form = h("form", { class: "signin", "aria-label": "Sign in" }, email, password, signIn, signUp);
  const who = h("span", { class: "who" });
  const signOutButton = h("button", { type: "button", "data-action": "sign-out" }, "Sign out");
  const signedIn = h("div", { class: "signedin" }, who, signOutButton);

  const run = (label: string, action: () => Promise<unknown>, done: () => string) =>
    runAction(
      status,
      (on) => {
        for (const b of [signIn, signUp, signOutButton]) b.disabled = on;
      },
      label,
      async () => {
        await action();
        return done();
      },
      authError,
    );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void run("Signing in…", () => signInWithEmailAndPassword(auth, email.value.trim(), password.value), welcomeText);
  });
  signUp.addEventListener("click", () => {
    void run("Creating your account…", () => createUserWithEmailAndPassword(auth, email.value.trim(), password.value), () => `Account created. ${welcomeText()}`);
  });
  signOutButton.addEventListener("click", () => {
    void run("Signing out…", () => signOut(auth), () => "Signed out.");
  });

  onAuthStateChanged(auth, (user) => {
    // Which stand-in the seat map's page shows next time, before it knows (index.html).
    try {
      localStorage.setItem("firelock.account", user ? "in" : "out");
    } catch {
      // Storage refused (a private window's quota): the page shows the sign-in form's stand-in.
    }
    if (user) {
      who.textContent = user.email ?? user.uid;
      who.title = `uid ${user.uid}`;
      password.value = "";
      el.replaceChildren(signedIn);
    } else {
      el.replaceChildren(form);
    }
    onUser(user);
  });
}
