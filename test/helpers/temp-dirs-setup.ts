// Vitest setup file: after each test file (and after the file's own afterAll hooks, which stop
// the processes that may still write there), remove the temporary directories it made.
import { afterAll } from "vitest";
import { removeTempDirs } from "./temp-dirs.js";

afterAll(removeTempDirs);
