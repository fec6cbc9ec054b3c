import type { Identity } from "./jwt";

/** Who is calling, and with what. */
export type Principal =
  | { via: "jwt"; userId: string; identity: Identity }
  | { via: "api-key"; userId: string; keyId: string };
