// Browser wallets, found as EIP-6963 asks: each installed wallet announces itself (name,
// icon, provider) when the page asks, so a person with several sees them all and picks one;
// a wallet too old for that is found the old way, as window.ethereum (EIP-1193).

/** An EIP-1193 provider: the one method a sign-in needs. */
export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
}

export interface BrowserWallet {
  id: string;
  name: string;
  /** A data: URI the wallet gave (EIP-6963), or none. */
  icon?: string;
  provider: Eip1193Provider;
}

interface AnnounceDetail {
  info: { uuid: string; name: string; icon: string; rdns: string };
  provider: Eip1193Provider;
}

/** Listens for wallets announcing themselves, asks them to, and reports the list as it grows; returns the stop. */
export function discoverWallets(onChange: (wallets: BrowserWallet[]) => void): () => void {
  const found = new Map<string, BrowserWallet>();
  const announced = (event: Event) => {
    const detail = (event as CustomEvent<AnnounceDetail>).detail;
    if (!detail?.info?.uuid || typeof detail.provider?.request !== "function") return;
    const icon = typeof detail.info.icon === "string" && detail.info.icon.startsWith("data:image/") ? detail.info.icon : undefined;
    found.set(detail.info.rdns || detail.info.uuid, { id: detail.info.uuid, name: detail.info.name || "Wallet", icon, provider: detail.provider });
    onChange([...found.values()]);
  };
  window.addEventListener("eip6963:announceProvider", announced);
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  return () => window.removeEventListener("eip6963:announceProvider", announced);
}

/** The legacy injected provider, when there is one and no wallet announced itself. */
export function injectedWallet(): BrowserWallet | undefined {
  const provider = (window as { ethereum?: Eip1193Provider }).ethereum;
  return provider && typeof provider.request === "function" ? { id: "injected", name: "Browser wallet", provider } : undefined;
}
