/**
 * What both pages share: the `data-status` line and the sign-in panel.
 */
import {
  type Auth,
  type User,
  createUserWithEmailAndPassword,
  onAuthStateChanged,
  signInWithEmailAndPassword,
  signOut,
} from "firebase/auth";

/** Creates an element with attributes and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}

/** The element of a selector, or an error naming it. */
export function $(selector: string, root: ParentNode = document): HTMLElement {
  return $as(HTMLElement, selector, root);
}

/** The element of a selector, checked to be a `kind` (HTMLButtonElement, say). */
export function $as<T extends Element>(kind: abstract new () => T, selector: string, root: ParentNode = document): T {
  const el = root.querySelector(selector);
  if (!(el instanceof kind)) throw new Error(`page has no ${kind.name} ${selector}`);
  return el;
}

/**
 * The `data-status` element (CONTRACT §6): `data-code` is `ok` or the §3
 * error code of the last action; while an action runs it has no `data-code`.
 */
export class Status {
  constructor(private readonly el: HTMLElement) {}

  pending(text: string): void {
    this.el.removeAttribute("data-code");
    this.el.className = "status pending";
    this.el.textContent = text;
  }

  ok(text: string): void {
    this.show("ok", text);
  }

  error(code: string, text: string): void {
    this.show(code, text);
  }

  private show(code: string, text: string): void {
    this.el.dataset.code = code;
    this.el.className = code === "ok" ? "status ok" : "status error";
    this.el.textContent = text;
  }
}

/** An error, for the status line: its code (§3's where there is one) and words. */
export type Explain = (err: unknown) => { code: string; message: string };

/**
 * Runs one user action: `busy(true)` while it runs, the pending text, then
 * the status `ok` with the words `fn` returns, or the code and words that
 * `explain` gives its error.
 */
export async function runAction(status: Status, busy: (on: boolean) => void, pending: string, fn: () => Promise<string>, explain: Explain): Promise<void> {
  busy(true);
  status.pending(pending);
  try {
    status.ok(await fn());
  } catch (err) {
    const e = explain(err);
    status.error(e.code, e.message);
  } finally {
    busy(false);
  }
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
