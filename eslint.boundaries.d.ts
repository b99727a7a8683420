// Types for eslint.boundaries.js (read by test/architecture.test.ts).
export declare const FORBIDDEN_IMPORTS: Readonly<Record<string, readonly string[]>>;
export declare const boundaries: readonly object[];
export declare const AGENT_CLASS_MESSAGE: string;
export declare const ALLOWED_INSIDE: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;
export declare const AGENT_HOSTS: readonly string[];
export declare const FEATURES: readonly string[];
export declare const FEATURE_MESSAGE: string;
