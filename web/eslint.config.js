// Lint: typescript-eslint's strict, type-checked rules.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules", "dist"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ["eslint.config.js", "scripts/*.mjs"] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // `(w) => w.set(data)` reads better than braces around one call.
      "@typescript-eslint/no-confusing-void-expression": ["error", { ignoreArrowShorthand: true }],
    },
  },
  { files: ["eslint.config.js", "scripts/*.mjs"], ...tseslint.configs.disableTypeChecked },
  // Node scripts (scripts/page-fit.mjs drives Chromium, scripts/lighthouse.mjs writes a screening): Node's globals, and the page's inside evaluate().
  { files: ["scripts/*.mjs"], languageOptions: { globals: { process: "readonly", console: "readonly", fetch: "readonly", document: "readonly", getComputedStyle: "readonly" } } },
);
