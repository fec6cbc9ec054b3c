/** Builds web/dist unless it is newer than every source of the client. */
export function buildWebIfNeeded(): void;
