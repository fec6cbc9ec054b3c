/** Bundles the server and the database thread's entry into `outdir` (dist/ by default). */
export function buildServer(outdir?: string): Promise<void>;
/** Builds dist/ unless it is newer than every source it is built from and built against this lockfile. Returns whether it built. */
export function buildServerIfNeeded(): Promise<boolean>;
