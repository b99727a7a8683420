/** A command line the CLI cannot run as given: it exits 2 with the message (cli/podwarden.ts). */
export class UsageError extends Error {}
