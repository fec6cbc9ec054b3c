import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashMessage, parseSignature, serializeErc6492Signature, serializeCompactSignature, signatureToCompactSignature } from "viem";
import { createHarness, type Harness } from "./support/harness";
import { expectError } from "./support/expect-error";
import { startEthereumNode, type EthereumNode } from "./support/ethereum-node";
import { newWallet, postWalletProof, siweMessage, walletNonce } from "./support/wallet";

// Sign-In with Ethereum against real signatures: keys made and messages signed by viem, the
// message text from viem's own EIP-4361 builder, checked by the service's parser and its
// secp256k1 recovery. Every refusal is a 401 with its own code and a message a person can
// act on; a failed attempt never uses up the nonce.

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

type Session = { accessToken: string; expiresAt: string; user: { id: string; name: string; avatarUrl: string | null } };

describe("signing in with a wallet", () => {
  it("trades a signed EIP-4361 message for a session whose access token the API takes", async () => {
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    const res = await postWalletProof(h, message, await wallet.signMessage({ message }));
    expect(res.status).toBe(200);
    const session = (await res.json()) as Session;
    expect(session.user.name).toBe(`${wallet.address.slice(0, 6)}…${wallet.address.slice(-4)}`);
    expect(Date.parse(session.expiresAt) - h.clock.now().getTime()).toBe(900_000);

    const me = await h.request("/me", { token: session.accessToken });
    expect(me.status).toBe(200);
    const profile = (await me.json()) as { id: string; identity: object; identities: Array<{ method: string; issuer: string; subject: string }> };
    expect(profile.id).toBe(session.user.id);
    expect(profile.identity).toEqual({ issuer: "eip155", subject: wallet.address, wallet: wallet.address });
    expect(profile.identities).toEqual([expect.objectContaining({ method: "wallet", issuer: "eip155", subject: wallet.address, label: wallet.address })]);
    expect((await h.request("/plants", { method: "POST", token: session.accessToken, json: { id: 1, name: "Pilea" } })).status).toBe(200);
  });

  it("is the same account on every chain, and another key is another account", async () => {
    const wallet = newWallet();
    const ids = [];
    for (const chainId of [1, 8453, 10]) {
      const message = await siweMessage(h, wallet.address, { chainId });
      const res = await postWalletProof(h, message, await wallet.signMessage({ message }));
      ids.push(((await res.json()) as Session).user.id);
    }
    expect(new Set(ids).size).toBe(1);
    const other = newWallet();
    const message = await siweMessage(h, other.address);
    expect(((await (await postWalletProof(h, message, await other.signMessage({ message }))).json()) as Session).user.id).not.toBe(ids[0]);
  });

  it("takes the 64-byte EIP-2098 compact form of a signature too", async () => {
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    const compact = serializeCompactSignature(signatureToCompactSignature(parseSignature(await wallet.signMessage({ message }))));
    expect((compact.length - 2) / 2).toBe(64);
    expect((await postWalletProof(h, message, compact)).status).toBe(200);
  });

  it("takes a message without a statement, with an expiry, a request id and resources", async () => {
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address, {
      statement: undefined,
      expirationTime: new Date(h.clock.now().getTime() + 60_000),
      notBefore: new Date(h.clock.now().getTime() - 1000),
      requestId: "req-42",
      resources: ["https://localhost:8787/terms", "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"],
      scheme: "http",
    });
    expect(message).toContain("\n\n\nURI: ");
    expect((await postWalletProof(h, message, await wallet.signMessage({ message }))).status).toBe(200);
  });
});

