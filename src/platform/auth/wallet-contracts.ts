import { bytesToHex } from "./wallet-signature";

// Smart-contract wallets (Safe, Coinbase Smart Wallet, ERC-4337 accounts) do not sign with a
// key of their own: the contract says whether a signature is its own. ERC-1271 asks a
// deployed one (isValidSignature); ERC-6492 lets a wallet not deployed yet sign anyway, by
// wrapping its signature with the factory call that would deploy it, which the EIP's
// universal validator runs in a simulated call (eth_call of its creation code, no
// deployment). Both are read-only calls to an Ethereum node of the message's chain
// (WALLET_RPC_URL); no key or gas is involved.

/** The chain's node could not be asked (down, refusing, not answering): the signature may well be good. */
export class WalletRpcUnavailable extends Error {
  override name = "WalletRpcUnavailable";
}

/** bytes4(keccak256("isValidSignature(bytes32,bytes)")), which a contract returns to say yes. */
const ERC1271_MAGIC = "1626ba7e";
/** The 32 bytes an ERC-6492 signature ends with. */
const ERC6492_SUFFIX = "6492".repeat(16);
/**
 * The creation code of ERC-6492's ValidateSigOffchain (the EIP's reference implementation,
 * as viem ships it): constructed with (signer, hash, signature), it deploys the wallet if
 * the signature is wrapped, asks isValidSignature (or recovers an EOA's key) and returns one
 * byte, 0x01 for a valid signature.
 */
const UNIVERSAL_VALIDATOR = "0x608060405234801561001057600080fd5b506040516106ad3803806106ad83398101604081905261002f91610537565b600061003c848484610048565b9050806000526001601ff35b60007f649264926492649264926492649264926492649264926492649264926492649261007483610425565b036101e7576000606080848060200190518101906100929190610590565b60405192955090935091506000906001600160a01b038516906100b69085906105f6565b6000604051808303816000865af19150503d80600081146100f3576040519150601f19603f3d011682016040523d82523d6000602084013e6100f8565b606091505b50509050876001600160a01b03163b60000361016057806101605760405162461bcd60e51b815260206004820152601e60248201527f5369676e617475726556616c696461746f723a206465706c6f796d656e74000060448201526064015b60405180910390fd5b604051630b135d3f60e11b808252906001600160a01b038a1690631626ba7e90610190908b908790600401610612565b602060405180830381865afa1580156101ad573d6000803e3d6000fd5b505050506040513d601f19601f820116820180604052508101906101d1919061064c565b6001600160e01b0319161494505050505061041e565b6001600160a01b0384163b1561027a57604051630b135d3f60e11b808252906001600160a01b03861690631626ba7e906102279087908790600401610612565b602060405180830381865afa158015610244573d6000803e3d6000fd5b505050506040513d601f19601f82011682018060405250810190610268919061064c565b6001600160e01b03191614905061041e565b81516041146102df5760405162461bcd60e51b815260206004820152603a602482015260008051602061068d83398151915260448201527f3a20696e76616c6964207369676e6174757265206c656e6774680000000000006064820152608401610157565b6102e761043e565b5060208201516040808401518451859392600091859190811061030c5761030c610676565b016020015160f81c9050601b811480159061032b57508060ff16601c14155b1561038c5760405162461bcd60e51b815260206004820152603b602482015260008051602061068d83398151915260448201527f3a20696e76616c6964207369676e617475726520762076616c756500000000006064820152608401610157565b604080516000808252602082018084528a905260ff841692820192909252606081018590526080810184905260019060a0016020604051602081039080840390855afa1580156103e0573d6000803e3d6000fd5b5050604051601f1901519150506001600160a01b038116158015906104165750886001600160a01b0316816001600160a01b0316145b955050505050505b9392505050565b600060208251101561043657600080fd5b508051015190565b60405180606001604052806003906020820280368337509192915050565b6001600160a01b038116811461047157600080fd5b50565b634e487b7160e01b600052604160045260246000fd5b60005b838110156104a557818101518382015260200161048d565b50506000910152565b600082601f8301126104bf57600080fd5b81516001600160401b038111156104d8576104d8610474565b604051601f8201601f19908116603f011681016001600160401b038111828210171561050657610506610474565b60405281815283820160200185101561051e57600080fd5b61052f82602083016020870161048a565b949350505050565b60008060006060848603121561054c57600080fd5b83516105578161045c565b6020850151604086015191945092506001600160401b0381111561057a57600080fd5b610586868287016104ae565b9150509250925092565b6000806000606084860312156105a557600080fd5b83516105b08161045c565b60208501519093506001600160401b038111156105cc57600080fd5b6105d8868287016104ae565b604086015190935090506001600160401b0381111561057a57600080fd5b6000825161060881846020870161048a565b9190910192915050565b828152604060208201526000825180604084015261063781606085016020870161048a565b601f01601f1916919091016060019392505050565b60006020828403121561065e57600080fd5b81516001600160e01b03198116811461041e57600080fd5b634e487b7160e01b600052603260045260246000fdfe5369676e617475726556616c696461746f72237265636f7665725369676e6572";

