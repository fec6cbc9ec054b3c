import { networkInterfaces } from "node:os";
import type { Config } from "../config";

/** What the start banner tells: where the server listens and how people sign in to it. */
export interface BannerFacts {
  config: Config;
  /** The address it listens on (HOST, or its default). */
  host: string;
  port: number;
  /** No identity provider: a name signs in (local login). */
  localLogin: boolean;
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1"]);

/** This machine's addresses on its networks (IPv4), as other devices would open it. */
function networkAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a !== undefined && a.family === "IPv4" && !a.internal)
    .map((a) => a!.address);
}

/**
 * The lines the Node server prints once it listens, in plain words: where to open it, in
 * which mode it runs, and how to change who can reach it. (The JSON log line `listening`
 * says the same for machines.)
 */
export function startBanner({ config, host, port, localLogin }: BannerFacts, addresses: string[] = networkAddresses()): string {
  const here = `http://localhost:${port}`;
  const loopbackOnly = LOOPBACK_HOSTS.has(host);
  const everywhere = host === "0.0.0.0" || host === "::";
  const elsewhere = everywhere ? addresses.map((a) => `http://${a}:${port}`) : loopbackOnly ? [] : [`http://${host.includes(":") ? `[${host}]` : host}:${port}`];
  const lines = ["", "  Assistant Chat is running.", ""];
  lines.push(
    config.PUBLIC_BASE_URL
      ? `  Open ${config.PUBLIC_BASE_URL} (this machine: ${here}).`
      : `  Open ${here} in a browser on this machine${elsewhere.length > 0 ? `, or ${elsewhere.join(" or ")} from other devices` : ""}.`,
  );
  if (localLogin) {
    lines.push("  Mode: local login. No identity provider is configured, so a name is all it takes to sign in.");
    if (loopbackOnly) {
      lines.push(
        `  Only this machine can reach it: it listens on ${host}.`,
        "  To let other devices in, configure an identity provider (AUTH_OIDC_ISSUER: see the README's Configuration),",
        "  or, on a network you trust, start it with HOST=0.0.0.0 LOCAL_LOGIN=network.",
      );
    } else if (config.LOCAL_LOGIN === "network") {
      lines.push(
        "",
        `  WARNING: LOCAL_LOGIN=network. Anyone who can reach port ${port} can sign in as anyone, by typing their name,`,
        "  and read their conversations. Use it only on a network you trust; HOST=127.0.0.1 keeps it to this machine.",
      );
    } else {
      lines.push(
        `  Other devices can reach it (HOST=${host}), but a name signs in only on this machine; wallets sign in from anywhere.`,
        "  LOCAL_LOGIN=network lets a name sign in from other devices too (then anyone who can reach the port can be anyone).",
      );
    }
    lines.push(adminLine(config));
  } else {
    const provider = config.AUTH_OIDC_ISSUER ?? config.AUTH_ISSUER ?? config.AUTH_JWKS_URL ?? "the configured key";
    const wallets = config.WALLET_SIGN_IN === "on" ? " and wallets" : "";
    lines.push(`  Mode: sign-in with ${provider}${wallets}; new accounts: ${config.SIGN_UP} (SIGN_UP).`);
    lines.push(loopbackOnly ? `  Only this machine can reach it: it listens on ${host} (HOST).` : `  It listens on ${everywhere ? "every network interface" : host} (HOST=127.0.0.1 keeps it to this machine).`);
  }
  lines.push("");
  return lines.join("\n");
}

/** Local mode: who the admins are, or how to become one (the operator's console, docs/operating.md). */
function adminLine(config: Config): string {
  const { userIds, wallets, emails } = config.admins;
  const count = userIds.size + wallets.size + emails.size;
  if (count > 0) return `  Admins: ${count} named by ADMINS; they open the operator's console (/admin) when signed in.`;
  return "  No admin yet. To make yourself one: sign in, copy your account id (Settings, or GET /me's id), and start again with ADMINS=<that id>.";
}