describe("refusing a wallet sign-in", () => {
  const refused = async (res: Response, code: string, pattern: RegExp) => {
    const body = await expectError(res, 401, pattern, code);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    return body;
  };

  it("refuses a replayed message: its nonce is single-use", async () => {
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    const signature = await wallet.signMessage({ message });
    expect((await postWalletProof(h, message, signature)).status).toBe(200);
    await refused(await postWalletProof(h, message, signature), "wallet_nonce_used", /already used to sign in .*sign a new one/);
  });

  it("refuses a message for another domain, scheme or URI", async () => {
    const wallet = newWallet();
    for (const [overrides, pattern] of [
      [{ domain: "evil.example" }, /asks to sign in to evil\.example, not to this service \(localhost:8787\)/],
      [{ domain: "localhost:9999" }, /localhost:9999, not to this service/],
      [{ scheme: "https" }, /scheme https, but this service .* http/],
      [{ uri: "https://evil.example/login" }, /URI is not on this service/],
    ] as const) {
      const message = await siweMessage(h, wallet.address, overrides);
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_domain_mismatch", pattern);
    }
  });

  it("refuses a chain id that is not a decimal EIP-155 id", async () => {
    const wallet = newWallet();
    for (const chain of ["0x1", "eip155:1", "0", "one"]) {
      const message = (await siweMessage(h, wallet.address)).replace("Chain ID: 1", `Chain ID: ${chain}`);
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_message_invalid", /line 8 should be "Chain ID: " and a decimal EIP-155 chain id/);
    }
  });

  it("refuses an expired nonce, an unknown one, and keeps a nonce whose attempt failed", async () => {
    const wallet = newWallet();
    const nonce = await walletNonce(h);
    h.clock.advance(5 * 60_000 + 1);
    try {
      const message = await siweMessage(h, wallet.address, { nonce });
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_nonce_expired", /nonce expired .*sign in again/);
    } finally {
      h.clock.set("2026-11-22T12:00:00.000Z");
    }
    const unknown = await siweMessage(h, wallet.address, { nonce: "abcdef0123456789" });
    await refused(await postWalletProof(h, unknown, await wallet.signMessage({ message: unknown })), "wallet_nonce_unknown", /not issued by this service/);

    // A signature by another key fails, and the nonce is still good for the right one.
    const message = await siweMessage(h, wallet.address);
    await refused(await postWalletProof(h, message, await newWallet().signMessage({ message })), "wallet_signature_invalid", /not made by the key of 0x/);
    expect((await postWalletProof(h, message, await wallet.signMessage({ message }))).status).toBe(200);
  });

  it("refuses a signature of other text, and one that is not a signature at all", async () => {
    const wallet = newWallet();
    const message = await siweMessage(h, wallet.address);
    await refused(await postWalletProof(h, message, await wallet.signMessage({ message: `${message} ` })), "wallet_signature_invalid", /not made by the key/);
    await refused(await postWalletProof(h, message, "0x1234"), "wallet_signature_invalid", /hex .*at least 128 hex digits/);
    await refused(await postWalletProof(h, message, `0x${"00".repeat(65)}`), "wallet_signature_invalid", /not made by the key/);
    await refused(await postWalletProof(h, message, "not hex"), "wallet_signature_invalid", /in hex/);
  });

  it("refuses messages that are not EIP-4361, saying which line is wrong", async () => {
    const wallet = newWallet();
    const good = await siweMessage(h, wallet.address);
    for (const [message, pattern] of [
      ["hello", /line 1 should be "<domain> wants you to sign in with your Ethereum account:"/],
      [good.replace(wallet.address, wallet.address.toLowerCase()), /line 2 should be the address in its EIP-55 checksummed form/],
      [good.replace("\n\nURI:", "\nURI:"), /line 5 should be empty/],
      [good.replace("Version: 1", "Version: 2"), /line 7 should be "Version: 1"/],
      [good.replace(/Issued At: .*/, "Issued At: yesterday"), /"Issued At: " and an RFC 3339 time/],
      [`${good}\n`, /should be the end of the message/],
      [good.replaceAll("\n", "\r\n"), /line feed alone/],
      [good.replace(/\nNonce: .*/, ""), /line 9 should be "Nonce: " and at least 8 letters or digits/],
    ] as const) {
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_message_invalid", pattern);
    }
  });

  it("refuses a message past its expiry, not valid yet, or issued in the future or long ago", async () => {
    const wallet = newWallet();
    const now = h.clock.now().getTime();
    for (const [overrides, pattern] of [
      [{ expirationTime: new Date(now - 1000) }, /expired at .*sign in again/],
      [{ notBefore: new Date(now + 3_600_000) }, /not valid before/],
      [{ issuedAt: new Date(now + 3_600_000) }, /issued in the future: check the device's clock/],
      [{ issuedAt: new Date(now - 3_600_000) }, /issued over 5 minutes ago/],
    ] as const) {
      const message = await siweMessage(h, wallet.address, overrides);
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_message_expired", pattern);
    }
  });

  it("refuses a time that names no real day or hour (2026-11-31), which a Date would take for another", async () => {
    const wallet = newWallet();
    for (const [line, impossible] of [
      ["Expiration Time", "2026-11-31T00:00:00.000Z"],
      ["Expiration Time", "2027-02-29T12:00:00Z"],
      ["Not Before", "2026-11-22T24:00:00Z"],
      ["Issued At", "2026-11-22T12:00:00+24:00"],
    ] as const) {
      const valid = await siweMessage(h, wallet.address, { expirationTime: new Date(h.clock.now().getTime() + 3_600_000), notBefore: h.clock.now() });
      const message = valid.replace(new RegExp(`^${line}: .*$`, "m"), `${line}: ${impossible}`);
      const lineNumber = message.split("\n").findIndex((l) => l.startsWith(`${line}: `)) + 1;
      await refused(await postWalletProof(h, message, await wallet.signMessage({ message })), "wallet_message_invalid", new RegExp(`line ${lineNumber} should be "${line}: " and an RFC 3339 time of a real date`));
    }
  });

  it("answers a body that is no proof with a 400 naming what it should be", async () => {
    await expectError(await h.request("/auth/session", { method: "POST", json: {} }), 400, /exactly one of \{ wallet: \{ message, signature \} \}/);
    await expectError(await h.request("/auth/session", { method: "POST", json: { wallet: { message: "x" } } }), 400, /wallet\.signature: is required/);
    await expectError(await h.request("/auth/session", { method: "POST", json: { wallet: { message: "x", signature: "0x" }, idToken: "y" } }), 400, /exactly one of/);
  });

  it("counts refused wallet sign-ins against the address, like bad credentials", async () => {
    const limited = await createHarness({ env: { AUTH_FAILURES_PER_MINUTE: "3" } });
    try {
      const base = await limited.listen();
      const wallet = newWallet();
      const attempt = async () => {
        const { nonce } = (await (await fetch(`${base}/auth/wallet/nonce`, { method: "POST" })).json()) as { nonce: string };
        const message = await siweMessage(limited, wallet.address, { nonce });
        return fetch(`${base}/auth/session`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ wallet: { message, signature: await newWallet().signMessage({ message }) } }),
        });
      };
      for (let i = 0; i < 3; i++) expect((await attempt()).status).toBe(401);
      const res = await attempt();
      await expectError(res, 429, /too many failed authentications/, "too_many_failed_authentications");
      expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    } finally {
      await limited.close();
    }
  });

  it("is not offered when the operator turns it off", async () => {
    const off = await createHarness({ env: { WALLET_SIGN_IN: "off" } });
    try {
      await expectError(await off.request("/auth/wallet/nonce", { method: "POST" }), 404, /wallet sign-in is turned off/);
      const wallet = newWallet();
      const message = await siweMessage(h, wallet.address);
      await expectError(await postWalletProof(off, message, await wallet.signMessage({ message })), 400, /does not offer wallet sign-in; it offers: idToken or accessToken/, "sign_in_method_not_offered");
      const config = (await (await off.request("/client-config")).json()) as { signIn: { methods: Array<{ method: string }> } };
      expect(config.signIn.methods.map((m) => m.method)).toEqual(["provider-token"]);
    } finally {
      await off.close();
    }
  });
});

