import { useEffect, useState } from "preact/hooks";
import { discoverWallets, injectedWallet, type BrowserWallet } from "./wallet-discovery";
import type { WalletProof } from "./wallet-sign-in";

const NO_WALLET =
  "No wallet was found in this browser. Install a wallet extension such as MetaMask, Rabby or Coinbase Wallet and reload this page, or open it in your wallet app's browser.";

/**
 * "Continue with a wallet": the wallets this browser has (EIP-6963, else window.ethereum),
 * a choice when there are several, then the wallet's signature of a sign-in message, handed
 * to `onProof` (sign in, or add the wallet to the account).
 */
export function WalletPicker(props: {
  label: string;
  primary?: boolean;
  /** As wide as its container (the login card). */
  wide?: boolean;
  disabled?: boolean;
  onProof: (proof: WalletProof) => Promise<void>;
  onError: (message: string | null) => void;
}) {
  const [wallets, setWallets] = useState<BrowserWallet[]>([]);
  const [choosing, setChoosing] = useState(false);
  const [waiting, setWaiting] = useState<string | null>(null);
  useEffect(() => discoverWallets(setWallets), []);

  async function use(wallet: BrowserWallet) {
    setChoosing(false);
    setWaiting(`Waiting for ${wallet.name}: approve the request there.`);
    props.onError(null);
    try {
      // The signing code (and its Keccak) loads only now.
      const { proveWallet } = await import("./wallet-sign-in");
      await props.onProof(await proveWallet(wallet.provider));
    } catch (err) {
      props.onError(err instanceof Error ? err.message : String(err));
    } finally {
      setWaiting(null);
    }
  }

  function start() {
    const all = wallets.length > 0 ? wallets : [injectedWallet()].filter((w) => w !== undefined);
    if (all.length === 0) return props.onError(NO_WALLET);
    if (all.length === 1) return void use(all[0]!);
    props.onError(null);
    setChoosing(true);
  }

  return (
    <div class="stack">
      <button class={`button${props.wide ? " wide" : ""}${props.primary ? " primary" : ""}`} type="button" onClick={start} disabled={props.disabled || waiting !== null}>
        <span class="wallet-glyph" aria-hidden="true" />
        {props.label}
      </button>
      {choosing && (
        <ul class="wallet-list" aria-label="Wallets in this browser">
          {wallets.map((w) => (
            <li key={w.id}>
              <button type="button" class={`button wallet-choice${props.wide ? " wide" : ""}`} onClick={() => void use(w)}>
                {w.icon ? <img src={w.icon} alt="" width="24" height="24" /> : <span class="wallet-glyph" aria-hidden="true" />}
                {w.name}
              </button>
            </li>
          ))}
        </ul>
      )}
      {waiting && (
        <p role="status" class="muted">
          {waiting}
        </p>
      )}
    </div>
  );
}