export interface ContractWallets {
  /**
   * Whether the wallet contract at `address` on `chainId` accepts `signature` for
   * `hash`; "no-node" when no configured node serves that chain. Throws
   * WalletRpcUnavailable when the node cannot be asked.
   */
  accepts(address: string, hash: Uint8Array, signature: Uint8Array, chainId: number): Promise<boolean | "no-node">;
}

/** Contract wallet checks through the Ethereum JSON-RPC nodes at `urls` (one per chain; each is asked its chain id once). */
export function contractWallets(urls: string[], fetchImpl: typeof fetch = (input, init) => fetch(input, init)): ContractWallets {
  const chainOf = new Map<string, number>();
  let id = 0;
  const rpc = async (url: string, method: string, params: unknown[]): Promise<{ result?: string; reverted?: true }> => {
    let reply: { result?: unknown; error?: { code?: number; message?: string } };
    try {
      const res = await fetchImpl(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
        signal: AbortSignal.timeout(5000),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      reply = (await res.json()) as typeof reply;
    } catch (err) {
      throw new WalletRpcUnavailable(`the wallet's chain could not be asked (${new URL(url).host}: ${err instanceof Error ? err.message : err}); try again shortly`);
    }
    // A call that reverts is the contract's answer (no), not the node failing.
    if (reply.error) {
      if (reply.error.code === 3 || /revert/i.test(reply.error.message ?? "")) return { reverted: true };
      throw new WalletRpcUnavailable(`the wallet's chain answered an error (${new URL(url).host}: ${reply.error.message ?? reply.error.code}); try again shortly`);
    }
    if (typeof reply.result !== "string") throw new WalletRpcUnavailable(`the wallet's chain gave no result (${new URL(url).host}); try again shortly`);
    return { result: reply.result };
  };
  const nodeFor = async (chainId: number): Promise<string | undefined> => {
    for (const url of urls) {
      if (!chainOf.has(url)) {
        const { result } = await rpc(url, "eth_chainId", []);
        if (result === undefined || !/^0x[0-9a-fA-F]+$/.test(result)) throw new WalletRpcUnavailable(`${new URL(url).host} did not say which chain it serves; try again shortly`);
        chainOf.set(url, Number(BigInt(result)));
      }
      if (chainOf.get(url) === chainId) return url;
    }
    return undefined;
  };

  return {
    async accepts(address, hash, signature, chainId) {
      const url = await nodeFor(chainId);
      if (!url) return "no-node";
      const sig = bytesToHex(signature).slice(2);
      if (sig.endsWith(ERC6492_SUFFIX)) {
        const data = `${UNIVERSAL_VALIDATOR}${word(address.slice(2))}${word(hex(hash))}${word("60")}${dynamic(sig)}`;
        const { result } = await rpc(url, "eth_call", [{ data }, "latest"]);
        return result !== undefined && /^0x0*1$/.test(result);
      }
      const data = `0x${ERC1271_MAGIC}${word(hex(hash))}${word("40")}${dynamic(sig)}`;
      const { result } = await rpc(url, "eth_call", [{ to: address, data }, "latest"]);
      // No contract at the address answers "0x"; a contract that says no answers anything else.
      return result?.toLowerCase().startsWith(`0x${ERC1271_MAGIC}`) ?? false;
    },
  };
}

const hex = (bytes: Uint8Array) => bytesToHex(bytes).slice(2);
/** One ABI word: the hex left-padded to 32 bytes. */
const word = (hexDigits: string) => hexDigits.toLowerCase().padStart(64, "0");
/** ABI `bytes`: its length, then its bytes right-padded to a whole number of words. */
const dynamic = (hexDigits: string) => word((hexDigits.length / 2).toString(16)) + hexDigits.padEnd(Math.ceil(hexDigits.length / 64) * 64, "0");
