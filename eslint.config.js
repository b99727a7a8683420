// ESLint flat config: type-aware rules for the TypeScript that runs on Node.
// hotpath-as/assembly/ is AssemblyScript; asc type-checks it, except layout.ts which both compilers read.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { boundaries } from "./eslint.boundaries.js";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", "build/", "coverage/", "hotpath-as/assembly/index.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-floating-promises": "error",
      eqeqeq: ["error", "always"],
    },
  },
  ...boundaries,
  {
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // the HMI page's own script runs in the browser, with no build step
    files: ["agent/hmi/static/**/*.js"],
    languageOptions: {
      sourceType: "module",
      globals: { document: "readonly", EventSource: "readonly", fetch: "readonly", URLSearchParams: "readonly", performance: "readonly", setInterval: "readonly", setTimeout: "readonly", clearTimeout: "readonly", uPlot: "readonly" },
    },
  },
);
