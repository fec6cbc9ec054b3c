import type { BrowserContext } from "playwright-core";
import type { LocalAccount } from "viem";

export interface InjectedWallet {
  /** The wallet's name, as EIP-6963 announces it. */
  name: string;
  account: LocalAccount;
  /** What the wallet answers personal_sign with: the key's signature, or a refusal (EIP-1193 4001). */
  behaviour?: "sign" | "decline";
}

/**
 * Browser wallets in every page of `context`, as an extension injects them: EIP-1193
 * providers that announce themselves by EIP-6963 (or, with `legacy`, sit at window.ethereum
 * alone). Accounts are told in lower case, as wallets often do. personal_sign is answered by
 * the account's real secp256k1 key, in Node (viem), through a function the page calls.
 */
export async function injectWallets(context: BrowserContext, wallets: InjectedWallet[], options: { legacy?: boolean; chainId?: number } = {}) {
  const signed: string[] = [];
  await context.exposeFunction("__testWalletSign", async (index: number, hexMessage: `0x${string}`) => {
    const wallet = wallets[index]!;
    if (wallet.behaviour === "decline") return { error: { code: 4001, message: "User rejected the request." } };
    signed.push(hexMessage);
    return { signature: await wallet.account.signMessage({ message: { raw: hexMessage } }) };
  });
  const described = wallets.map((w, i) => ({ index: i, name: w.name, address: w.account.address.toLowerCase() }));
  // The page's script is plain text, not a function: a function's source would carry the
  // helpers a TypeScript loader inserts (tsx's __name), which the page does not have.
  await context.addInitScript(`(() => {
    const described = ${JSON.stringify(described)};
    const legacy = ${JSON.stringify(options.legacy ?? false)};
    const chainId = ${JSON.stringify(options.chainId ?? 1)};
    const make = (w) => ({
      async request({ method, params }) {
        if (method === "eth_requestAccounts" || method === "eth_accounts") return [w.address];
        if (method === "eth_chainId") return "0x" + chainId.toString(16);
        if (method === "personal_sign") {
          const reply = await window.__testWalletSign(w.index, params[0]);
          if (reply.error) throw reply.error;
          return reply.signature;
        }
        throw { code: 4200, message: "unsupported method " + method };
      },
    });
    const providers = described.map((w) => ({ w, provider: make(w) }));
    if (legacy) {
      window.ethereum = providers[0].provider;
      return;
    }
    const icon = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24'%3E%3Ccircle cx='12' cy='12' r='10' fill='%23f6851b'/%3E%3C/svg%3E";
    const announce = () => {
      for (const { w, provider } of providers) {
        window.dispatchEvent(new CustomEvent("eip6963:announceProvider", {
          detail: Object.freeze({ info: { uuid: "uuid-" + w.index, name: w.name, icon, rdns: "test.wallet" + w.index }, provider }),
        }));
      }
    };
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
  })();`);
  return { signed };
}