describe("smart-contract wallets (WALLET_RPC_URL)", () => {
  let node: EthereumNode;
  let rpc: Harness;
  beforeAll(async () => {
    node = await startEthereumNode(8453);
    rpc = await createHarness({ env: { WALLET_RPC_URL: node.url } });
  });
  afterAll(async () => {
    await rpc.close();
    await node.close();
  });

  /** What a smart wallet's personal_sign returns: its owner's signature of the EIP-191 hash, for isValidSignature. */
  const contractSign = (owner: ReturnType<typeof newWallet>, message: string) => owner.sign({ hash: hashMessage(message) });

  it("signs in a deployed wallet through ERC-1271, and refuses a signature its owner did not make", async () => {
    const owner = newWallet();
    const wallet = node.addWallet(owner, { deployed: true });
    const message = await siweMessage(rpc, wallet.address, { chainId: 8453 });
    await expectError(await postWalletProof(rpc, message, await contractSign(newWallet(), message)), 401, /neither the key's of 0x.* nor accepted by a wallet contract .* on chain 8453/, "wallet_signature_invalid");
    const res = await postWalletProof(rpc, message, await contractSign(owner, message));
    expect(res.status).toBe(200);
    const me = (await (await rpc.request("/me", { token: ((await res.json()) as Session).accessToken })).json()) as { identity: { subject: string } };
    expect(me.identity.subject).toBe(wallet.address);
    expect(node.methods).toContain("eth_call");
  });

  it("signs in a wallet not deployed yet through ERC-6492's universal validator", async () => {
    const owner = newWallet();
    const wallet = node.addWallet(owner, { deployed: false });
    const message = await siweMessage(rpc, wallet.address, { chainId: 8453 });
    const wrapped = serializeErc6492Signature({ address: wallet.factory, data: wallet.factoryData, signature: await contractSign(owner, message) });
    expect((await postWalletProof(rpc, message, wrapped)).status).toBe(200);

    // Wrapped with a factory call that does not deploy it: the validator reverts, a refusal.
    const message2 = await siweMessage(rpc, wallet.address, { chainId: 8453 });
    const wrong = serializeErc6492Signature({ address: wallet.factory, data: "0xdeadbeef", signature: await contractSign(owner, message2) });
    await expectError(await postWalletProof(rpc, message2, wrong), 401, /nor accepted by a wallet contract/, "wallet_signature_invalid");
  });

  it("says so when the message's chain has no node here", async () => {
    const owner = newWallet();
    const wallet = node.addWallet(owner, { deployed: true });
    const message = await siweMessage(rpc, wallet.address, { chainId: 1 });
    await expectError(await postWalletProof(rpc, message, await contractSign(owner, message)), 401, /on the chains this service has a node for, not chain 1/, "wallet_signature_invalid");
  });

  it("answers 503 with Retry-After when the node cannot be reached, and keeps the nonce", async () => {
    const owner = newWallet();
    const wallet = node.addWallet(owner, { deployed: true });
    const message = await siweMessage(rpc, wallet.address, { chainId: 8453 });
    const signature = await contractSign(owner, message);
    node.setDown(true);
    try {
      const res = await postWalletProof(rpc, message, signature);
      await expectError(res, 503, /could not be asked .*try again shortly/, "wallet_rpc_unavailable");
      expect(res.headers.get("retry-after")).toBe("10");
      expect(res.headers.get("www-authenticate")).toBeNull();
    } finally {
      node.setDown(false);
    }
    expect((await postWalletProof(rpc, message, signature)).status).toBe(200);
  });

  it("still signs an ordinary wallet in by its key, without asking the node", async () => {
    const asked = node.methods.length;
    const wallet = newWallet();
    const message = await siweMessage(rpc, wallet.address, { chainId: 8453 });
    expect((await postWalletProof(rpc, message, await wallet.signMessage({ message }))).status).toBe(200);
    expect(node.methods.length).toBe(asked);
  });
});
