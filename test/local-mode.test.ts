import { networkInterfaces } from "node:os";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../src/platform/config";
import { startBanner } from "../src/platform/node/start-banner";
import { expectError } from "./support/expect-error";
import { createHarness, type Harness } from "./support/harness";
import { startServerProcess } from "./support/server-process";

// A local mode that stays local (issue 24). The attack: `npm start` with no identity provider
// listened on 0.0.0.0 and signed in whoever posted a name, from any host, as that name. Now it
// listens on loopback unless HOST says otherwise, a bare name signs in only from loopback
// unless LOCAL_LOGIN=network, and the start says in plain words where and how it runs.

/** This machine's address on a network (not loopback), when it has one. */
const lanAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

const json = { "Content-Type": "application/json" };
const nameSignIn = (base: string, name: string) => fetch(`${base}/auth/session`, { method: "POST", headers: json, body: JSON.stringify({ local: { name } }) });

describe("npm start with no configuration", () => {
  it("listens on 127.0.0.1 only, and says where to open it and in which mode it runs", async () => {
    // HOST unset, as `npm start` runs it.
    const server = await startServerProcess({ HOST: "" });
    try {
      const port = new URL(server.url).port;
      expect(server.output()).toMatch(/"msg":"listening","url":"http:\/\/localhost:\d+","host":"127\.0\.0\.1"/);
      expect(server.output()).toContain(`Open http://localhost:${port} in a browser on this machine.`);
      expect(server.output()).toContain("Mode: local login. No identity provider is configured, so a name is all it takes to sign in.");
      expect(server.output()).toContain("Only this machine can reach it: it listens on 127.0.0.1.");
      expect((await nameSignIn(`http://127.0.0.1:${port}`, "alice")).status).toBe(200);
      if (lanAddress) await expect(fetch(`http://${lanAddress}:${port}/health`)).rejects.toThrow();
    } finally {
      await server.close();
    }
  }, 60_000);

  it.skipIf(!lanAddress)("on every interface (HOST=0.0.0.0) still takes a bare name only from this machine, unless LOCAL_LOGIN=network, which the start warns of", async () => {
    const server = await startServerProcess({ HOST: "0.0.0.0" });
    try {
      const port = new URL(server.url).port;
      const lan = `http://${lanAddress}:${port}`;
      expect(server.output()).toContain(`, or ${lan} from other devices.`);
      expect(server.output()).toContain("but a name signs in only on this machine");
      await expectError(await nameSignIn(lan, "alice"), 403, /works only on the machine this server runs on/, "local_login_loopback_only");
      await expectError(
        await fetch(`${lan}/auth/local`, { method: "POST", headers: json, body: '{"name":"alice"}' }),
        403,
        /LOCAL_LOGIN=network/,
        "local_login_loopback_only",
      );
      expect((await nameSignIn(`http://127.0.0.1:${port}`, "alice")).status).toBe(200);
      // The rest of the service answers other devices as usual.
      expect((await fetch(`${lan}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
    const open = await startServerProcess({ HOST: "0.0.0.0", LOCAL_LOGIN: "network" });
    try {
      const port = new URL(open.url).port;
      expect(open.output()).toContain(`WARNING: LOCAL_LOGIN=network. Anyone who can reach port ${port} can sign in as anyone`);
      expect((await nameSignIn(`http://${lanAddress}:${port}`, "alice")).status).toBe(200);
    } finally {
      await open.close();
    }
  }, 60_000);
});

describe("a bare name from another address", () => {
  let h: Harness;
  beforeAll(async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const LOCAL_LOGIN_PRIVATE_JWK = JSON.stringify({ ...(await exportJWK(privateKey)), kid: "local-test" });
    // Behind a proxy that says who the client is.
    h = await createHarness({ env: { AUTH_JWKS_URL: "", AUTH_ISSUER: "", AUTH_AUDIENCE: "", LOCAL_LOGIN_PRIVATE_JWK, CLIENT_IP_HEADER: "X-Real-IP" } });
  });
  afterAll(() => h.close());

  const from = (address: string) => h.request("/auth/session", { method: "POST", json: { local: { name: "bob" } }, headers: { "X-Real-IP": address } });

  it("is refused; from loopback, IPv4 or IPv6, it signs in", async () => {
    for (const address of ["192.0.2.10", "2001:db8::1", "::ffff:10.0.0.1"]) await expectError(await from(address), 403, /only on the machine/, "local_login_loopback_only");
    for (const address of ["127.0.0.1", "::1", "::ffff:127.0.0.1"]) expect((await from(address)).status).toBe(200);
  });
});

describe("the start banner", () => {
  const config = (env: Record<string, string> = {}) => parseConfig({ LOG_LEVEL: "error", ...env });
  it("says which provider, and that HOST=127.0.0.1 keeps it to this machine, with an identity provider", () => {
    const text = startBanner({ config: config({ AUTH_OIDC_ISSUER: "https://login.example.com/", AUTH_OIDC_CLIENT_ID: "web" }), host: "0.0.0.0", port: 8787, localLogin: false }, ["192.168.1.5"]);
    expect(text).toContain("Open http://localhost:8787 in a browser on this machine, or http://192.168.1.5:8787 from other devices.");
    expect(text).toContain("Mode: sign-in with https://login.example.com/ and wallets; new accounts: open (SIGN_UP).");
    expect(text).toContain("It listens on every network interface (HOST=127.0.0.1 keeps it to this machine).");
  });
});
