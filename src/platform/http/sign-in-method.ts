import { z } from "@hono/zod-openapi";
import type { SignInMethodView } from "../auth/sign-in-methods";
import { serviceId } from "./service-id";

/** A sign-in method of the account, as GET /me and POST /me/identities show it. */
export const SignInMethodSchema = z
  .object({
    id: serviceId("idn", "idn_Vb7xQ2mK9pLs4Tn8Wc1yZa"),
    method: z.enum(["wallet", "provider", "local"]).openapi({ description: "A wallet (Sign-In with Ethereum), the identity provider, or a local-login name" }),
    issuer: z.string().openapi({ example: "eip155", description: "`eip155` for wallets, the provider's `iss`, or `local-login`" }),
    subject: z.string().openapi({ example: "0x71C7656EC7ab88b098defB751B7401B5f6d8976F" }),
    label: z.string().openapi({ example: "0x71C7656EC7ab88b098defB751B7401B5f6d8976F", description: "What a person recognises it by: the address, the e-mail, the name" }),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("SignInMethod");

export const signInMethodJson = (m: SignInMethodView) => ({ ...m, createdAt: m.createdAt.toISOString() });
